package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	simbench "github.com/skillfleet/skillfleet/pkg/bench/sim"
)

func TestDataCheck(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sim")
	if err := simbench.WriteSplits(dir, simbench.PresetDemo, 3); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"data", "check", dir}, &stdout, &stderr); code != exitOK {
		t.Fatalf("data check exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"benchmark sim", "train ", "val ", "test ", "counts match the manifest"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// A split that lost an item no longer matches its manifest; the error
	// names the split and the file.
	items := filepath.Join(dir, "val", "items.json")
	data, err := os.ReadFile(items)
	if err != nil {
		t.Fatal(err)
	}
	var all []json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		t.Fatal(err)
	}
	data, _ = json.Marshal(all[:len(all)-1])
	if err := os.WriteFile(items, data, 0o644); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"data", "check", dir}, &stdout, &stderr); code == exitOK {
		t.Fatalf("truncated val accepted:\n%s", stdout.String())
	}
	if msg := stderr.String(); !strings.Contains(msg, "split val has") || !strings.Contains(msg, "manifest says") {
		t.Errorf("error = %q", msg)
	}

	// Unknown benchmark names are refused with the known ones listed.
	stderr.Reset()
	if code := run([]string{"data", "check", "--bench", "nosuch", dir}, &stdout, &stderr); code != exitUsage {
		t.Errorf("unknown bench exit %d", code)
	}
	if !strings.Contains(stderr.String(), "sim") {
		t.Errorf("error does not list known benchmarks: %s", stderr.String())
	}
}
