package campaign

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An eval-only cell with no config of its own is checked under the config
// of the cell it measures; a typo in a cell's set is still refused by name.
func TestValidateCellsEvalCellUsesItsSourcesConfig(t *testing.T) {
	cfg, err := filepath.Abs("../../configs/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir("../..") // the configs name their files from the repository root
	spec, err := Load("configs/packages/campaign.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := spec.ValidateCells(nil); err != nil {
		t.Fatalf("configs/packages/campaign.yaml: %v", err)
	}
	dir := t.TempDir()
	body := "name: typo\ncells:\n  - name: a\n    config: " + cfg + "\n    set: {train.num_epoch: 2}\n  - name: b\n    eval: {from: a}\n"
	p := filepath.Join(dir, "campaign.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if spec, err = Load(p); err != nil {
		t.Fatal(err)
	}
	err = spec.ValidateCells(nil)
	if err == nil || !strings.Contains(err.Error(), "cell a:") || !strings.Contains(err.Error(), "train.num_epoch") {
		t.Fatalf("ValidateCells = %v, want cell a's unknown key train.num_epoch", err)
	}
}
