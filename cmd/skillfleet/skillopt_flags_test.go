package main

import (
	"bytes"
	"flag"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSkillOptArgs: SkillOpt's flat flags become --set KEY=VALUE with the
// keys scripts/train.py and eval_only.py map them to, in either form
// (--flag value, --flag=value); --cfg-options takes every override that
// follows; skillfleet's own flags and unknown flags are left as they are.
func TestSkillOptArgs(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.String("config", "", "")
	fs.Int("workers", 0, "")
	in := []string{"--config", "c.yaml", "--target_model", "gpt-5.4-mini", "--num_epochs=2", "--edit_budget", "4",
		"--azure_openai_auth_mode", "azure_cli", "--target_qwen_chat_max_tokens", "512", "--split_dir", "/d",
		"--workers", "3", "--cfg-options", "train.seed=3", "gradient.minibatch_size=2", "--env", "searchqa", "--no_such", "x"}
	want := []string{"--config", "c.yaml", "--set", "model.target=gpt-5.4-mini", "--set", "train.num_epochs=2", "--set", "optimizer.learning_rate=4",
		"--set", "model.azure_openai_auth_mode=azure_cli", "--set", "model.target_qwen_chat_max_tokens=512", "--set", "env.split_dir=/d",
		"--workers", "3", "--set", "train.seed=3", "--set", "gradient.minibatch_size=2", "--set", "env.name=searchqa", "--no_such", "x"}
	if got := skillOptArgs(fs, in); !slices.Equal(got, want) {
		t.Errorf("skillOptArgs =\n%q\nwant\n%q", got, want)
	}
	if got := skillOptArgs(fs, []string{"--", "--num_epochs", "2"}); !slices.Equal(got, []string{"--", "--num_epochs", "2"}) {
		t.Errorf("after --: %q", got)
	}
}

// TestSkillOptFlatFlagsTrain: `skillfleet train` with SkillOpt's flat
// flags plans the same run as with the --set keys they map to (the
// estimate, which calls nothing, shows the plan), not the config's own;
// a misspelled flat flag is refused.
func TestSkillOptFlatFlagsTrain(t *testing.T) {
	root := repoRoot(t)
	cfg := filepath.Join(root, "configs", "demo.yaml")
	seed := "env.skill_init=" + filepath.Join(root, "configs", "skills", "sim_demo_seed.md")
	estimate := func(args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := run(append([]string{"train", "--config", cfg, "--estimate", "--set", seed}, args...), &stdout, &stderr); code != exitOK {
			t.Fatalf("train --estimate %v: exit %d\n%s", args, code, stderr.String())
		}
		return stdout.String()
	}
	flat := estimate("--num_epochs", "1", "--batch_size=10", "--cfg-options", "gradient.minibatch_size=2")
	set := estimate("--set", "train.num_epochs=1", "--set", "train.batch_size=10", "--set", "gradient.minibatch_size=2")
	if flat != set {
		t.Errorf("flat flags plan differs from --set:\n%s\n---\n%s", flat, set)
	}
	if !strings.Contains(flat, "1 epochs × batch 10") || flat == estimate() {
		t.Errorf("flat flags did not change the plan:\n%s", flat)
	}
	var stderr bytes.Buffer
	if code := run([]string{"train", "--config", cfg, "--estimate", "--set", seed, "--num_epochz", "1"}, io.Discard, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "num_epochz") {
		t.Errorf("misspelled flat flag: exit %d, %q", code, stderr.String())
	}
}
