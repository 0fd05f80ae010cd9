package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// setup writes files (name -> content) into a temp dir, plus a skill file
// at skill.md, and returns the dir. "$SKILL" in contents is replaced by the
// skill file's path.
func setup(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	skill := filepath.Join(dir, "skill.md")
	if err := os.WriteFile(skill, []byte("# Skill\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		content = strings.ReplaceAll(content, "$SKILL", skill)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// minimal is the least a runnable config needs.
const minimal = "env:\n  name: sim\n  skill_init: $SKILL\n"

var ignoreInternal = cmpopts.IgnoreUnexported(Config{}, Env{}, Secret{})

func mustLoad(t *testing.T, path string, overrides ...string) *Config {
	t.Helper()
	c, err := Load(path, overrides)
	if err != nil {
		t.Fatalf("Load(%s) = %v", path, err)
	}
	return c
}

func TestDefaultYAMLMatchesDefault(t *testing.T) {
	t.Parallel()
	base, err := filepath.Abs("../../configs/_base_/default.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := setup(t, map[string]string{"run.yaml": "_base_: " + base + "\n" + minimal})
	got := mustLoad(t, filepath.Join(dir, "run.yaml"))
	if len(got.Warnings) != 0 {
		t.Errorf("Warnings = %v, want none", got.Warnings)
	}

	want := Default()
	want.Env.Name = "sim"
	want.Env.SkillInit = filepath.Join(dir, "skill.md")
	opts := []cmp.Option{ignoreInternal, cmpopts.IgnoreFields(Config{}, "File", "Files", "Warnings")}
	if diff := cmp.Diff(want, got, opts...); diff != "" {
		t.Errorf("default.yaml differs from Default() (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{base, filepath.Join(dir, "run.yaml")}, got.Files); diff != "" {
		t.Errorf("Files (-want +got):\n%s", diff)
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	c := Default()
	tests := []struct {
		key  string
		got  any
		want any
	}{
		{"model.backend", c.Model.Backend, "azure_openai"},
		{"model.optimizer", c.Model.Optimizer, "gpt-5.5"},
		{"model.target", c.Model.Target, "gpt-5.5"},
		{"model.reasoning_effort", c.Model.ReasoningEffort, "medium"},
		{"model.rewrite_max_completion_tokens", c.Model.RewriteMaxCompletionTokens, 64000},
		{"model.timeout", c.Model.Timeout, 10 * time.Minute},
		{"model.max_retries", c.Model.MaxRetries, 3},
		{"model.azure_openai_api_version", c.Model.Azure.APIVersion, "2024-12-01-preview"},
		{"model.minimax_model", c.Model.MiniMax.Model, "MiniMax-M3"},
		{"model.claude_code_exec_max_thinking_tokens", c.Model.ClaudeCodeExecMaxThinkingTokens, 16384},
		{"train.num_epochs", c.Train.NumEpochs, 4},
		{"train.batch_size", c.Train.BatchSize, 40},
		{"train.accumulation", c.Train.Accumulation, 1},
		{"train.seed", c.Train.Seed, int64(42)},
		{"gradient.minibatch_size", c.Gradient.MinibatchSize, 8},
		{"gradient.merge_batch_size", c.Gradient.MergeBatchSize, 8},
		{"gradient.failure_only", c.Gradient.FailureOnly, false},
		{"optimizer.learning_rate", c.Optimizer.LearningRate, 4},
		{"optimizer.min_learning_rate", c.Optimizer.MinLearningRate, 2},
		{"optimizer.lr_scheduler", c.Optimizer.LRScheduler, "cosine"},
		{"optimizer.lr_control_mode", c.Optimizer.LRControlMode, "fixed"},
		{"optimizer.skill_update_mode", c.Optimizer.SkillUpdateMode, "patch"},
		{"optimizer.use_slow_update", c.Optimizer.UseSlowUpdate, true},
		{"optimizer.slow_update_samples", c.Optimizer.SlowUpdateSamples, 20},
		{"optimizer.longitudinal_pair_policy", c.Optimizer.LongitudinalPairPolicy, "mixed"},
		{"optimizer.use_meta_skill", c.Optimizer.UseMetaSkill, true},
		{"optimizer.use_skill_aware_reflection", c.Optimizer.UseSkillAwareReflection, false},
		{"optimizer.skill_aware_appendix_source", c.Optimizer.SkillAwareAppendixSource, "both"},
		{"optimizer.filter_rejected", c.Optimizer.FilterRejected, false},
		{"evaluation.use_gate", c.Evaluation.UseGate, true},
		{"evaluation.gate_metric", c.Evaluation.GateMetric, "hard"},
		{"evaluation.gate_mixed_weight", c.Evaluation.GateMixedWeight, 0.5},
		{"evaluation.semantic_density_weight", c.Evaluation.SemanticDensityWeight, 0.05},
		{"evaluation.leading_words", len(c.Evaluation.LeadingWords), 11},
		{"evaluation.eval_test", c.Evaluation.EvalTest, true},
		{"evaluation.early_stop", c.Evaluation.EarlyStop, true},
		{"evaluation.min_coverage", c.Evaluation.MinCoverage, 0.95},
		{"evaluation.gate_test", c.Evaluation.GateTest, "none"},
		{"evaluation.gate_alpha", c.Evaluation.GateAlpha, 0.2},
		{"evaluation.gate_repeats", c.Evaluation.GateRepeats, 1},
		{"env.split_mode", c.Env.SplitMode, "ratio"},
		{"env.split_ratio", c.Env.SplitRatio, "2:1:7"},
		{"env.split_seed", c.Env.SplitSeed, int64(42)},
		{"env.exec_timeout", c.Env.ExecTimeout, 120 * time.Second},
		{"env.max_completion_tokens", c.Env.MaxCompletionTokens, 16384},
		{"budget.max_tokens", c.Budget.MaxTokens, int64(0)},
		{"budget.max_wall", c.Budget.MaxWall, time.Duration(0)},
		{"runtime.workers", c.Runtime.Workers, runtime.NumCPU()},
		{"runtime.rollout_concurrency", c.Runtime.RolloutConcurrency, 24},
		{"runtime.optimizer_concurrency", c.Runtime.OptimizerConcurrency, 16},
		{"runtime.task_timeout", c.Runtime.TaskTimeout, 30 * time.Minute},
		{"runtime.max_deliveries", c.Runtime.MaxDeliveries, 5},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("Default() %s = %v, want %v", tt.key, tt.got, tt.want)
		}
	}
	if err := c.Validate(); err == nil || err.Error() != "config: env.name: required" {
		t.Errorf("Default().Validate() = %v, want env.name required", err)
	}
}

func TestInheritance(t *testing.T) {
	t.Parallel()
	dir := setup(t, map[string]string{
		"base/grand.yaml": `
train:
  batch_size: 10
  seed: 1
gradient:
  minibatch_size: 3
env:
  name: grand
  search:
    engine: offline
    timeout: 5
`,
		"mid/parent.yaml": `
_base_: ../base/grand.yaml
train.seed: 2
gradient:
  minibatch_size: 4
env.search.timeout: 9
`,
		"run.yaml": `
_base_: mid/parent.yaml
train:
  seed: 3
env:
  skill_init: $SKILL
`,
	})
	c := mustLoad(t, filepath.Join(dir, "run.yaml"))
	if c.Train.BatchSize != 10 || c.Train.Seed != 3 || c.Gradient.MinibatchSize != 4 || c.Env.Name != "grand" {
		t.Errorf("got batch_size %d seed %d minibatch_size %d name %q, want 10 3 4 grand",
			c.Train.BatchSize, c.Train.Seed, c.Gradient.MinibatchSize, c.Env.Name)
	}
	want := map[string]any{"engine": "offline", "timeout": 9}
	if diff := cmp.Diff(want, c.Env.Extra["search"]); diff != "" {
		t.Errorf("env.search (-want +got):\n%s", diff)
	}
	wantFiles := []string{filepath.Join(dir, "base/grand.yaml"), filepath.Join(dir, "mid/parent.yaml"), filepath.Join(dir, "run.yaml")}
	if diff := cmp.Diff(wantFiles, c.Files); diff != "" {
		t.Errorf("Files (-want +got):\n%s", diff)
	}
}

func TestFlatAndNestedPrecedence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, base, child string
	}{
		{"nested base, flat child", "train:\n  seed: 1\n", "train.seed: 2\n"},
		{"flat base, nested child", "train.seed: 1\n", "train:\n  seed: 2\n"},
		{"flat both", "train.seed: 1\n", "train.seed: 2\n"},
		{"nested both", "train:\n  seed: 1\n", "train:\n  seed: 2\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := setup(t, map[string]string{
				"base.yaml": tt.base + minimal,
				"run.yaml":  "_base_: base.yaml\n" + tt.child,
			})
			if got := mustLoad(t, filepath.Join(dir, "run.yaml")).Train.Seed; got != 2 {
				t.Errorf("train.seed = %d, want 2 (child wins)", got)
			}
		})
	}
}

