package exec_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/backends/exec"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// TestStandInAgentFailuresAreTyped runs, for the Copilot CLI, pi and
// opencode, a stand-in binary (no real CLI needed) that passes the
// version check and then kills itself with SIGKILL, or prints the start
// of the CLI's event stream and stops mid-line: the first is a server
// error naming the kill, the second an invalid reply, neither a reply to
// score.
func TestStandInAgentFailuresAreTyped(t *testing.T) {
	for _, tc := range []struct{ agent, version, start string }{
		{exec.AgentCopilot, "GitHub Copilot CLI 1.0.102", `{"type":"assistant.turn_start","data":{"turnId":"0"}}`},
		{exec.AgentPi, "0.73.1", `{"type":"session","version":3,"id":"s","cwd":"/w"}`},
		{exec.AgentOpencode, "1.18.33", `{"type":"step_start","part":{"type":"step-start"}}`},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			t.Parallel()
			for _, c := range []struct {
				name, body string
				kind       llm.ErrorKind
				says       string
			}{
				{"killed", "kill -9 $$", llm.KindServer, "killed"},
				{"broken stream", "printf '%s\\n{\"type\":\"mess'\n", llm.KindInvalidReply, "line 2"},
			} {
				dir := t.TempDir()
				bin := filepath.Join(dir, tc.agent)
				script := "#!/bin/sh\n[ \"$1\" = --version ] && { echo '" + tc.version + "'; exit 0; }\n" + strings.Replace(c.body, "%s", tc.start, 1) + "\n"
				if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
					t.Fatal(err)
				}
				cl := exec.New(exec.Config{Agent: tc.agent, Bin: bin, Model: "m",
					Sandbox: exec.SandboxConfig{Mode: exec.SandboxNone, Logf: func(string, ...any) {}}})
				if _, err := cl.CheckVersion(t.Context()); err != nil {
					t.Fatalf("%s: version check: %v", c.name, err)
				}
				resp, err := cl.Chat(t.Context(), simRequest("# Records\n", "q"))
				if resp != nil || llm.KindOf(err) != c.kind || !strings.Contains(err.Error(), c.says) {
					t.Errorf("%s: %+v, %v; want a %s error saying %q", c.name, resp, err, c.kind, c.says)
				}
			}
		})
	}
}
