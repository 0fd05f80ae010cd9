package sleep

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	simmodel "github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/pkg/nightly"
)

// resolve parses args as `sleep run` does and resolves the night.
func resolve(t *testing.T, args ...string) (Night, error) {
	t.Helper()
	var o Options
	fs := flag.NewFlagSet("sleep run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.Register(fs, true)
	if err := fs.Parse(append([]string{"--state-dir", t.TempDir(), "--project", t.TempDir()}, args...)); err != nil {
		t.Fatal(err)
	}
	n, _, err := o.Resolve(fs)
	return n, err
}

// TestSpecsAgentTarget: --target-backend codex_exec (or the config's
// target_backend) builds the target with train's role builder: the exec
// backend, the agent and its program, the options given, the skill's own
// name and the opened-files note; the optimizer stays --backend.
func TestSpecsAgentTarget(t *testing.T) {
	n, err := resolve(t, "--backend", "sim", "--model", "sim-target", "--target-backend", "codex_exec",
		"--codex-exec-path", "/opt/codex", "--target-option", "sandbox=none", "--target-option", "env=MY_VAR",
		"--target-timeout", "90s", "--target-max-retries", "-1", "--skill-dir", filepath.Join(t.TempDir(), "papers"))
	if err != nil {
		t.Fatal(err)
	}
	target, opt, err := Specs(n)
	if err != nil {
		t.Fatal(err)
	}
	o := target.GetOptions()
	if target.GetBackend() != "exec" || target.GetModel() != "sim-target" || o["agent"] != "codex" || o["bin"] != "/opt/codex" ||
		o["sandbox"] != "none" || o["env"] != "MY_VAR" || o["skill_name"] != "papers" || o["note_opened"] != "always" || o["stall_deadline"] != "off" ||
		target.GetTimeoutMs() != 90_000 || target.GetMaxRetries() != -1 {
		t.Errorf("target %v", target)
	}
	if opt.GetBackend() != "sim" || opt.GetModel() != "sim-target" {
		t.Errorf("optimizer %v: want the sim", opt)
	}
	// Without target_backend the target is --backend, as before.
	n, err = resolve(t, "--backend", "sim")
	if err != nil {
		t.Fatal(err)
	}
	if target, _, _ := Specs(n); target.GetBackend() != "sim" || target.GetModel() != "sim" || len(target.GetOptions()) != 0 {
		t.Errorf("plain target %v", target)
	}
}

// TestAgentTargetConfigKeys: the config file names the target as a
// training config's model section does; an unknown family is a usage
// error naming the file.
func TestAgentTargetConfigKeys(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	yaml := "backend: sim\ntarget_backend: claude_code_exec\nclaude_code_exec_path: /opt/claude\ntarget_timeout: 2m\n" +
		"target_base_url: http://127.0.0.1:1/v1\ntarget_options:\n  sandbox: bubblewrap\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := resolve(t, "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	target, _, err := Specs(n)
	if err != nil {
		t.Fatal(err)
	}
	if o := target.GetOptions(); o["agent"] != "claude" || o["bin"] != "/opt/claude" || o["sandbox"] != "bubblewrap" ||
		target.GetBaseUrl() != "http://127.0.0.1:1/v1" || target.GetTimeoutMs() != 120_000 {
		t.Errorf("target %v", target)
	}
	if err := os.WriteFile(cfg, []byte("backend: sim\ntarget_backend: claude_code\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = resolve(t, "--config", cfg)
	var ue UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), cfg) || !strings.Contains(err.Error(), `"claude_code"`) {
		t.Errorf("unknown target_backend: %v", err)
	}
}

// failingReplayer fails every replay of one task for infrastructure.
type failingReplayer struct {
	Replayer
	task string
}

func (f failingReplayer) Replay(ctx context.Context, r ReplayRequest) ([]Replay, error) {
	rs, err := f.Replayer.Replay(ctx, r)
	for i := range rs {
		if rs[i].TaskID == f.task {
			rs[i] = Replay{TaskID: f.task, Stage: r.Stage, Err: "OUTCOME_TIMEOUT: agent codex timed out after 3s;\nprocess group killed", Outcome: "OUTCOME_TIMEOUT"}
		}
	}
	return rs, err
}

// TestAgentFailureStopsConsolidation: with StopOnFailure (an agent CLI
// target) one replay that failed for infrastructure ends the night with
// an *AgentFailure naming it on one line, before any reflection; without
// it the replay is left out of the scores and the night goes on.
func TestAgentFailureStopsConsolidation(t *testing.T) {
	m := simmodel.NewSleepAware(simmodel.New(simmodel.Options{}))
	tasks := personaTasks(t, m)
	var val string
	for _, tk := range tasks {
		if tk.Split == nightly.SplitVal {
			val = tk.ID
			break
		}
	}
	rep := failingReplayer{Replayer: &LocalReplayer{Model: m, Name: "sim", Env: nightly.NewEnv(nightly.EnvConfig{})}, task: val}
	d := Deps{Replayer: rep, Optimizer: m, OptimizerName: "sim"}
	in := Input{Tasks: tasks, Skill: nightly.ScaffoldSkill(), Memory: nightly.ScaffoldMemory()}
	out, err := Consolidate(context.Background(), Settings{EvolveSkill: true, StopOnFailure: true}, d, in)
	var af *AgentFailure
	if !errors.As(err, &af) || af.TaskID != val || af.Stage != "baseline" || af.Outcome != "OUTCOME_TIMEOUT" ||
		strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "timed out after 3s; process group killed") {
		t.Fatalf("err %v: want an *AgentFailure of the baseline's task %s on one line", err, val)
	}
	if out.Accepted || len(out.Trials) != 0 {
		t.Fatalf("outcome %+v: a stopped night decides nothing", out)
	}
	out, err = Consolidate(context.Background(), Settings{EvolveSkill: true}, d, in)
	if err != nil || out.Baseline.Infra != 1 || len(out.Trials) == 0 {
		t.Fatalf("without StopOnFailure: %v, baseline %+v, %d trials: want the night to go on past the failed replay", err, out.Baseline, len(out.Trials))
	}
}