func TestAnalystWorkersAlias(t *testing.T) {
	t.Parallel()
	dir := setup(t, map[string]string{
		"base.yaml": minimal + "gradient:\n  analyst_workers: 7\n",
		"a.yaml":    "_base_: base.yaml\n",
		"b.yaml":    "_base_: base.yaml\nruntime.optimizer_concurrency: 9\n",
		"c.yaml":    minimal + "runtime:\n  optimizer_concurrency: 3\n",
		"d.yaml":    "_base_: c.yaml\ngradient.analyst_workers: 5\n",
	})
	for name, want := range map[string]int{"a.yaml": 7, "b.yaml": 9, "d.yaml": 5} {
		if got := mustLoad(t, filepath.Join(dir, name)).Runtime.OptimizerConcurrency; got != want {
			t.Errorf("%s: optimizer_concurrency = %d, want %d", name, got, want)
		}
	}
	if got := mustLoad(t, filepath.Join(dir, "a.yaml"), "gradient.analyst_workers=11").Runtime.OptimizerConcurrency; got != 11 {
		t.Errorf("--set gradient.analyst_workers=11: optimizer_concurrency = %d, want 11", got)
	}
}

func TestOverrides(t *testing.T) {
	t.Parallel()
	dir := setup(t, map[string]string{"run.yaml": minimal + "train:\n  seed: 5\n"})
	c := mustLoad(t, filepath.Join(dir, "run.yaml"),
		"train.seed=7",
		"train.seed=8", // later wins
		"gradient.failure_only=yes",
		"evaluation.use_gate=False",
		"evaluation.gate_mixed_weight=0.25",
		"evaluation.leading_words=[MUST, NEVER]",
		"model.target=gpt-4o",
		"model.reasoning_effort=",
		"model.target_temperature=0",
		"model.timeout=90",
		"env.split_ratio=1:1:1",
		"env.name=123",
		"env.custom_flag=true",
		"env.custom_list=[a,b]",
		"env.nested={x: 1, y: two}",
	)
	checks := []struct {
		key       string
		got, want any
	}{
		{"train.seed", c.Train.Seed, int64(8)},
		{"gradient.failure_only", c.Gradient.FailureOnly, true},
		{"evaluation.use_gate", c.Evaluation.UseGate, false},
		{"evaluation.gate_mixed_weight", c.Evaluation.GateMixedWeight, 0.25},
		{"model.target", c.Model.Target, "gpt-4o"},
		{"model.reasoning_effort", c.Model.ReasoningEffort, ""},
		{"model.target_temperature", *c.Model.TargetTemperature, 0.0},
		{"model.timeout", c.Model.Timeout, 90 * time.Second},
		{"env.split_ratio", c.Env.SplitRatio, "1:1:1"},
		{"env.name", c.Env.Name, "123"},
		{"env.custom_flag", c.Env.Extra["custom_flag"], true},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %#v, want %#v", ch.key, ch.got, ch.want)
		}
	}
	if diff := cmp.Diff([]string{"MUST", "NEVER"}, c.Evaluation.LeadingWords); diff != "" {
		t.Errorf("leading_words (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]any{"a", "b"}, c.Env.Extra["custom_list"]); diff != "" {
		t.Errorf("env.custom_list (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"x": 1, "y": "two"}, c.Env.Extra["nested"]); diff != "" {
		t.Errorf("env.nested (-want +got):\n%s", diff)
	}
}

func TestCastOverride(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, tag, value string }{
		{"true", "!!bool", "true"},
		{"Yes", "!!bool", "true"},
		{"no", "!!bool", "false"},
		{"FALSE", "!!bool", "false"},
		{"42", "!!int", "42"},
		{"-3", "!!int", "-3"},
		{"0.5", "!!float", "0.5"},
		{"1e-3", "!!float", "1e-3"},
		{"inf", "!!str", "inf"},
		{"abc", "!!str", "abc"},
		{"2:1:7", "!!str", "2:1:7"},
		{"", "!!str", ""},
		{"null", "!!null", "null"},
	}
	for _, tt := range tests {
		n, err := castOverride("k", tt.in)
		if err != nil {
			t.Fatalf("castOverride(%q) = %v", tt.in, err)
		}
		if n.val.Tag != tt.tag || n.val.Value != tt.value {
			t.Errorf("castOverride(%q) = %s %q, want %s %q", tt.in, n.val.Tag, n.val.Value, tt.tag, tt.value)
		}
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	dir := setup(t, map[string]string{
		"run.yaml":           minimal,
		"unknown.yaml":       minimal + "train:\n  batch_sise: 4\n",
		"unknownsec.yaml":    minimal + "trian:\n  seed: 1\n",
		"toplevel.yaml":      minimal + "batch_size: 4\n",
		"flatunk.yaml":       minimal + "optimizer.learningrate: 3\n",
		"int.yaml":           minimal + "train:\n  batch_size: abc\n",
		"float.yaml":         minimal + "evaluation:\n  gate_mixed_weight: high\n",
		"bool.yaml":          minimal + "evaluation:\n  use_gate: maybe\n",
		"str.yaml":           minimal + "model:\n  target: {a: 1}\n",
		"list.yaml":          minimal + "evaluation:\n  leading_words: {a: 1}\n",
		"section.yaml":       minimal + "train: 5\n",
		"dur.yaml":           minimal + "model:\n  timeout: soon\n",
		"range.yaml":         minimal + "train:\n  batch_size: 99999999999999999999\n",
		"twice.yaml":         minimal + "train:\n  seed: 1\ntrain.seed: 2\n",
		"dupkey.yaml":        minimal + "train:\n  seed: 1\n  seed: 2\n",
		"syntax.yaml":        "train: [\n",
		"scalar.yaml":        "just text\n",
		"nobase.yaml":        "_base_: missing.yaml\n" + minimal,
		"basetype.yaml":      "_base_: [a]\n" + minimal,
		"cycle_a.yaml":       "_base_: cycle_b.yaml\n" + minimal,
		"cycle_b.yaml":       "_base_: cycle_a.yaml\n",
		"self.yaml":          "_base_: self.yaml\n",
		"enum.yaml":          minimal + "optimizer:\n  lr_scheduler: cosin\n",
		"mode.yaml":          minimal + "optimizer:\n  skill_update_mode: patchy\n",
		"backend.yaml":       minimal + "model:\n  backend: \"foo bar\"\n",
		"role.yaml":          minimal + "model:\n  optimizer_backend: cursor/exec\n",
		"batch0.yaml":        minimal + "train:\n  batch_size: 0\n",
		"accum.yaml":         minimal + "train:\n  accumulation: -1\n",
		"merge.yaml":         minimal + "gradient:\n  merge_batch_size: 1\n",
		"epochs.yaml":        minimal + "train.num_epochs: 0\n",
		"mixed.yaml":         minimal + "evaluation:\n  gate_mixed_weight: 1.5\n",
		"cover.yaml":         minimal + "evaluation:\n  min_coverage: 0\n",
		"alpha.yaml":         minimal + "evaluation:\n  gate_alpha: 1\n",
		"repeats.yaml":       minimal + "evaluation:\n  gate_repeats: 0\n",
		"lrnone.yaml":        minimal + "optimizer:\n  lr_control_mode: off\n",
		"minlr.yaml":         minimal + "optimizer:\n  min_learning_rate: 9\n",
		"ratio.yaml":         minimal + "env:\n  split_ratio: 2:1\n",
		"noname.yaml":        "env:\n  skill_init: $SKILL\n",
		"noskill.yaml":       "env:\n  name: sim\n",
		"missing_skill.yaml": "env:\n  name: sim\n  skill_init: nowhere/skill.md\n",
		"child_bad.yaml":     "_base_: run.yaml\ntrain:\n  batch_size: 0\n",
		"temp.yaml":          minimal + "model:\n  target_temperature: 3\n",
		"budget.yaml":        minimal + "budget:\n  max_usd: -1\n",
		"conc.yaml":          minimal + "runtime:\n  rollout_concurrency: 0\n",
		"aliastwice.yaml":    minimal + "gradient:\n  analyst_workers: 2\nruntime:\n  optimizer_concurrency: 3\n",
	})
	f := func(name string) string { return filepath.Join(dir, name) }
	tests := []struct {
		file      string
		overrides []string
		want      string
	}{
		{"absent.yaml", nil, "config: " + f("absent.yaml") + ": file not found"},
		{"unknown.yaml", nil, "config: " + f("unknown.yaml") + ": train.batch_sise: unknown key (did you mean train.batch_size?)"},
		{"unknownsec.yaml", nil, "config: " + f("unknownsec.yaml") + ": trian: unknown key"},
		{"toplevel.yaml", nil, "config: " + f("toplevel.yaml") + ": batch_size: unknown key (did you mean train.batch_size?)"},
		{"flatunk.yaml", nil, "config: " + f("flatunk.yaml") + ": optimizer.learningrate: unknown key (did you mean optimizer.learning_rate?)"},
		{"int.yaml", nil, "config: " + f("int.yaml") + `: train.batch_size: wrong type: want integer, got "abc"`},
		{"float.yaml", nil, "config: " + f("float.yaml") + `: evaluation.gate_mixed_weight: wrong type: want number, got "high"`},
		{"bool.yaml", nil, "config: " + f("bool.yaml") + `: evaluation.use_gate: wrong type: want boolean, got "maybe"`},
		{"str.yaml", nil, "config: " + f("str.yaml") + ": model.target: wrong type: want string, got a mapping"},
		{"list.yaml", nil, "config: " + f("list.yaml") + ": evaluation.leading_words: wrong type: want list, got a mapping"},
		{"section.yaml", nil, "config: " + f("section.yaml") + `: train: wrong type: want mapping, got "5"`},
		{"dur.yaml", nil, "config: " + f("dur.yaml") + `: model.timeout: wrong type: want duration (like "90s") or seconds, got "soon"`},
		{"range.yaml", nil, "config: " + f("range.yaml") + `: train.batch_size: wrong type: want integer, got "99999999999999999999"`},
		{"twice.yaml", nil, "config: " + f("twice.yaml") + ": train.seed: given twice"},
		{"dupkey.yaml", nil, "config: " + f("dupkey.yaml") + ": train.seed: given twice"},
		{"syntax.yaml", nil, "config: " + f("syntax.yaml") + ": invalid YAML: line 1: did not find expected node content"},
		{"scalar.yaml", nil, "config: " + f("scalar.yaml") + ": top level must be a mapping"},
		{"nobase.yaml", nil, "config: " + f("nobase.yaml") + ": _base_: file not found: " + f("missing.yaml")},
		{"basetype.yaml", nil, "config: " + f("basetype.yaml") + ": _base_: wrong type: want a file path, got a list"},
		{"cycle_a.yaml", nil, "config: " + f("cycle_b.yaml") + ": _base_: inheritance cycle: " + f("cycle_a.yaml") + " -> " + f("cycle_b.yaml") + " -> " + f("cycle_a.yaml")},
		{"self.yaml", nil, "config: " + f("self.yaml") + ": _base_: inheritance cycle: " + f("self.yaml") + " -> " + f("self.yaml")},
		{"enum.yaml", nil, "config: " + f("enum.yaml") + `: optimizer.lr_scheduler: unknown value "cosin" (want constant, linear, cosine or autonomous)`},
		{"mode.yaml", nil, "config: " + f("mode.yaml") + `: optimizer.skill_update_mode: unknown value "patchy" (want patch, rewrite_from_suggestions or full_rewrite_minibatch)`},
		// Which families exist is backends.CheckConfig's to say (backends/families_test.go); config checks their shape.
		{"backend.yaml", nil, "config: " + f("backend.yaml") + `: model.backend: invalid value "foo bar" (want a backend family such as azure_openai, openai_compatible, anthropic, codex_exec or sim)`},
		{"role.yaml", nil, "config: " + f("role.yaml") + `: model.optimizer_backend: invalid value "cursor/exec" (want a backend family such as openai_chat, openai_compatible, anthropic, claude_code_exec or sim)`},
		{"batch0.yaml", nil, "config: " + f("batch0.yaml") + ": train.batch_size: must be > 0, got 0"},
		{"accum.yaml", nil, "config: " + f("accum.yaml") + ": train.accumulation: must be > 0, got -1"},
		{"merge.yaml", nil, "config: " + f("merge.yaml") + ": gradient.merge_batch_size: must be >= 2, got 1"},
		{"epochs.yaml", nil, "config: " + f("epochs.yaml") + ": train.num_epochs: must be > 0, got 0"},
		{"mixed.yaml", nil, "config: " + f("mixed.yaml") + ": evaluation.gate_mixed_weight: must be in [0, 1], got 1.5"},
		{"cover.yaml", nil, "config: " + f("cover.yaml") + ": evaluation.min_coverage: must be in (0, 1], got 0"},
		{"alpha.yaml", nil, "config: " + f("alpha.yaml") + ": evaluation.gate_alpha: must be in (0, 1), got 1"},
		{"repeats.yaml", nil, "config: " + f("repeats.yaml") + ": evaluation.gate_repeats: must be > 0, got 0"},
		{"lrnone.yaml", nil, "config: " + f("lrnone.yaml") + ": optimizer.lr_control_mode: none is only valid with skill_update_mode full_rewrite_minibatch"},
		{"minlr.yaml", nil, "config: " + f("minlr.yaml") + ": optimizer.min_learning_rate: must be <= optimizer.learning_rate (4), got 9"},
		{"ratio.yaml", nil, "config: " + f("ratio.yaml") + `: env.split_ratio: want three positive integers like 2:1:7, got "2:1"`},
		{"noname.yaml", nil, "config: " + f("noname.yaml") + ": env.name: required"},
		{"noskill.yaml", nil, "config: " + f("noskill.yaml") + ": env.skill_init: required"},
		{"missing_skill.yaml", nil, "config: " + f("missing_skill.yaml") + ": env.skill_init: file not found: nowhere/skill.md"},
		{"child_bad.yaml", nil, "config: " + f("child_bad.yaml") + ": train.batch_size: must be > 0, got 0"},
		{"temp.yaml", nil, "config: " + f("temp.yaml") + ": model.target_temperature: must be in [0, 2], got 3"},
		{"budget.yaml", nil, "config: " + f("budget.yaml") + ": budget.max_usd: must be >= 0, got -1"},
		{"conc.yaml", nil, "config: " + f("conc.yaml") + ": runtime.rollout_concurrency: must be > 0, got 0"},
		{"aliastwice.yaml", nil, "config: " + f("aliastwice.yaml") + ": gradient.analyst_workers: given twice (also as runtime.optimizer_concurrency)"},
		// Overrides are reported as coming from --set.
		{"run.yaml", []string{"train.batch_size=abc"}, `config: --set: train.batch_size: wrong type: want integer, got "abc"`},
		{"run.yaml", []string{"train.batchsize=4"}, "config: --set: train.batchsize: unknown key (did you mean train.batch_size?)"},
		{"run.yaml", []string{"train.batch_size"}, "config: --set: train.batch_size: want section.key=value"},
		{"run.yaml", []string{"train..seed=1"}, "config: --set: train..seed: empty key segment"},
		{"run.yaml", []string{"train.batch_size=0"}, "config: --set: train.batch_size: must be > 0, got 0"},
		{"run.yaml", []string{"evaluation.gate_metric=median"}, `config: --set: evaluation.gate_metric: unknown value "median" (want hard, soft or mixed)`},
		{"run.yaml", []string{"evaluation.leading_words=[a"}, "config: --set: evaluation.leading_words: invalid value: line 1: did not find expected ',' or ']'"},
	}
	for _, tt := range tests {
		t.Run(tt.file+strings.Join(tt.overrides, ","), func(t *testing.T) {
			t.Parallel()
			_, err := Load(f(tt.file), tt.overrides)
			if err == nil {
				t.Fatalf("Load(%s, %q) = nil, want %q", tt.file, tt.overrides, tt.want)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("Load(%s, %q) =\n%s\nwant\n%s", tt.file, tt.overrides, got, tt.want)
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Errorf("Load(%s) error %T is not a *FieldError", tt.file, err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("Load(%s) error is not one line: %q", tt.file, err)
			}
		})
	}
}

func TestAliases(t *testing.T) {
	t.Parallel()
	tests := []struct {
		set  string
		get  func(*Config) string
		want string
	}{
		{"optimizer.skill_update_mode=edits", func(c *Config) string { return c.Optimizer.SkillUpdateMode }, ModePatch},
		{"optimizer.skill_update_mode=Rewrite", func(c *Config) string { return c.Optimizer.SkillUpdateMode }, ModeRewrite},
		{"optimizer.skill_update_mode=suggestions", func(c *Config) string { return c.Optimizer.SkillUpdateMode }, ModeRewrite},
		{"optimizer.skill_update_mode=rewrite_suggestions", func(c *Config) string { return c.Optimizer.SkillUpdateMode }, ModeRewrite},
		{"optimizer.skill_update_mode=full-rewrite", func(c *Config) string { return c.Optimizer.SkillUpdateMode }, ModeFullRewrite},
		{"optimizer.skill_update_mode=minibatch_full_rewrite", func(c *Config) string { return c.Optimizer.SkillUpdateMode }, ModeFullRewrite},
		{"optimizer.skill_update_mode=skill_rewrite_minibatch", func(c *Config) string { return c.Optimizer.SkillUpdateMode }, ModeFullRewrite},
		{"optimizer.lr_control_mode=manual", func(c *Config) string { return c.Optimizer.LRControlMode }, LRFixed},
		{"optimizer.lr_control_mode=scheduler", func(c *Config) string { return c.Optimizer.LRControlMode }, LRFixed},
		{"optimizer.lr_control_mode=auto", func(c *Config) string { return c.Optimizer.LRControlMode }, LRAutonomous},
		{"optimizer.lr_control_mode=optimizer", func(c *Config) string { return c.Optimizer.LRControlMode }, LRAutonomous},
		{"optimizer.longitudinal_pair_policy=default", func(c *Config) string { return c.Optimizer.LongitudinalPairPolicy }, "mixed"},
		{"optimizer.longitudinal_pair_policy=random", func(c *Config) string { return c.Optimizer.LongitudinalPairPolicy }, "mixed"},
		{"optimizer.longitudinal_pair_policy=all", func(c *Config) string { return c.Optimizer.LongitudinalPairPolicy }, "mixed"},
		{"optimizer.longitudinal_pair_policy=delta", func(c *Config) string { return c.Optimizer.LongitudinalPairPolicy }, "changed"},
		{"optimizer.longitudinal_pair_policy=change", func(c *Config) string { return c.Optimizer.LongitudinalPairPolicy }, "changed"},
		{"optimizer.longitudinal_pair_policy=10_01", func(c *Config) string { return c.Optimizer.LongitudinalPairPolicy }, "changed"},
		{"optimizer.longitudinal_pair_policy=01_10", func(c *Config) string { return c.Optimizer.LongitudinalPairPolicy }, "changed"},
		{"optimizer.longitudinal_pair_policy=stable", func(c *Config) string { return c.Optimizer.LongitudinalPairPolicy }, "unchanged"},
		{"optimizer.longitudinal_pair_policy=same", func(c *Config) string { return c.Optimizer.LongitudinalPairPolicy }, "unchanged"},
		{"optimizer.longitudinal_pair_policy=00_11", func(c *Config) string { return c.Optimizer.LongitudinalPairPolicy }, "unchanged"},
		{"evaluation.gate_metric=SOFT", func(c *Config) string { return c.Evaluation.GateMetric }, "soft"},
	}
	dir := setup(t, map[string]string{"run.yaml": minimal})
	for _, tt := range tests {
		c := mustLoad(t, filepath.Join(dir, "run.yaml"), tt.set)
		if got := tt.get(c); got != tt.want {
			t.Errorf("--set %s: got %q, want %q", tt.set, got, tt.want)
		}
	}
	// A YAML-file spelling of the pair-policy aliases that YAML reads as a number.
	dir = setup(t, map[string]string{"run.yaml": minimal + "optimizer:\n  longitudinal_pair_policy: 10_01\n"})
	if got := mustLoad(t, filepath.Join(dir, "run.yaml")).Optimizer.LongitudinalPairPolicy; got != "changed" {
		t.Errorf("longitudinal_pair_policy 10_01 in a file = %q, want changed", got)
	}
	// Full rewrite forces lr_control_mode none.
	c := mustLoad(t, filepath.Join(dir, "run.yaml"), "optimizer.skill_update_mode=full_rewrite", "optimizer.lr_control_mode=auto")
	if c.Optimizer.LRControlMode != LRNone {
		t.Errorf("full rewrite: lr_control_mode = %q, want none", c.Optimizer.LRControlMode)
	}
}

func TestRoleResolution(t *testing.T) {
	t.Parallel()
	tests := []struct {
		backend, opt, tgt string
		wantOpt, wantTgt  string
	}{
		{"azure_openai", "", "", "openai_chat", "openai_chat"},
		{"claude", "", "", "claude_chat", "claude_chat"},
		{"codex", "", "", "codex_exec", "codex_exec"},
		{"copilot", "", "", "copilot_chat", "copilot_chat"},
		{"openai_compatible", "openai_chat", "openai_chat", "openai_compatible", "openai_compatible"},
		{"cursor_exec", "", "", "openai_chat", "cursor_exec"},
		{"qwen_chat", "", "", "openai_chat", "qwen_chat"},
		{"minimax", "", "", "openai_chat", "minimax_chat"},
		{"sim", "", "", "sim", "sim"},
		{"claude", "anthropic", "", "anthropic", "claude_chat"}, // an explicit role wins
		{"Claude-Code-Exec", "", "", "openai_chat", "claude_code_exec"},
		{"gemini", "", "", "gemini", "gemini"}, // a label SkillOpt does not pair names one family for both roles
	}
	dir := setup(t, map[string]string{"run.yaml": minimal})
	for _, tt := range tests {
		c := mustLoad(t, filepath.Join(dir, "run.yaml"), "model.backend="+tt.backend,
			"model.optimizer_backend="+tt.opt, "model.target_backend="+tt.tgt)
		if c.Model.OptimizerBackend != tt.wantOpt || c.Model.TargetBackend != tt.wantTgt {
			t.Errorf("backend %s (%q, %q) -> (%s, %s), want (%s, %s)", tt.backend, tt.opt, tt.tgt,
				c.Model.OptimizerBackend, c.Model.TargetBackend, tt.wantOpt, tt.wantTgt)
		}
	}
}

// TestMiniMaxRoles: SkillOpt's MiniMax keys (shared and per role) reach a
// minimax_chat role through the OpenAI-compatible path; the key stays a
// Secret and its variable defaults to MINIMAX_API_KEY.
func TestMiniMaxRoles(t *testing.T) {
	t.Parallel()
	dir := setup(t, map[string]string{"run.yaml": minimal + `
model:
  backend: minimax
  optimizer_backend: minimax_chat
  minimax_region: cn_zh
  minimax_temperature: "0.2"
  minimax_max_tokens: "4000"
  target_minimax_base_url: https://mm.example/v1
  target_minimax_api_key: mm-target-key
  optimizer_minimax_base_url: ""
  optimizer_minimax_api_key: ""
`})
	c := mustLoad(t, filepath.Join(dir, "run.yaml"))
	tgt := c.Model.Role(RoleTarget)
	if tgt.Backend != "minimax_chat" || tgt.BaseURL != "https://mm.example/v1" || tgt.Model != "MiniMax-M3" ||
		tgt.APIKeyEnv != MiniMaxKeyEnv || tgt.APIKey.Reveal() != "mm-target-key" || tgt.MaxTokens != 4000 ||
		tgt.Temperature == nil || *tgt.Temperature != 0.2 {
		t.Errorf("Role(target) = %+v", tgt)
	}
	// The optimizer has no override: the region's URL, no key in the file.
	opt := c.Model.Role(RoleOptimizer)
	if opt.BaseURL != MiniMaxChinaURL || !opt.APIKey.IsZero() || opt.Model != "MiniMax-M3" {
		t.Errorf("Role(optimizer) = %+v", opt)
	}

	// skillfleet's own role keys win over SkillOpt's; a named model stays.
	c = mustLoad(t, filepath.Join(dir, "run.yaml"), "model.target_base_url=http://127.0.0.1:9/v1",
		"model.target_api_key_env=MY_MM_KEY", "model.target=MiniMax-Text-01", "model.minimax_region=global_en")
	tgt = c.Model.Role(RoleTarget)
	if tgt.BaseURL != "http://127.0.0.1:9/v1" || tgt.APIKeyEnv != "MY_MM_KEY" || tgt.Model != "MiniMax-Text-01" {
		t.Errorf("Role(target) with overrides = %+v", tgt)
	}
	if opt := c.Model.Role(RoleOptimizer); opt.BaseURL != MiniMaxGlobalURL {
		t.Errorf("global region URL = %q", opt.BaseURL)
	}
	// Other backends ignore the MiniMax keys.
	c = mustLoad(t, filepath.Join(dir, "run.yaml"), "model.backend=openai_compatible", "model.optimizer_backend=openai_compatible")
	if r := c.Model.Role(RoleTarget); r.BaseURL != "" || r.APIKeyEnv != "" || !r.APIKey.IsZero() || r.Model != "gpt-5.5" {
		t.Errorf("openai_compatible role took MiniMax keys: %+v", r)
	}
}

// TestSkillOptEnvNames: SkillOpt's env names read as skillfleet's.
func TestSkillOptEnvNames(t *testing.T) {
	t.Parallel()
	dir := setup(t, map[string]string{"run.yaml": minimal})
	for from, to := range map[string]string{"livemathematicianbench": "livemath", "spreadsheetbench": "spreadsheet", "searchqa": "searchqa"} {
		if c := mustLoad(t, filepath.Join(dir, "run.yaml"), "env.name="+from); c.Env.Name != to {
			t.Errorf("env.name %s read as %s, want %s", from, c.Env.Name, to)
		}
	}
}

func TestRole(t *testing.T) {
	t.Parallel()
	dir := setup(t, map[string]string{"run.yaml": minimal + `
model:
  backend: sim
  optimizer: opt-model
  target: tgt-model
  target_base_url: http://127.0.0.1:8089/v1
  target_api_key_env: SIM_KEY
  target_api_key: from-file
  target_temperature: 0.3
  target_max_tokens: 512
`})
	c := mustLoad(t, filepath.Join(dir, "run.yaml"))
	r := c.Model.Role(RoleTarget)
	if r.Backend != "sim" || r.Model != "tgt-model" || r.BaseURL != "http://127.0.0.1:8089/v1" || *r.Temperature != 0.3 || r.MaxTokens != 512 {
		t.Errorf("Role(target) = %+v", r)
	}
	env := map[string]string{"SIM_KEY": "from-env"}
	if got := r.Key(func(k string) string { return env[k] }).Reveal(); got != "from-env" {
		t.Errorf("Key with the variable set = %q, want from-env", got)
	}
	if got := r.Key(func(string) string { return "" }).Reveal(); got != "from-file" {
		t.Errorf("Key without the variable = %q, want from-file", got)
	}
	if o := c.Model.Role(RoleOptimizer); o.Model != "opt-model" || o.Temperature != nil || !o.APIKey.IsZero() {
		t.Errorf("Role(optimizer) = %+v", o)
	}
}

const secretConfig = minimal + `  search_api_key: env-secret-1
  search:
    auth_token: nested-secret-2
model:
  azure_openai_api_key: azure-secret-3
  optimizer_qwen_chat_api_key: qwen-secret-4
  minimax_api_key: minimax-secret-5
  target_api_key: target-secret-6
  azure_api_key: legacy-secret-7
  optimizer_minimax_api_key: minimax-secret-8
  target_minimax_api_key: minimax-secret-9
`

var secretValues = []string{"env-secret-1", "nested-secret-2", "azure-secret-3", "qwen-secret-4", "minimax-secret-5", "target-secret-6", "legacy-secret-7",
	"minimax-secret-8", "minimax-secret-9"}

func checkNoSecrets(t *testing.T, what, s string) {
	t.Helper()
	for _, v := range secretValues {
		if strings.Contains(s, v) {
			t.Errorf("%s contains secret %q:\n%s", what, v, s)
		}
	}
}

func TestSecrets(t *testing.T) {
	t.Parallel()
	// The legacy azure_api_key is read as azure_openai_api_key, so the
	// file sets the Azure key only for the optimizer role besides.
	dir := setup(t, map[string]string{"run.yaml": strings.Replace(secretConfig, "  azure_openai_api_key: azure-secret-3\n", "", 1) +
		"  optimizer_azure_openai_api_key: azure-secret-3\n"})
	c := mustLoad(t, filepath.Join(dir, "run.yaml"))

	if got := c.Model.TargetAPIKey.Reveal(); got != "target-secret-6" {
		t.Errorf("target_api_key = %q", got)
	}
	if got := c.Model.Azure.APIKey.Reveal(); got != "legacy-secret-7" {
		t.Errorf("azure_api_key (legacy) read as azure_openai_api_key = %q", got)
	}
	var warned []string
	for _, w := range c.Warnings {
		warned = append(warned, w.Field)
		if strings.Contains(w.String(), "\n") || !strings.HasPrefix(w.String(), "config: "+filepath.Join(dir, "run.yaml")+": ") {
			t.Errorf("warning %q is not one line naming the file", w.String())
		}
	}
	wantWarned := []string{"model.azure_api_key", "model.optimizer_azure_openai_api_key", "model.optimizer_qwen_chat_api_key",
		"model.minimax_api_key", "model.target_api_key", "model.azure_openai_api_key", "env.search_api_key", "env.search.auth_token",
		"model.optimizer_minimax_api_key", "model.target_minimax_api_key"}
	if diff := cmp.Diff(wantWarned, warned, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("warned fields (-want +got):\n%s", diff)
	}

	out, err := c.Resolved()
	if err != nil {
		t.Fatal(err)
	}
	checkNoSecrets(t, "Resolved()", string(out))
	if !strings.Contains(string(out), "azure_openai_api_key: '[redacted]'") {
		t.Errorf("Resolved() does not show the redacted key:\n%s", out)
	}
	js, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	checkNoSecrets(t, "json.Marshal", string(js))
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		checkNoSecrets(t, "fmt "+verb, fmt.Sprintf(verb, c))
		checkNoSecrets(t, "fmt "+verb+" of Model", fmt.Sprintf(verb, c.Model))
	}
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	log.Info("config", "cfg", c, "model", c.Model, "key", c.Model.TargetAPIKey, "extra", c.Env.Extra)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("config", "key", c.Model.TargetAPIKey, "extra", c.Env.Extra)
	checkNoSecrets(t, "slog", buf.String())
	if !strings.Contains(buf.String(), `"key":"[redacted]"`) {
		t.Errorf("slog output lacks the redacted key: %s", buf.String())
	}

	// The resolved file loads again; its redacted secrets read as unset.
	resolved := filepath.Join(dir, "resolved.yaml")
	if err := c.WriteResolved(resolved); err != nil {
		t.Fatal(err)
	}
	c2 := mustLoad(t, resolved)
	if len(c2.Warnings) != 0 {
		t.Errorf("reloaded resolved config warns: %v", c2.Warnings)
	}
	if !c2.Model.TargetAPIKey.IsZero() || c2.Env.Extra["search_api_key"].(Secret).Reveal() != "" {
		t.Errorf("reloaded secrets are not empty")
	}
	opts := []cmp.Option{ignoreInternal, cmpopts.IgnoreFields(Config{}, "File", "Files", "Warnings"),
		cmp.Comparer(func(a, b Secret) bool { return true })}
	if diff := cmp.Diff(c, c2, opts...); diff != "" {
		t.Errorf("resolved round trip (-before +after):\n%s", diff)
	}
}

func TestSecretFormatting(t *testing.T) {
	t.Parallel()
	s := NewSecret("hunter2")
	for _, got := range []string{s.String(), fmt.Sprint(s), fmt.Sprintf("%+v", s), fmt.Sprintf("%#v", s), fmt.Sprintf("%q", s)} {
		if strings.Contains(got, "hunter2") || !strings.Contains(got, Redacted) {
			t.Errorf("formatted secret = %q", got)
		}
	}
	if got := NewSecret("").String(); got != "" {
		t.Errorf("empty secret String() = %q, want empty", got)
	}
	if s.Reveal() != "hunter2" {
		t.Errorf("Reveal() = %q", s.Reveal())
	}
}

func TestWarnings(t *testing.T) {
	t.Parallel()
	dir := setup(t, map[string]string{"run.yaml": minimal + `
model:
  codex_exec_full_auto: true
  azure_endpoint: https://example.invalid
train:
  steps_per_epoch: 3
`})
	c := mustLoad(t, filepath.Join(dir, "run.yaml"))
	p := filepath.Join(dir, "run.yaml")
	want := []string{
		"config: " + p + ": model.azure_endpoint: legacy key, read as model.azure_openai_endpoint",
		"config: " + p + ": model.codex_exec_full_auto: deprecated and ignored",
		"config: " + p + ": train.steps_per_epoch: ignored: steps per epoch are derived from the train split",
	}
	var got []string
	for _, w := range c.Warnings {
		got = append(got, w.String())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Warnings (-want +got):\n%s", diff)
	}
	if c.Model.Azure.Endpoint != "https://example.invalid" {
		t.Errorf("azure_openai_endpoint = %q", c.Model.Azure.Endpoint)
	}
}

type searchOpts struct {
	Engine  string        `yaml:"engine"`
	Timeout time.Duration `yaml:"timeout"`
	Token   Secret        `yaml:"auth_token"`
}

type benchOpts struct {
	MaxToolTurns int        `yaml:"max_tool_turns"`
	DataDirs     []string   `yaml:"data_dirs"`
	UseTools     bool       `yaml:"use_local_tools"`
	APIKey       string     `yaml:"search_api_key"`
	Search       searchOpts `yaml:"search"`
	Untouched    string     `yaml:"untouched"`
}

func TestDecodeExtra(t *testing.T) {
	t.Parallel()
	dir := setup(t, map[string]string{
		"base.yaml": minimal + "  max_tool_turns: 24\n  data_dirs: [a, b]\n",
		"run.yaml": `_base_: base.yaml
env:
  use_local_tools: yes
  search_api_key: k1
  search:
    engine: offline
    timeout: 20
    auth_token: t1
`,
		"bad.yaml":  "_base_: base.yaml\nenv:\n  max_tool_turnz: 3\n",
		"bad2.yaml": "_base_: base.yaml\nenv:\n  search:\n    timeout: later\n",
	})
	c := mustLoad(t, filepath.Join(dir, "run.yaml"), "env.max_tool_turns=30")
	got := benchOpts{Untouched: "default"}
	if err := c.Env.DecodeExtra(&got); err != nil {
		t.Fatal(err)
	}
	want := benchOpts{MaxToolTurns: 30, DataDirs: []string{"a", "b"}, UseTools: true, APIKey: "k1",
		Search: searchOpts{Engine: "offline", Timeout: 20 * time.Second, Token: NewSecret("t1")}, Untouched: "default"}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b Secret) bool { return a.Reveal() == b.Reveal() })); diff != "" {
		t.Errorf("DecodeExtra (-want +got):\n%s", diff)
	}

	for file, msg := range map[string]string{
		"bad.yaml":  ": env.max_tool_turnz: unknown key (did you mean env.max_tool_turns?)",
		"bad2.yaml": `: env.search.timeout: wrong type: want duration (like "90s") or seconds, got "later"`,
	} {
		c := mustLoad(t, filepath.Join(dir, file))
		err := c.Env.DecodeExtra(&benchOpts{})
		if want := "config: " + filepath.Join(dir, file) + msg; err == nil || err.Error() != want {
			t.Errorf("DecodeExtra(%s) = %v, want %s", file, err, want)
		}
	}
	c = mustLoad(t, filepath.Join(dir, "run.yaml"), "env.max_tool_turns=many")
	if err := c.Env.DecodeExtra(&benchOpts{}); err == nil || err.Error() != `config: --set: env.max_tool_turns: wrong type: want integer, got "many"` {
		t.Errorf("DecodeExtra with a bad --set = %v", err)
	}

	// Extra set in Go (no file) decodes too; errors name only the key.
	env := Env{Extra: map[string]any{"max_tool_turns": 5, "search": map[string]any{"auth_token": NewSecret("t2")}}}
	var b benchOpts
	if err := env.DecodeExtra(&b); err != nil || b.MaxToolTurns != 5 || b.Search.Token.Reveal() != "t2" {
		t.Errorf("DecodeExtra of Go values = %v, %+v", err, b)
	}
	env.Extra["nope"] = 1
	if err := env.DecodeExtra(&b); err == nil || err.Error() != "config: env.nope: unknown key" {
		t.Errorf("DecodeExtra unknown Go key = %v", err)
	}
	if err := env.DecodeExtra(b); err == nil {
		t.Errorf("DecodeExtra(non-pointer) = nil, want an error")
	}
}

