package bench_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/bench"
)

func writeSplit(t *testing.T, dir, split, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, split), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, split, "items.json"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadSplitDir(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(dir string)
		want  string // substring of the error; "" = success
	}{
		{"ok", func(d string) {
			writeSplit(t, d, "train", `[{"id":"a","task_type":"x"},{"id":2}]`)
			writeSplit(t, d, "val", `[{"id":"v"}]`)
			writeSplit(t, d, "test", `[{"id":"t"}]`)
		}, ""},
		{"missing val", func(d string) {
			writeSplit(t, d, "train", `[{"id":"a"}]`)
			writeSplit(t, d, "test", `[{"id":"t"}]`)
		}, "missing val/"},
		{"item without id", func(d string) {
			writeSplit(t, d, "train", `[{"id":"a"},{"question":"q"}]`)
			writeSplit(t, d, "val", `[{"id":"v"}]`)
			writeSplit(t, d, "test", `[{"id":"t"}]`)
		}, "train/items.json:1: missing id (other items have one"},
		{"overlap", func(d string) {
			writeSplit(t, d, "train", `[{"id":"a"}]`)
			writeSplit(t, d, "val", `[{"id":"a"}]`)
			writeSplit(t, d, "test", `[{"id":"t"}]`)
		}, "must not overlap"},
		{"not an array", func(d string) {
			writeSplit(t, d, "train", `{"id":"a"}`)
			writeSplit(t, d, "val", `[{"id":"v"}]`)
			writeSplit(t, d, "test", `[{"id":"t"}]`)
		}, "want a JSON array"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(dir)
			s, err := bench.LoadSplitDir(dir, bench.LoadOptions{})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("LoadSplitDir = %v", err)
				}
				if len(s.Train) != 2 || s.Train[1].ID != "2" || s.Train[0].TaskType != "x" {
					t.Errorf("train = %+v", s.Train)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("LoadSplitDir error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
