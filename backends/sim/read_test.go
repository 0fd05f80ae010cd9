package sim

import (
	"fmt"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// fullReading answers req the way Chat did before it read payloads once:
// classify (ExtractPayload decodes the kind), then optimize.
func fullReading(m *Model, req *llm.Request) (string, error) {
	kind, payload, isTarget, err := classify(req)
	if err != nil {
		return "", &llm.Error{Kind: llm.KindInvalidRequest, Msg: "sim: " + err.Error()}
	}
	if isTarget {
		return m.target(req, 0), nil
	}
	content, err := m.optimize(kind, payload, req.Model, 0)
	if err != nil {
		return "", &llm.Error{Kind: llm.KindInvalidRequest, Msg: fmt.Sprintf("sim: %s request: %v", kind, err)}
	}
	return content, nil
}

// TestOneDecodingAnswersAsBefore: Chat reads an optimizer payload's kind
// from its first bytes and decodes the payload once; its reply, or its
// error, must be what the full reading gives, for rendered payloads of
// every kind and for payloads that only look like them.
func TestOneDecodingAnswersAsBefore(t *testing.T) {
	t.Parallel()
	m := New(Options{})
	s := prompts.New(nil)
	user := func(payload string) string {
		return "Do it.\n\nThe input, as JSON:\n\n```json\n" + payload + "\n```\n"
	}
	type tc struct{ name, user string }
	var cases []tc
	items := []prompts.Item{{Op: "append", Content: "- Write the unit.", SupportCount: 2}}
	for _, r := range []struct {
		name, mode string
		payload    any
	}{
		{prompts.AnalystFailure, prompts.ModePatch, prompts.AnalystInput{Skill: testSkill, Budget: 2, BatchSize: 1, Trajectories: []prompts.Trajectory{failedItem("hex", "4821")}}},
		{prompts.AnalystSuccess, prompts.ModeRewrite, prompts.AnalystInput{Skill: testSkill, Budget: 2, BatchSize: 1}},
		{prompts.MergeFailure, prompts.ModePatch, prompts.MergeInput{Skill: testSkill, Patches: [][]prompts.Item{items, items}}},
		{prompts.MergeFinal, prompts.ModeFullRewrite, prompts.MergeFinalInput{Skill: testSkill}},
		{prompts.Ranking, prompts.ModePatch, prompts.RankInput{Skill: testSkill, Budget: 1, Items: items}},
		{prompts.LRController, "", prompts.LRInput{Skill: testSkill, Items: []string{"a"}}},
		{prompts.Rewrite, "", prompts.RewriteInput{Skill: testSkill, Suggestions: items}},
		{prompts.SlowUpdate, "", prompts.EpochInput{Skill: testSkill}},
		{prompts.MetaSkill, "", prompts.EpochInput{Skill: testSkill}},
		{prompts.Consolidate, "", prompts.ConsolidateInput{Notes: []string{"Check units. Always."}}},
	} {
		_, u, err := s.Render(r.name, r.mode, r.payload, prompts.RenderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, tc{r.name, u})
	}
	cases = append(cases,
		// The decoder takes the last of duplicate keys, and matches keys
		// case-insensitively: the kind is that one.
		tc{"duplicate kind", user(`{"kind":"ranking","mode":"patch","skill":"x","budget":1,"items":[],"kind":"analyst_failure"}`)},
		tc{"second kind in capitals", user(`{"kind":"appendix_consolidate","notes":["a"],"KIND":"ranking"}`)},
		tc{"escaped kind", user(`{"kind":"appendix\u005fconsolidate","notes":["a"]}`)},
		tc{"broken after the kind", user(`{"kind":"appendix_consolidate","notes":[`)},
		tc{"unknown field", user(`{"kind":"appendix_consolidate","notes":[],"extra":1}`)},
		tc{"unknown kind", user(`{"kind":"nonsense"}`)},
		tc{"unknown mode", user(`{"kind":"ranking","mode":"sideways","skill":"","budget":1,"items":[]}`)},
		tc{"kind not a string", user(`{"kind":7}`)},
		tc{"kind not first", user(`{"notes":["a"],"kind":"appendix_consolidate"}`)},
		tc{"no kind", user(`{"notes":["a"]}`)},
	)
	for _, c := range cases {
		req := &llm.Request{Model: "opt", Messages: []llm.Message{{Role: llm.RoleSystem, Content: "system"}, {Role: llm.RoleUser, Content: c.user}}}
		want, wantErr := fullReading(m, req)
		resp, err := m.Chat(t.Context(), req)
		got := ""
		if resp != nil {
			got = resp.Content
		}
		if got != want || fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Errorf("%s: Chat = %q, %v; the full reading gives %q, %v", c.name, got, err, want, wantErr)
		}
	}
}
