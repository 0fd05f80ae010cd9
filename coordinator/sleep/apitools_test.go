package sleep

import (
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/backends/openai"
	simmodel "github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/pkg/nightly"
)

// TestToolCalledOnAnAPIReplayOffersTheTool: an API replay (the OpenAI
// backend against sim-llm's HTTP face) of a task whose judge wants
// tool_called git offers git as a function in the chat request. The
// replay passes when the skill tells the model to use git and the model
// calls it (the call comes back over the wire, the replay's evidence
// names it); under a skill that does not, the model answers without
// calling it and the replay fails on tool_called:git. A task whose
// judge checks no tool is offered none.
func TestToolCalledOnAnAPIReplayOffersTheTool(t *testing.T) {
	srv := httptest.NewServer(simmodel.NewServer(simmodel.New(simmodel.Options{}), simmodel.ServerOptions{}))
	defer srv.Close()
	rep := &LocalReplayer{Model: openai.New(openai.Config{BaseURL: srv.URL + "/v1"}), Name: "sim", Env: nightly.NewEnv(nightly.EnvConfig{})}
	task := nightly.Task{ID: "last-commit", Intent: "show the last commit of the repository", Split: nightly.SplitVal, Origin: nightly.OriginReal,
		Judge: nightly.Judge{Kind: nightly.JudgeRule, Checks: []nightly.Check{{Op: nightly.OpToolCalled, Arg: "git"}}}}
	plain := task
	plain.ID, plain.Judge.Checks = "no-tool", []nightly.Check{{Op: nightly.OpContains, Arg: "commit"}}
	for _, tc := range []struct {
		name, skill string
		task        nightly.Task
		hard        float64
		tools       []string
	}{
		{"the skill says to use git", "# git\n\nUse the git tool before you answer a question about the repository.\n", task, 1, []string{"git"}},
		{"the skill says nothing of git", "# git\n\nAnswer questions about the repository.\n", task, 0, nil},
		{"no judged tool", "# git\n\nUse the git tool before you answer a question about the repository.\n", plain, 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := rep.Replay(t.Context(), ReplayRequest{Stage: "baseline", Doc: nightly.ComposeDocs(tc.skill, ""), Tasks: []nightly.Task{tc.task}})
			if err != nil {
				t.Fatal(err)
			}
			r := out[0]
			if r.Err != "" || r.Hard != tc.hard || !slices.Equal(r.Tools, tc.tools) {
				t.Fatalf("replay hard %v tools %q error %q (fail %q), want hard %v tools %q\n%s", r.Hard, r.Tools, r.Err, r.FailReason, tc.hard, tc.tools, r.Answer)
			}
			if tc.hard == 0 && !strings.Contains(r.FailReason, "tool_called:git") {
				t.Fatalf("fail reason %q, want tool_called:git named", r.FailReason)
			}
			if tc.task.ID == "last-commit" && r.Calls != 1+len(tc.tools) {
				t.Fatalf("%d model calls, want %d (one more per tool round)", r.Calls, 1+len(tc.tools))
			}
		})
	}
}
