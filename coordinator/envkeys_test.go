package coordinator_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/coordinator"
)

// TestEnvKeysAreChecked: a misspelled env key is refused naming the file,
// the key and the likely one (env.* included, checked against the
// benchmark's own keys); every bad key of a file is reported at once; a
// known key loads.
func TestEnvKeysAreChecked(t *testing.T) {
	dir := t.TempDir()
	skill := filepath.Join(dir, "skill.md")
	if err := os.WriteFile(skill, []byte("# seed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "run.yaml")
	if err := os.WriteFile(cfg, []byte("env:\n  name: sim\n  preset: demo\n  skill_init: "+skill+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := coordinator.LoadConfig(cfg, nil); err != nil {
		t.Fatalf("a good config: %v", err)
	}
	_, err := coordinator.LoadConfig(cfg, []string{"env.scorerr=numeric", "env.presett=small"})
	if err == nil {
		t.Fatal("env.scorerr and env.presett loaded")
	}
	msg := err.Error()
	for _, want := range []string{"env.scorerr: unknown key for benchmark sim", "env.presett", "did you mean env.preset?", "it reads env.preset, env.seed"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if n := strings.Count(msg, "\n") + 1; n != 2 {
		t.Errorf("error has %d lines, want one per bad key (2):\n%s", n, msg)
	}
	// A jsonl config: its own keys are known, a misspelled one is not.
	data := filepath.Join(dir, "items.jsonl")
	if err := os.WriteFile(data, []byte(`{"id":"a","question":"q","answer":"1"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	j := filepath.Join(dir, "jsonl.yaml")
	if err := os.WriteFile(j, []byte("env:\n  name: jsonl\n  data_path: "+data+"\n  skill_init: "+skill+"\n  scorer: numeric\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := coordinator.LoadConfig(j, nil); err != nil {
		t.Fatalf("jsonl with env.scorer: %v", err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("env:\n  name: jsonl\n  data_path: "+data+"\n  skill_init: "+skill+"\n  scorerr: numeric\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := coordinator.LoadConfig(bad, nil); err == nil || !strings.Contains(err.Error(), "config: "+bad+": env.scorerr: unknown key for benchmark jsonl (did you mean env.scorer?)") {
		t.Errorf("jsonl env.scorerr in a file: %v", err)
	}
}

// TestSkillOptEnvKeys: SkillOpt's published LiveMath and OfficeQA configs
// load through the same check; LiveMath's use_theorem, use_sketch and
// shuffle_choices are honoured under skillfleet's names, OfficeQA's web
// search keys are warnings naming what to use instead.
func TestSkillOptEnvKeys(t *testing.T) {
	src, _ := filepath.Abs("../pkg/config/testdata/skillopt")
	dir := t.TempDir()
	for _, env := range []string{"livemathematicianbench", "officeqa"} {
		p := filepath.Join(dir, "skillopt", "envs", env, "skills", "initial.md")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("# skill\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	lm, err := coordinator.LoadConfig(filepath.Join(src, "livemathematicianbench", "default.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"include_theorem", "include_sketch", "permute_choices"} {
		if _, ok := lm.Env.Extra[k]; !ok {
			t.Errorf("livemath: env.%s not set from SkillOpt's key (extra %v)", k, lm.Env.Extra)
		}
	}
	for _, k := range []string{"use_theorem", "use_sketch", "shuffle_choices"} {
		if _, ok := lm.Env.Extra[k]; ok {
			t.Errorf("livemath: SkillOpt's env.%s left as well", k)
		}
	}
	oq, err := coordinator.LoadConfig(filepath.Join(src, "officeqa", "default.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var warned []string
	for _, w := range oq.Warnings {
		warned = append(warned, w.String())
	}
	// officeqa honours SkillOpt's search keys (env.search_mode and the
	// rest); data_dirs it reads as env.docs_dir.
	if all := strings.Join(warned, "\n"); !strings.Contains(all, "env.data_dirs") || !strings.Contains(all, "env.docs_dir") || strings.Contains(all, "env.search_") {
		t.Errorf("officeqa warnings:\n%s\nwant env.data_dirs named with env.docs_dir, and no search key warned", all)
	}
}
