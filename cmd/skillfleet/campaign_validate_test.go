package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCampaignThirdCellTypoExitsBeforeAnyCall: a campaign of three cells
// whose third cell's config has a misspelled key exits 2 at once, naming
// the cell, the file and the key; the model behind every cell sees no
// request and no cell dir is made. A misspelled campaign key is one line
// in this project's words, not the YAML decoder's.
func TestCampaignThirdCellTypoExitsBeforeAnyCall(t *testing.T) {
	url, calls := countingSim(t)
	root := repoRoot(t)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := "_base_: " + filepath.Join(root, "configs", "demo.yaml") + "\nenv:\n  skill_init: " + filepath.Join(root, "configs", "skills", "sim_demo_seed.md") +
		"\nruntime:\n  sim_llm: false\nmodel:\n  target_base_url: " + url + "\n  optimizer_base_url: " + url + "\n"
	write("good.yaml", base)
	bad := write("typo.yaml", base+"train:\n  num_epochz: 2\n")
	spec := write("c.yaml", "name: typo\ncells:\n  - {name: first, config: good.yaml}\n  - {name: second, config: good.yaml, seed: 2}\n  - {name: third, config: typo.yaml}\n")
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	code := run([]string{"campaign", "--config", spec, "--out", out}, &stdout, &stderr)
	if code != exitUsage {
		t.Fatalf("exit %d, want %d\n%s", code, exitUsage, stderr.String())
	}
	msg := stderr.String()
	for _, want := range []string{"cell third", bad, "train.num_epochz", "did you mean train.num_epochs?"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "cell first") || strings.Contains(msg, "cell second") {
		t.Errorf("good cells named as bad: %s", msg)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("%d model calls before the error", n)
	}
	for _, c := range []string{"first", "second", "third"} {
		if _, err := os.Stat(filepath.Join(out, c)); err == nil {
			t.Errorf("cell dir %s made", c)
		}
	}

	badSpec := write("k.yaml", "name: k\nmax_active_runz: 2\ncells:\n  - {name: a, config: good.yaml}\n")
	stderr.Reset()
	if code := run([]string{"campaign", "--config", badSpec, "--out", out}, &stdout, &stderr); code != exitUsage {
		t.Errorf("bad campaign key: exit %d", code)
	}
	if msg := strings.TrimSpace(stderr.String()); !strings.Contains(msg, badSpec+": line 2: unknown key max_active_runz") || strings.Contains(msg, "\n") {
		t.Errorf("bad campaign key: %q", msg)
	}
}
