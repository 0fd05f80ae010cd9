package exec_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/backends/exec"
	"github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// TestMoreAgentsAgainstSimLLM runs the pinned Copilot CLI, pi and
// opencode (scripts/install-agents.sh) against sim-llm's Responses API,
// each through its own provider setting (Copilot's BYOK variables, pi's
// models.json, opencode's config): the skill is found where the backend
// installs it and opened with the agent's own tool (the sim's request
// log shows the read, then the answer), the JSON events parse, the usage
// is the CLI's own (equal to sim-llm's count), the answer is right only
// with the skill's rules, and the trace summary names the skill read.
func TestMoreAgentsAgainstSimLLM(t *testing.T) {
	for _, agent := range []string{exec.AgentCopilot, exec.AgentPi, exec.AgentOpencode} {
		t.Run(agent, func(t *testing.T) {
			t.Parallel()
			s, url := simFor(t, sim.ServerOptions{})
			// opencode's npm is pointed at a registry of the test's own
			// (npm_config_registry, through option env): the harness keeps
			// it offline, so no call may install a package from it.
			var npmAsked func() []string
			c, _ := agentClient(t, agent, url, func(cfg *exec.Config) {
				optOut(cfg)
				cfg.TraceSummary = true
				if agent == exec.AgentOpencode {
					var registry string
					registry, npmAsked = npmRegistry(t)
					getenv := cfg.Getenv
					cfg.Env = append(cfg.Env, "npm_config_registry")
					cfg.Getenv = func(k string) string {
						if k == "npm_config_registry" {
							return registry
						}
						return getenv(k)
					}
				}
			})
			if npmAsked != nil {
				defer func() {
					if asked := npmAsked(); len(asked) > 0 {
						t.Errorf("opencode asked the npm registry for %v: each call installs packages", asked)
					}
				}()
			}
			v, err := c.CheckVersion(t.Context())
			if err != nil || v == "" {
				t.Fatalf("CheckVersion = %q, %v", v, err)
			}
			skill, q, gold := simTask(t)
			resp, err := c.Chat(t.Context(), simRequest(skill, q))
			if err != nil {
				t.Fatalf("%v; request log %+v", err, s.RequestLog())
			}
			log := s.RequestLog()
			var actions []string
			for _, e := range log {
				if e.Action != "chat" { // a side call (opencode's session title)
					actions = append(actions, e.Action)
				}
			}
			rest, trace := prompts.CutTrace(resp.Content)
			if got := simbench.ExtractAnswer(rest); got != gold {
				t.Fatalf("answer %q (reply %q), want %q; actions %v", got, resp.Content, gold, actions)
			}
			if strings.Join(actions, ",") != "read_skill,answer" {
				t.Fatalf("actions %v, want read_skill then answer; log %+v", actions, log)
			}
			if !strings.Contains(trace, "agent: "+agent) || !strings.Contains(trace, "answer tags") {
				t.Errorf("trace summary:\n%s", trace)
			}
			st := s.Stats()
			if resp.Usage.InputTokens != st.InputTokens || resp.Usage.OutputTokens != st.OutputTokens || c.EstimatedCalls() != 0 {
				t.Errorf("usage %+v, sim-llm counted %d in / %d out (estimated calls %d)", resp.Usage, st.InputTokens, st.OutputTokens, c.EstimatedCalls())
			}
			resp, err = c.Chat(t.Context(), simRequest("# Records\n- Be careful.\n", q))
			if err != nil {
				t.Fatal(err)
			}
			if got := simbench.ExtractAnswer(resp.Content); got == gold {
				t.Fatalf("without the rules the answer is still %q", got)
			}
			t.Logf("%s %s: %d sim requests, trace:\n%s", agent, v, len(log), trace)
		})
	}
}

// npmRegistry is a stand-in npm registry that answers 404 to every
// request; asked lists the paths requested so far.
func npmRegistry(t *testing.T) (url string, asked func() []string) {
	t.Helper()
	var mu sync.Mutex
	var paths []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		http.NotFound(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/", func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(paths)
	}
}

