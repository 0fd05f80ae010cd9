package sim

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// quiet is a model without noise, spill-over, mistakes or re-proposals,
// whose analysts see through every harmful line, for tests of the rules
// themselves.
func quiet() *Model {
	return New(Options{Epsilon: -1, HarmfulRate: -1, ReproposeRate: -1, LengthBudget: -1, HarmSpill: -1, DiagnoseRate: 1})
}

// ask renders an optimizer prompt with the real templates, sends it to m
// and decodes the fenced JSON reply into out, refusing unknown fields.
func ask(t *testing.T, m *Model, name, mode string, payload, out any) *llm.Response {
	t.Helper()
	system, user, err := prompts.New(nil).Render(name, mode, payload, prompts.RenderOptions{})
	if err != nil {
		t.Fatalf("Render(%s): %v", name, err)
	}
	resp, err := m.Chat(t.Context(), &llm.Request{Model: "opt", Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: system}, {Role: llm.RoleUser, Content: user},
	}})
	if err != nil {
		t.Fatalf("Chat(%s): %v", name, err)
	}
	decodeReply(t, resp.Content, out)
	return resp
}

// decodeReply reads the ```json fence of a reply strictly into out.
func decodeReply(t *testing.T, content string, out any) {
	t.Helper()
	_, rest, ok := strings.Cut(content, "```json\n")
	body, _, closed := strings.Cut(rest, "\n```")
	if !ok || !closed {
		t.Fatalf("reply has no ```json fence: %q", content)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("reply does not decode into %T: %v\n%s", out, err, body)
	}
}

// rollout runs one episode of a generated item with m.
func rollout(t *testing.T, m llm.Model, it simbench.Item, skill string) *bench.Episode {
	t.Helper()
	raw, err := json.Marshal(it)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := simbench.New(simbench.Config{}).Episode(t.Context(), m, bench.EpisodeRequest{
		Item: bench.Item{ID: it.ID, TaskType: it.TaskType, Raw: raw}, Skill: skill, Model: "target",
	})
	if err != nil {
		t.Fatalf("Episode(%s): %v", it.ID, err)
	}
	return ep
}

// score is the mean hard score of items under skill.
func score(t *testing.T, m llm.Model, items []simbench.Item, skill string) float64 {
	t.Helper()
	sum := 0.0
	for _, it := range items {
		sum += rollout(t, m, it, skill).Hard
	}
	return sum / float64(len(items))
}

// trajectory turns an episode into what an analyst sees, the way the
// coordinator does (no reference answer: the gold is in the feedback).
func trajectory(id string, ep *bench.Episode) prompts.Trajectory {
	tr := prompts.Trajectory{ID: id, Task: ep.TaskDescription, TaskType: ep.TaskType, FailReason: ep.FailReason,
		NTurns: ep.NTurns, Hard: ep.Hard, Soft: ep.Soft, Answer: ep.Answer}
	for _, m := range ep.Messages {
		tr.Messages = append(tr.Messages, prompts.Message{Role: m.Role, Content: m.Text()})
	}
	return tr
}

// failedItem returns a trajectory of gold value g failing with pitfall id.
func failedItem(id, g string) prompts.Trajectory {
	p, _ := simbench.Lookup(id)
	w := p.Wrong(g)
	return prompts.Trajectory{ID: "t-" + id, Task: "Note " + p.Cue + ". " + simbench.RecordMarker + g + ".", Answer: w,
		FailReason: "wrong_answer: predicted '" + w + "' but expected '" + g + "'", NTurns: 1,
		Messages: []prompts.Message{{Role: llm.RoleAssistant, Content: "<answer>" + w + "</answer>"}}}
}
