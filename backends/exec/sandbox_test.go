package exec_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/backends/exec"
	"github.com/skillfleet/skillfleet/backends/sim"
	simbench "github.com/skillfleet/skillfleet/pkg/bench/sim"
)

func sandboxed(cfg *exec.Config) { cfg.Sandbox.Mode = exec.SandboxBubblewrap }

// TestSandboxedRealAgents runs the pinned Codex CLI and Claude Code inside
// the sandbox against sim-llm (reached through the sandbox's forwarder):
// the skill is found in the sandbox's work directory and opened with the
// agent's own tool, the answer and usage are right, a long task is read
// from task.md with a shell command, and the kept work directory (copied
// back from the sandbox) holds the agent's files but not the key.
func TestSandboxedRealAgents(t *testing.T) {
	for _, agent := range []string{exec.AgentCodex, exec.AgentClaude} {
		t.Run(agent, func(t *testing.T) {
			t.Parallel()
			s, url := simFor(t, sim.ServerOptions{})
			c, root := agentClient(t, agent, url, sandboxed)
			if _, err := c.CheckVersion(t.Context()); err != nil {
				t.Fatal(err)
			}
			skill, q, gold := simTask(t)
			resp, err := c.Chat(t.Context(), simRequest(skill, q))
			if err != nil {
				t.Fatalf("%v; request log %+v", err, s.RequestLog())
			}
			log := s.RequestLog()
			if got := simbench.ExtractAnswer(resp.Content); got != gold {
				t.Fatalf("answer %q (reply %q), want %q; request log %+v", got, resp.Content, gold, log)
			}
			if len(log) != 2 || log[0].Action != "read_skill" || log[1].Action != "answer" || log[1].ToolResults != 1 {
				t.Fatalf("request log %+v, want one skill read then the answer", log)
			}
			if agent == exec.AgentCodex && !strings.Contains(log[0].ToolCalls[0], "/work/"+c.SkillPath()) {
				t.Fatalf("codex read %q, want the sandbox's /work/%s", log[0].ToolCalls[0], c.SkillPath())
			}
			st := s.Stats()
			if resp.Usage.InputTokens != st.InputTokens || resp.Usage.OutputTokens != st.OutputTokens {
				t.Fatalf("usage %+v, sim-llm counted %d in / %d out", resp.Usage, st.InputTokens, st.OutputTokens)
			}
			long, _ := agentClient(t, agent, url, func(cfg *exec.Config) { sandboxed(cfg); cfg.TaskInlineMax = 64; cfg.WorkRoot = root })
			resp, err = long.Chat(t.Context(), simRequest(skill, q))
			if err != nil {
				t.Fatalf("task via task.md: %v; request log %+v", err, s.RequestLog()[2:])
			}
			if got := simbench.ExtractAnswer(resp.Content); got != gold {
				t.Fatalf("task via task.md: answer %q, want %q; log %+v", got, gold, s.RequestLog()[2:])
			}
			var actions []string
			for _, e := range s.RequestLog()[2:] {
				actions = append(actions, e.Action)
			}
			if strings.Join(actions, ",") != "read_skill,read_file,answer" {
				t.Fatalf("task via task.md: actions %v, want read_skill, read_file, answer", actions)
			}
			if n := noKeyIn(t, root); n < 3 {
				t.Fatalf("the kept work directories hold %d files", n)
			}
			m, _ := filepath.Glob(filepath.Join(root, "*", c.SkillPath()))
			if len(m) != 2 {
				t.Fatalf("kept skills %v, want one per call", m)
			}
		})
	}
}
