package config_test

import (
	"path/filepath"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/config"
)

// TestShippedConfigsLoad loads every config in configs/ as `skillfleet
// train` would (from the repository root, where their relative paths
// point).
func TestShippedConfigsLoad(t *testing.T) {
	root, _ := filepath.Abs("../..")
	t.Chdir(root)
	files, _ := filepath.Glob("configs/*.yaml")
	if len(files) < 8 {
		t.Fatalf("found %d configs", len(files))
	}
	for _, f := range files {
		if filepath.Base(f) == "prices.yaml" {
			continue
		}
		c, err := config.Load(f, nil)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if c.Env.Name == "" {
			t.Errorf("%s: no env.name", f)
		}
	}
}