// TestMoreAgentsTypedFailures: for the Copilot CLI, pi and opencode, a
// missing binary fails the version check and the call (invalid_request,
// naming the program), and a CLI killed in the middle of its call is a
// server error naming the signal: neither is a reply to score. (A broken
// stream: TestMoreAgentsBrokenStreams, on the CLIs' recorded output.)
func TestMoreAgentsTypedFailures(t *testing.T) {
	for _, agent := range []string{exec.AgentCopilot, exec.AgentPi, exec.AgentOpencode} {
		t.Run(agent, func(t *testing.T) {
			t.Parallel()
			missing := exec.New(exec.Config{Agent: agent, Bin: filepath.Join(t.TempDir(), "no-such-"+agent), Model: "m",
				Sandbox: exec.SandboxConfig{Mode: exec.SandboxNone, Logf: func(string, ...any) {}}})
			if _, err := missing.CheckVersion(t.Context()); err == nil || !strings.Contains(err.Error(), "no-such-"+agent) {
				t.Fatalf("CheckVersion of a missing binary = %v", err)
			}
			resp, err := missing.Chat(t.Context(), simRequest("# Records\n", "q"))
			if resp != nil || llm.KindOf(err) != llm.KindInvalidRequest || !strings.Contains(err.Error(), "no-such-"+agent) {
				t.Fatalf("call of a missing binary = %+v, %v; want invalid_request naming it", resp, err)
			}

			// Killed: sim-llm holds every reply for a minute, and the CLI
			// is killed while it waits.
			_, url := simFor(t, sim.ServerOptions{Latency: sim.Latency{Fixed: time.Minute}})
			c, root := agentClient(t, agent, url, optOut)
			skill, q, _ := simTask(t)
			done := make(chan error, 1)
			go func() {
				resp, err := c.Chat(t.Context(), simRequest(skill, q))
				if resp != nil {
					err = fmt.Errorf("a reply: %+v", resp)
				}
				done <- err
			}()
			killed := 0
			for deadline := time.Now().Add(2 * time.Minute); killed == 0 && time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
				killed = killUnder(t, root)
			}
			if killed == 0 {
				t.Fatal("found no agent process to kill")
			}
			err = <-done
			if llm.KindOf(err) != llm.KindServer || !strings.Contains(err.Error(), "killed") {
				t.Fatalf("killed agent: %v; want a server error naming the kill", err)
			}
		})
	}
}

// killUnder SIGKILLs the processes whose working directory is under root
// and returns how many it killed.
func killUnder(t *testing.T, root string) int {
	t.Helper()
	n := 0
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cwd, err := os.Readlink(filepath.Join(p, "cwd"))
		if err != nil || !strings.HasPrefix(cwd, root+"/") {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(p))
		if err == nil && syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// TestChatModeAgainstSimLLM runs every npm agent CLI in chat mode (a
// chat role: optimizer, miner, judge) against sim-llm: the request the
// model gets offers no tool at all (sim-llm's log shows one "chat"
// action, no tool call), the reply is the model's text, and the usage is
// the CLI's report, equal to sim-llm's count (the Copilot CLI's from its
// usage file). A request offering tools is refused.
func TestChatModeAgainstSimLLM(t *testing.T) {
	for _, agent := range []string{exec.AgentClaude, exec.AgentCodex, exec.AgentCopilot, exec.AgentPi, exec.AgentOpencode} {
		t.Run(agent, func(t *testing.T) {
			t.Parallel()
			s, url := simFor(t, sim.ServerOptions{})
			c, _ := agentClient(t, agent, url, func(cfg *exec.Config) { optOut(cfg); cfg.Mode = exec.ModeChat })
			skill, q, _ := simTask(t)
			resp, err := c.Chat(t.Context(), simRequest(skill, q))
			if err != nil {
				t.Fatalf("%v; request log %+v", err, s.RequestLog())
			}
			var main []sim.LoggedRequest
			for _, e := range s.RequestLog() {
				// Codex keeps tools that act on nothing (its shell is off):
				// no call of one.
				if len(e.ToolCalls) > 0 || e.Action != "chat" && agent != exec.AgentCodex {
					t.Fatalf("request log %+v: want chat requests without tools", s.RequestLog())
				}
				main = append(main, e)
			}
			if len(main) == 0 || !strings.Contains(resp.Content, "<answer>") {
				t.Fatalf("reply %q after %d requests", resp.Content, len(main))
			}
			st := s.Stats()
			if resp.Usage.InputTokens != st.InputTokens || resp.Usage.OutputTokens != st.OutputTokens || c.EstimatedCalls() != 0 {
				t.Errorf("usage %+v, sim-llm counted %d in / %d out (estimated %d)", resp.Usage, st.InputTokens, st.OutputTokens, c.EstimatedCalls())
			}
			req := simRequest(skill, q)
			req.Tools = []llm.Tool{{Name: "lookup"}}
			if _, err := c.Chat(t.Context(), req); llm.KindOf(err) != llm.KindInvalidRequest {
				t.Fatalf("a request with tools: %v, want invalid_request", err)
			}
		})
	}
}
