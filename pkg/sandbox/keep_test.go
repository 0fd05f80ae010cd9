package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteEntries: directories and regular files are written; a link, a
// file too large to collect and a name outside dir are skipped, named.
func TestWriteEntries(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	n, skipped, err := WriteEntries(dir, map[string]*Entry{
		"sub":          {Name: "sub", Type: "dir"},
		"sub/a.txt":    {Name: "sub/a.txt", Type: "file", Data: []byte("a")},
		"link":         {Name: "link", Type: "symlink"},
		"big.bin":      {Name: "big.bin", Type: "file", TooLarge: true},
		"../escape.sh": {Name: "../escape.sh", Type: "file", Data: []byte("x")},
	})
	if err != nil {
		t.Fatalf("WriteEntries = %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "sub", "a.txt")); err != nil || string(b) != "a" || n != 1 {
		t.Errorf("sub/a.txt = %q, %v; %d files written, want 1", b, err, n)
	}
	got := strings.Join(skipped, ", ")
	for _, want := range []string{"link (symlink)", "big.bin (too large)", "../escape.sh (outside)"} {
		if !strings.Contains(got, want) {
			t.Errorf("skipped %q lacks %q", got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escape.sh")); err == nil {
		t.Error("an entry was written outside dir")
	}
}
