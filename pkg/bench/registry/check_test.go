package registry

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
)

func TestCheckDir(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "sim")
	if err := simbench.WriteSplits(dir, simbench.PresetDemo, 3); err != nil {
		t.Fatal(err)
	}
	c, err := CheckDir(dir, "", "")
	if err != nil {
		t.Fatalf("CheckDir(%s) = %v", dir, err)
	}
	if c.Benchmark != "sim" || !c.Manifest || !c.Counts {
		t.Errorf("CheckDir = benchmark %q, manifest %v, counts %v; want sim from the manifest, with counts", c.Benchmark, c.Manifest, c.Counts)
	}
	var out strings.Builder
	if err := c.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "counts match the manifest") {
		t.Errorf("WriteText:\n%s", out.String())
	}

	if _, err := CheckDir(dir, "nosuch", ""); !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), "known: alfworld") {
		t.Errorf("CheckDir(nosuch) = %v, want ErrUnknown listing the known ones", err)
	}

	// A split that lost an item no longer matches its manifest.
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
	if _, err := CheckDir(dir, "", ""); err == nil || !strings.Contains(err.Error(), "split val has") {
		t.Errorf("CheckDir(truncated val) = %v, want the split's count named", err)
	}
}
