package skillfleetv1_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedCodeIsCurrent regenerates the Go code from the .proto files
// into a temp dir with the pinned plugins and compares it with the
// committed files.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("regenerates code with protoc; skipped with -short")
	}
	if _, err := exec.LookPath("protoc"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("protoc not found (apt-get install protobuf-compiler)")
		}
		t.Skip("protoc not found (apt-get install protobuf-compiler)")
	}
	// A test runs in its package's directory, three levels below the root.
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(wd, "..", "..", "..")
	out := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "gen-proto.sh"), out)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen-proto.sh: %v\n%s", err, b)
	}
	protoDir := filepath.Join(root, "proto")
	checked := 0
	err = filepath.WalkDir(protoDir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".pb.go") {
			return err
		}
		rel, _ := filepath.Rel(protoDir, path)
		want, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		got, err := os.ReadFile(filepath.Join(out, "proto", rel))
		if err != nil {
			t.Errorf("proto/%s: not generated from any .proto file (remove it or restore its source)", rel)
			return nil
		}
		if !bytes.Equal(want, got) {
			t.Errorf("proto/%s is stale: run scripts/gen-proto.sh and commit the result", rel)
		}
		checked++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 4 {
		t.Errorf("checked %d generated files, want every .pb.go (at least 4)", checked)
	}
}
