package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/internal/agentinstall"
	"github.com/skillfleet/skillfleet/internal/testfs"
)

// TestSleepInstallHandoffRounds drives the loop Claude Code's
// /skillfleet-sleep-handoff command describes through the installed
// script, with the real binary: `bin/skillfleet-sleep handoff` exits 3
// with the pending line last, a test session answers every prompt of the
// pending.json that line names (as the simulated model would) into its
// answer file, and the same command runs again, until it exits 0 within
// the command's bound on rounds with an accepted night staged. The
// install's --backend sim gives way to the handoff backend. Then the
// script's adopt and adopt --undo, and uninstall leaves the home as it
// was.
func TestSleepInstallHandoffRounds(t *testing.T) {
	t.Parallel()
	home, tmp := t.TempDir(), t.TempDir()
	writeTestFile(t, filepath.Join(home, ".claude", "settings.json"), `{"theme":"dark"}`+"\n")
	proj := filepath.Join(home, "work", "app")
	writeTestFile(t, filepath.Join(proj, "README.md"), "the user's project\n")
	before := testfs.Tree(t, home)
	state := filepath.Join(tmp, "state")
	sf := skillfleetIn(t, binary, home, tmp)
	sf("sleep", "install", "claude-code", "--home", home, "--skillfleet", binary, "--state-dir", state, "--persona", "researcher", "--backend", "sim")
	dir, _ := agentinstall.Dir(agentinstall.ClaudeCode, home)
	script := filepath.Join(dir, "bin", agentinstall.Name)
	// run returns the exit code, stdout and then stderr.
	run := func(args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.Command(script, args...)
		cmd.Dir, cmd.Env = proj, agentEnv(home, tmp)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("%s %v: %v", script, args, err)
		}
		return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
	}

	sim, err := backends.New(context.Background(), backends.Spec{Backend: backends.BackendSim, Model: "sim"}, backends.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	rounds, answered := 0, 0
	var out, errOut string
	for code := 3; code == 3; {
		if rounds == agentinstall.HandoffRounds {
			t.Fatalf("the night still has prompts pending after %d rounds, the handoff command's bound:\n%s", rounds, tailLines(out, 10))
		}
		rounds++
		code, out, errOut = run("handoff")
		switch code {
		case 0:
		case 3:
			// The last line of stdout names pending.json.
			lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
			rest, ok := strings.CutPrefix(lines[len(lines)-1], "handoff: ")
			i := strings.Index(rest, " prompts pending: ")
			if !ok || i < 0 {
				t.Fatalf("round %d: exit 3, and stdout's last line is not the pending line: %q", rounds, lines[len(lines)-1])
			}
			batch, _ := readBatch(t, rest[i+len(" prompts pending: "):])
			for _, c := range batch.Pending {
				if err := os.WriteFile(c.AnswerFile, []byte(simAnswer(t, sim, c)), 0o600); err != nil {
					t.Fatal(err)
				}
				answered++
			}
		default:
			t.Fatalf("round %d: exit %d:\n%s%s", rounds, code, out, errOut)
		}
	}
	t.Logf("the handoff night finished in %d rounds, %d prompts answered:\n%s", rounds, answered, tailLines(out, 12))
	for _, want := range []string{"action: accept", "staged: ", "(estimated)"} {
		if !strings.Contains(out, want) {
			t.Errorf("the last round's output has no %q:\n%s", want, out)
		}
	}

	// Adopt and undo, through the script.
	if code, out, _ := run("adopt"); code != 0 || !strings.Contains(out, "adopted ") || !strings.Contains(out, "undo with: ") {
		t.Errorf("adopt: exit %d\n%s", code, out)
	}
	if code, out, _ := run("adopt", "--undo"); code != 0 || !strings.Contains(out, "restored ") && !strings.Contains(out, "removed ") {
		t.Errorf("adopt --undo: exit %d\n%s", code, out)
	}

	sf("sleep", "uninstall", "claude-code", "--home", home)
	if diff := cmp.Diff(before, testfs.Tree(t, home)); diff != "" {
		t.Errorf("the home after uninstall differs from before the install (-before +after):\n%s", diff)
	}
}
