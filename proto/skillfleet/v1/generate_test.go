package skillfleetv1_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	out := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "gen-proto.sh"), out)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen-proto.sh: %v\n%s", err, b)
	}
	for _, name := range []string{"skillfleet.pb.go", "skillfleet_grpc.pb.go"} {
		want, err := os.ReadFile(filepath.Join(root, "proto", "skillfleet", "v1", name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(out, "proto", "skillfleet", "v1", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(want, got) {
			t.Errorf("proto/skillfleet/v1/%s is stale: run scripts/gen-proto.sh and commit the result", name)
		}
	}
}
