package isolation

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDefaultAgents(t *testing.T) {
	t.Chdir(t.TempDir())
	if got := DefaultAgents(); got != "" {
		t.Errorf("without .tools/agents: %q, want none", got)
	}
	if err := os.MkdirAll(filepath.Join(".tools", "agents", "node_modules", ".bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, want := DefaultAgents(), filepath.Join(".tools", "agents"); got != want {
		t.Errorf("with installed CLIs: %q, want %q", got, want)
	}
}
