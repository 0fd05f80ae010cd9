package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/internal/agentinstall"
	"github.com/skillfleet/skillfleet/pkg/nightly"
)

// codexStandIn is a stand-in Codex CLI for `sleep run --target-backend
// codex_exec`: it appends its first argument and its working directory
// to calls.log beside itself, then ends its turn with a reply that names
// no answer.
const codexStandIn = `log="$(dirname "$0")/calls.log"
echo "CALL: $1 in $PWD" >>"$log"
echo '{"type":"thread.started","thread_id":"t1"}'
echo '{"type":"item.completed","item":{"type":"agent_message","text":"I could not tell."}}'
echo '{"type":"turn.completed","usage":{"input_tokens":50,"output_tokens":5}}'`

// TestSleepInstallCarriesTheReplayTarget: `sleep install codex` takes
// sleep run's replay-target flags and writes them, shell-quoted, into the
// installed script's run (and schedule): the program path given relative
// to the working directory made absolute, an option value holding a
// quote, spaces and command substitutions kept literal. Running the
// installed script in a project runs a night (the researcher persona on
// the sim backend) whose replays go through that stand-in Codex, which
// runs in the option's work_root as given, and the script's status after
// it (which takes no target flags) still works.
func TestSleepInstallCarriesTheReplayTarget(t *testing.T) {
	t.Parallel()
	home, state, tmp := t.TempDir(), t.TempDir(), t.TempDir()
	_, dir := standInAgent(t, "codex", "codex-cli 0.169.0", codexStandIn)
	// A directory name with a space and a quote, named relative to the
	// install's working directory.
	sub := filepath.Join(dir, "agent's bin")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "codex"), filepath.Join(sub, "codex")); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(sub, "codex")
	// The agents' work root: a directory whose name holds a quote, spaces
	// and command substitutions that would create "pwned" in the project.
	workRoot := filepath.Join(tmp, "work root's $(touch pwned) `touch pwned`")
	if err := os.Mkdir(workRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	install := exec.Command(binary, "sleep", "install", "codex", "--home", home, "--state-dir", state,
		"--persona", "researcher", "--backend", "sim", "--model", "sim-target",
		"--target-backend", "codex_exec", "--codex-exec-path", filepath.Join("agent's bin", "codex"),
		"--target-option", "sandbox=none", "--target-option", "work_root="+workRoot,
		"--target-timeout", "30s", "--target-max-retries", "-1")
	install.Dir = dir
	install.Env = agentEnv(home, tmp)
	out, err := install.CombinedOutput()
	if err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "its nights replay with: --target-backend codex_exec --codex-exec-path "+bin) {
		t.Errorf("install's output does not say which target the nights replay with:\n%s", out)
	}
	codexDir, _ := agentinstall.Dir(agentinstall.Codex, home)
	script := filepath.Join(codexDir, "scripts", agentinstall.Name)
	text := string(readFile(t, script))
	for _, want := range []string{
		"--target-backend codex_exec --codex-exec-path '" + strings.ReplaceAll(bin, "'", `'\''`) + "'",
		"--target-option 'sandbox=none' --target-option 'work_root=" + strings.ReplaceAll(workRoot, "'", `'\''`) + "'",
		"--target-timeout 30s --target-max-retries -1",
		"replay run --project",
		"replay schedule --project",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("installed script has no %q:\n%s", want, text)
		}
	}

	// The installed script, run in a project, runs a night through the
	// stand-in.
	proj := filepath.Join(home, "work", "app")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	run := exec.Command(script, "run")
	run.Dir = proj
	run.Env = agentEnv(home, tmp)
	out, err = run.CombinedOutput()
	if err != nil {
		t.Fatalf("%s run: %v\n%s", script, err, out)
	}
	if strings.Contains(string(out), "flag provided but not defined") || !strings.Contains(string(out), "staged:") {
		t.Fatalf("%s run: want a staged night and its status:\n%s", script, out)
	}
	calls := string(readFile(t, filepath.Join(sub, "calls.log")))
	if !strings.Contains(calls, "CALL: exec in "+workRoot+"/skillfleet-exec-") {
		t.Fatalf("the stand-in's log %q: want its exec calls in the work root %q", calls, workRoot)
	}
	if _, err := os.Stat(filepath.Join(proj, "pwned")); err == nil {
		t.Fatal("a command substitution in the option ran")
	}
	staged, err := nightly.Latest(stagingRoot(state))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("night staged %s; the stand-in ran %d times", staged, strings.Count(calls, "CALL: exec"))
}

