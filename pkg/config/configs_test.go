package config_test

import (
	"os"
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

// TestSkillOptConfigsLoad loads every config of SkillOpt's configs/ (copied
// unchanged into testdata/skillopt) from a directory laid out like a
// SkillOpt checkout. The two bases name no env (SkillOpt takes it from
// the command line); they get one as overrides.
func TestSkillOptConfigsLoad(t *testing.T) {
	src, _ := filepath.Abs("testdata/skillopt")
	files, _ := filepath.Glob(filepath.Join(src, "*", "*.yaml"))
	if len(files) != 8 {
		t.Fatalf("found %d SkillOpt configs, want 8", len(files))
	}
	dir := t.TempDir()
	for _, env := range []string{"alfworld", "docvqa", "livemathematicianbench", "officeqa", "searchqa", "spreadsheetbench"} {
		p := filepath.Join(dir, "skillopt", "envs", env, "skills", "initial.md")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("# skill\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	for _, f := range files {
		var sets []string
		if d := filepath.Base(filepath.Dir(f)); d == "_base_" || d == "features" {
			sets = []string{"env.name=searchqa", "env.skill_init=skillopt/envs/searchqa/skills/initial.md"}
		}
		c, err := config.Load(f, sets)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if c.Model.TargetBackend != "openai_chat" || c.Model.MiniMax.Model != "MiniMax-M3" {
			t.Errorf("%s: target backend %q, minimax model %q", f, c.Model.TargetBackend, c.Model.MiniMax.Model)
		}
		for _, w := range c.Warnings {
			t.Errorf("%s: unexpected warning %v", f, w)
		}
	}
}
