package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestProgressLinesWhenNotATerminal: the demo trained into a buffer (not
// a terminal) prints progress lines within its waves and the final
// promotion of the best skill.
func TestProgressLinesWhenNotATerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the demo")
	}
	root := repoRoot(t)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"train", "--config", filepath.Join(root, "configs", "demo.yaml"), "--out", filepath.Join(t.TempDir(), "run"), "--no-fsync",
		"--progress-every", "5ms", "--set", "env.skill_init=" + filepath.Join(root, "configs", "skills", "sim_demo_seed.md")}, &stdout, &stderr); code != exitOK {
		t.Fatalf("train exit %d\n%s", code, stderr.String())
	}
	out := stdout.String()
	if !strings.Contains(out, "elapsed, about") || !strings.Contains(out, "tokens=") {
		t.Errorf("no periodic progress line in:\n%s", out)
	}
	if !strings.Contains(out, "final: the final skill is promoted to best (selection 0.675 → 0.975)") {
		t.Errorf("the final promotion is not printed:\n%s", out)
	}
}