func TestBenchHash(t *testing.T) {
	t.Parallel()
	dir := setup(t, map[string]string{"run.yaml": minimal + "  custom: 1\n"})
	p := filepath.Join(dir, "run.yaml")
	h := mustLoad(t, p).BenchHash()
	if len(h) != 16 {
		t.Fatalf("BenchHash() = %q, want 16 hex digits", h)
	}
	same := [][]string{
		{"env.out_root=/tmp/x"},
		{"env.workers=64"},
		{"train.seed=9"},
		{"model.target=other"},
		{"runtime.workers=3"},
	}
	for _, o := range same {
		if got := mustLoad(t, p, o...).BenchHash(); got != h {
			t.Errorf("BenchHash with %v = %s, want unchanged %s", o, got, h)
		}
	}
	differ := [][]string{
		{"env.name=other"},
		{"env.limit=5"},
		{"env.custom=2"},
		{"env.max_turns=3"},
		{"env.exec_timeout=60"},
	}
	for _, o := range differ {
		if got := mustLoad(t, p, o...).BenchHash(); got == h {
			t.Errorf("BenchHash with %v unchanged, want a different hash", o)
		}
	}
}

func TestResolvedIsSchemaOrdered(t *testing.T) {
	t.Parallel()
	dir := setup(t, map[string]string{"run.yaml": minimal})
	out, err := mustLoad(t, filepath.Join(dir, "run.yaml")).Resolved()
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	last := -1
	for _, sec := range []string{"\nmodel:", "\ntrain:", "\ngradient:", "\noptimizer:", "\nevaluation:", "\nenv:", "\nbudget:", "\nruntime:"} {
		i := strings.Index(s, sec)
		if i <= last {
			t.Fatalf("section %q out of order in:\n%s", sec, s)
		}
		last = i
	}
	for _, want := range []string{"  timeout: 10m0s\n", "  optimizer_azure_openai_endpoint: \"\"\n", "  exec_timeout: 2m0s\n", "  lr_scheduler: cosine\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("Resolved() lacks %q", want)
		}
	}
}

// TestAllErrorsOfAFileAtOnce: a file with three mistakes in two sections
// is refused with all three, one line each, not only the first.
func TestAllErrorsOfAFileAtOnce(t *testing.T) {
	dir := t.TempDir()
	skill := filepath.Join(dir, "s.md")
	if err := os.WriteFile(skill, []byte("# s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "three.yaml")
	if err := os.WriteFile(p, []byte("env:\n  name: sim\n  skill_init: "+skill+"\ntrain:\n  num_epochz: 2\n  batch_size: lots\ngradient:\n  minibatch_sise: 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(p, nil)
	if err == nil {
		t.Fatal("loaded")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), err)
	}
	for _, want := range []string{"train.num_epochz: unknown key (did you mean train.num_epochs?)", "train.batch_size: wrong type", "gradient.minibatch_sise: unknown key (did you mean gradient.minibatch_size?)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q:\n%s", want, err)
		}
	}
}
