package exec_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/backends/exec"
	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// recordings are real output of the pinned CLIs against sim-llm, each
// opening the skill with its own tool and answering (testdata).
var recordings = []struct {
	agent, format, file string
	// used is what the trace names of the skill read; end is the stream's
	// last event type.
	used, end string
}{
	{exec.AgentCopilot, exec.OutputCopilotJSON, "copilot-events.jsonl", "skillfleet-target", "result"},
	{exec.AgentPi, exec.OutputPiJSON, "pi-events.jsonl", "SKILL.md", "agent_end"},
	{exec.AgentOpencode, exec.OutputOpencodeJSON, "opencode-events.jsonl", "SKILL.md", "step_finish"},
}

// TestMoreAgentsRecordedStreams parses the recordings: the answer, the
// skill read in the trace summary, and (pi, opencode) the usage the CLI
// reported.
func TestMoreAgentsRecordedStreams(t *testing.T) {
	t.Parallel()
	for _, rc := range recordings {
		t.Run(rc.agent, func(t *testing.T) {
			t.Parallel()
			rec, err := os.ReadFile(filepath.Join("testdata", rc.file))
			if err != nil {
				t.Fatal(err)
			}
			c := replayClient(t, rc.agent, rc.format, rec, func(c *exec.Config) { c.TraceSummary = true })
			resp, err := c.Chat(t.Context(), simRequest("# Records\n", "q"))
			if err != nil {
				t.Fatal(err)
			}
			rest, trace := prompts.CutTrace(resp.Content)
			if got := simbench.ExtractAnswer(rest); got == "" || strings.Contains(rest, "I'll open") {
				t.Fatalf("reply %q: want the final answer alone", rest)
			}
			if !strings.Contains(trace, "- tool calls: 1") || !strings.Contains(trace, rc.used) {
				t.Errorf("trace:\n%s", trace)
			}
			if rc.agent != exec.AgentCopilot && (c.EstimatedCalls() != 0 || resp.Usage.InputTokens == 0) {
				t.Errorf("usage %+v (estimated %d): want the CLI's", resp.Usage, c.EstimatedCalls())
			}
		})
	}
}

// TestMoreAgentsBrokenStreams: a recording cut before its end event, cut
// inside an event, garbage or nothing is an invalid_reply
// *exec.OutputError of the agent's format, never a reply to score.
func TestMoreAgentsBrokenStreams(t *testing.T) {
	t.Parallel()
	for _, rc := range recordings {
		rec, err := os.ReadFile(filepath.Join("testdata", rc.file))
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.SplitAfter(bytes.TrimSuffix(rec, []byte("\n")), []byte("\n"))
		n := len(lines)
		for _, tc := range []struct {
			name, problem string
			out           []byte
		}{
			{"no end event", "no " + map[bool]string{true: "final step_finish", false: rc.end}[rc.end == "step_finish"] + " event", bytes.Join(lines[:n-1], nil)},
			{"cut inside an event", "ends inside an event", rec[:len(rec)-25]},
			{"garbage", "", []byte("Segmentation fault\n")},
			{"empty", "no JSON event", nil},
		} {
			t.Run(rc.agent+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				c := replayClient(t, rc.agent, rc.format, tc.out, nil)
				resp, err := c.Chat(t.Context(), simRequest("# Records\n", "q"))
				var oe *exec.OutputError
				if resp != nil || llm.KindOf(err) != llm.KindInvalidReply || !errors.As(err, &oe) || oe.Format != rc.format {
					t.Fatalf("reply %+v, err %v; want an invalid_reply *exec.OutputError", resp, err)
				}
				if !strings.Contains(oe.Error(), tc.problem) {
					t.Fatalf("error %q, want %q", oe.Error(), tc.problem)
				}
			})
		}
	}
}
