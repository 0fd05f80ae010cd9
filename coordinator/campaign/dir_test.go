package campaign

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/skillfleet/skillfleet/coordinator"
)

func TestParsePort(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{"": 0, "7000": 7000, " 7001 ": 7001, "7100-7199": 7100, "80-80": 80} {
		if got, err := ParsePort(in); err != nil || got != want {
			t.Errorf("ParsePort(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"0", "65536", "x", "7199-7100", "1-70000", "-5", "a-b"} {
		if got, err := ParsePort(in); err == nil {
			t.Errorf("ParsePort(%q) = %d, want an error", in, got)
		}
	}
}

func TestSpecNames(t *testing.T) {
	t.Parallel()
	s := &Spec{File: filepath.Join("x", "sweep.yaml")}
	if got := s.StateName(); got != "sweep" {
		t.Errorf("StateName without a name = %q, want the file's stem", got)
	}
	if got, want := s.DefaultDir(), filepath.Join("runs", "campaigns", "sweep"); got != want {
		t.Errorf("DefaultDir = %q, want %q", got, want)
	}
	s.Name = "named"
	if got := s.StateName(); got != "named" {
		t.Errorf("StateName = %q, want the spec's name", got)
	}
}

// TestOpenDir: one process per campaign dir, one per member name when
// members share it.
func TestOpenDir(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "camp")
	abs, unlock, err := OpenDir(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(abs, "cells")); err != nil || !fi.IsDir() {
		t.Fatalf("cells/ not made: %v", err)
	}
	if _, _, err := OpenDir(dir, ""); !errors.Is(err, coordinator.ErrLocked) {
		t.Fatalf("second OpenDir of a locked dir = %v, want ErrLocked", err)
	}
	unlock()
	_, unlockA, err := OpenDir(dir, "a")
	if err != nil {
		t.Fatal(err)
	}
	defer unlockA()
	_, unlockB, err := OpenDir(dir, "b")
	if err != nil {
		t.Fatalf("member b beside member a: %v", err)
	}
	defer unlockB()
	if _, _, err := OpenDir(dir, "a"); !errors.Is(err, coordinator.ErrLocked) {
		t.Fatalf("a second member a = %v, want ErrLocked", err)
	}
}

func TestWriteStart(t *testing.T) {
	t.Parallel()
	spec := &Spec{Name: "sweep", MaxActiveRuns: 2, Cells: []CellSpec{{Name: "a", Config: "a.yaml"}}}
	for member, want := range map[string]string{
		"":   "skillfleet: campaign sweep: 1 cells, up to 2 at once; FLEET; campaign dir /c\n",
		"m1": "skillfleet: campaign sweep: 1 cells, up to 2 at once in this process, member m1 of those sharing the campaign; FLEET; campaign dir /c\n",
	} {
		cfg := Config{Spec: spec, Dir: "/c", Member: member}
		if member != "" {
			cfg.Store, cfg.LeaseTTL = NewMemoryStore(), 1
		}
		c, err := New(cfg, Deps{Run: func(ctx context.Context, r CellRun) error { return nil }})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := c.WriteStart(&b, "FLEET"); err != nil || b.String() != want {
			t.Errorf("member %q: WriteStart = %q, %v; want %q", member, b.String(), err, want)
		}
	}
}