// TestMethodFlags: --preferences, --gate-mode, --scope, --target-task-filter
// and the dream and recall flags set their config keys; gate_mode off with
// auto-adopt, and an unknown scope, are usage errors naming the key.
func TestMethodFlags(t *testing.T) {
	n, err := resolve(t, "--backend", "sim", "--preferences", "British spelling", "--gate-mode", "off", "--scope", "all",
		"--target-task-filter=false", "--dream-rollouts", "3", "--dream-factor", "2", "--recall-k", "5")
	if err != nil {
		t.Fatal(err)
	}
	c := n.Config
	if c.Preferences != "British spelling" || c.GateMode != "off" || c.Scope != "all" || *c.TargetTaskFilter || c.DreamRollouts != 3 || c.DreamFactor != 2 || c.RecallK != 5 {
		t.Fatalf("config %+v", c)
	}
	if s := SettingsFromConfig(c); !s.GateOff || s.Preferences != "British spelling" || s.DreamRollouts != 3 {
		t.Fatalf("settings %+v", s)
	}
	if n.harvestProjects() != nil {
		t.Fatalf("scope all harvests %v", n.harvestProjects())
	}
	for args, want := range map[string]string{"--gate-mode off --auto-adopt": "auto_adopt", "--scope everywhere": "scope", "--dream-rollouts 9": "dream_rollouts"} {
		_, err := resolve(t, append([]string{"--backend", "sim"}, strings.Fields(args)...)...)
		var ue UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a usage error naming %s", args, err, want)
		}
	}
	// The filter applies to a skill the user named, not the managed one.
	skill := filepath.Join(t.TempDir(), "papers", "SKILL.md")
	if n, _ = resolve(t, "--backend", "sim", "--skill-path", skill); n.Config.TargetTaskFilter == nil {
		t.Fatal("target_task_filter unset")
	}
	if topic, ok := n.targetTopic(); !ok || topic.Name != "papers" {
		t.Fatalf("targetTopic of %s = %+v, %t", skill, topic, ok)
	}
	if n, _ = resolve(t, "--backend", "sim"); true {
		if _, ok := n.targetTopic(); ok {
			t.Fatal("the managed skill is filtered for")
		}
	}
}

// TestSpecsChatFamilyOptimizer: --backend claude_chat runs the miner,
// reflector and judge on Claude Code in chat mode, its program from
// --claude-code-exec-path: on the user's login without --base-url, and
// with --base-url and --optimizer-option user_login=true on the login at
// that endpoint. Such a night needs a replay target; a backend neither
// implemented nor a chat family is refused, naming the chat families.
func TestSpecsChatFamilyOptimizer(t *testing.T) {
	n, err := resolve(t, "--backend", "claude_chat", "--model", "sim-target", "--claude-code-exec-path", "/opt/claude",
		"--target-backend", "claude_code_exec")
	if err != nil {
		t.Fatal(err)
	}
	_, opt, err := Specs(n)
	if err != nil {
		t.Fatal(err)
	}
	o := opt.GetOptions()
	if opt.GetBackend() != "exec" || opt.GetModel() != "sim-target" || o["agent"] != "claude" || o["mode"] != "chat" || o["bin"] != "/opt/claude" ||
		o["user_login"] != "true" || o["stall_deadline"] != "off" || opt.GetBaseUrl() != "" {
		t.Errorf("optimizer %v", opt)
	}
	n, err = resolve(t, "--backend", "claude_chat", "--model", "sim-target", "--base-url", "http://127.0.0.1:9/v1",
		"--optimizer-option", "user_login=true", "--optimizer-option", "sandbox=none", "--target-backend", "claude_code_exec")
	if err != nil {
		t.Fatal(err)
	}
	if _, opt, err = Specs(n); err != nil || opt.GetBaseUrl() != "http://127.0.0.1:9/v1" || opt.GetOptions()["user_login"] != "true" || opt.GetOptions()["sandbox"] != "none" {
		t.Errorf("optimizer at an endpoint on the login %v, %v", opt, err)
	}
	n, err = resolve(t, "--backend", "claude_chat", "--model", "sim-target", "--base-url", "http://127.0.0.1:9/v1", "--target-backend", "claude_code_exec")
	if err != nil {
		t.Fatal(err)
	}
	if _, opt, _ = Specs(n); opt.GetOptions()["user_login"] != "" {
		t.Errorf("with --base-url alone the optimizer %v uses the login", opt)
	}
	n, err = resolve(t, "--backend", "codex_chat", "--model", "m")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Specs(n); err == nil || !strings.Contains(err.Error(), "--target-backend") {
		t.Errorf("a chat family without a replay target: %v", err)
	}
	if _, err := resolve(t, "--backend", "gemini_chat", "--model", "m"); err == nil || !strings.Contains(err.Error(), "claude_chat") {
		t.Errorf("an unknown backend: %v", err)
	}
}