// TestSleepInstallRefusesSecretTargetFlags: a target flag that would
// write a key into the installed script (an option named as a key, a
// secret-shaped value, a URL with credentials) is refused (exit 2, the
// value not shown), and nothing is installed; a variable's name is fine.
func TestSleepInstallRefusesSecretTargetFlags(t *testing.T) {
	t.Parallel()
	const key = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--target-option", "api_key=hunter2-plain"}, "option api_key names a secret"},
		{[]string{"--target-option", "env=" + key}, "looks like a secret"},
		{[]string{"--target-base-url", "https://me:" + "pw1234@llm.example/v1"}, "carries credentials"},
		{[]string{"--backend", key}, "looks like a secret"},
	} {
		home := t.TempDir()
		args := append([]string{"sleep", "install", "codex", "--home", home, "--skillfleet", binary, "--target-backend", "codex_exec"}, tc.args...)
		code, out, errOut := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d saying %q", tc.args, code, errOut, exitUsage, tc.want)
		}
		if strings.Contains(out+errOut, key) || strings.Contains(out+errOut, "hunter2") || strings.Contains(out+errOut, "pw1234") {
			t.Errorf("%v: the refusal shows the secret: %s %s", tc.args, out, errOut)
		}
		if d, _ := agentinstall.Dir(agentinstall.Codex, home); fileExists(d) {
			t.Errorf("%v: installed %s anyway", tc.args, d)
		}
	}
	home := t.TempDir()
	if code, out, errOut := runCLI(t, "sleep", "install", "codex", "--home", home, "--skillfleet", binary,
		"--target-backend", "codex_exec", "--target-api-key-env", "MY_CODEX_KEY", "--target-option", "api_key_env=MY_CODEX_KEY"); code != exitOK {
		t.Fatalf("a key's variable name: exit %d\n%s%s", code, out, errOut)
	}
}

// TestSleepScheduleCarriesTheReplayTarget: `sleep schedule` takes the
// target flags and writes them into the scheduled night (the program path
// made absolute); a secret among them is refused.
func TestSleepScheduleCarriesTheReplayTarget(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	table := filepath.Join(dir, "table")
	prog := filepath.Join(dir, "crontab")
	script := "#!/bin/sh\nT=" + table + "\nif [ \"$1\" = -l ]; then [ -f \"$T\" ] || { echo 'no crontab for tester' >&2; exit 1; }; cat \"$T\"; exit 0; fi\nif [ \"$1\" = - ]; then cat > \"$T\"; exit 0; fi\nexit 2\n"
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	code, out, errOut := runCLI(t, "sleep", "schedule", "--crontab", prog, "--backend", "sim", "--project", dir, "--state-dir", dir,
		"--target-backend", "claude_code_exec", "--claude-code-exec-path", "bin/claude", "--target-timeout", "2m")
	if code != exitOK {
		t.Fatalf("schedule exit %d: %s %s", code, out, errOut)
	}
	want := "--target-backend claude_code_exec --claude-code-exec-path " + filepath.Join(wd, "bin", "claude") + " --target-timeout 2m0s"
	if b, _ := os.ReadFile(table); !strings.Contains(string(b), want) {
		t.Fatalf("crontab:\n%s\nwant %q", b, want)
	}
	if code, _, errOut := runCLI(t, "sleep", "schedule", "--crontab", prog, "--backend", "sim", "--project", dir, "--state-dir", dir,
		"--target-backend", "codex_exec", "--target-option", "token=abc"); code != exitUsage || !strings.Contains(errOut, "option token names a secret") {
		t.Fatalf("a secret option: exit %d %s", code, errOut)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
