package prompts_test

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// TestDecodedEqualsADecoding: the decoded payload RenderDecoded hands to a
// model in the same process must equal a strict decoding of the payload
// the user message holds, for payloads of every prompt and mode, the
// recorded analyst payload, and JSON that decodes to values a re-encoding
// does not give back as they are (empty lists of omitempty fields, odd
// strings, keys in other cases, duplicate keys).
func TestDecodedEqualsADecoding(t *testing.T) {
	t.Parallel()
	s := prompts.New(nil)
	type tc struct {
		key, name, mode string
		raw             []byte
	}
	var cases []tc
	for _, c := range renderCases(t) {
		raw, ok := c.payload.(json.RawMessage)
		if !ok {
			var err error
			if raw, err = json.Marshal(c.payload); err != nil {
				t.Fatal(err)
			}
		}
		cases = append(cases, tc{c.key, c.name, c.mode, raw})
	}
	odd := []struct{ name, mode, raw string }{
		{prompts.AnalystFailure, prompts.ModePatch, `{"skill":"s","budget":1,"batch_size":1,"step_buffer":[],"trajectories":[]}`},
		{prompts.AnalystFailure, prompts.ModePatch, `{"skill":"s","budget":1,"batch_size":1,"trajectories":null}`},
		{prompts.AnalystSuccess, prompts.ModeRewrite, `{"skill":"` + "bad \xff\xfe utf-8, \\ud800 alone, ``` fence, <a & b>, \\u2028" + `","budget":1,"batch_size":1,` +
			`"step_buffer":[{"step":1,"action":"reject","n_total":2,"n_fail":1,"failure_patterns":[],"rejected_edits":[],"score_before":0}],` +
			`"trajectories":[{"id":"a","task":"t","n_turns":0,"hard":-0,"soft":1e-3,"messages":[]}]}`},
		{prompts.AnalystFailure, prompts.ModePatch, `{"Skill":"first","SKILL":"second","Budget":2,"batch_size":1,"trajectories":[],"skill":"third"}`},
		{prompts.MergeFailure, prompts.ModePatch, `{"skill":"s","level":1,"patches":[[],[{"op":"append","content":"x","change_summary":[]}]]}`},
		{prompts.MergeFinal, prompts.ModeFullRewrite, `{"skill":"s","failure":[],"success":[{"title":"t","change_summary":[],"new_skill":"n"}]}`},
		{prompts.SlowUpdate, "", `{"prev_skill":"p","skill":"s","counts":{},"pairs":[{"id":"a","task":"t","category":"regressed","prev":{"hard":1,"soft":1},"curr":{"hard":0,"soft":0},"prev_trajectory":[],"curr_trajectory":[{"role":"user","content":"q"}]}]}`},
		{prompts.LRController, "", `{"skill":"s","n":1,"hard":0.5,"soft":0.5,"items":[],"step_buffer":[]}`},
		{prompts.Consolidate, "", `{"notes":[]}`},
	}
	for _, o := range odd {
		cases = append(cases, tc{"odd " + o.raw, o.name, o.mode, []byte(o.raw)})
	}
	for _, c := range cases {
		_, user, d, err := s.RenderDecoded(c.name, c.mode, json.RawMessage(c.raw), prompts.RenderOptions{})
		if err != nil {
			t.Fatalf("%s: %v", c.key, err)
		}
		js, err := prompts.LocatePayload(user)
		if err != nil || d == nil || d.JSON != js {
			t.Fatalf("%s: Decoded = %+v, want the payload %q (%v)", c.key, d, js, err)
		}
		want := reflect.New(reflect.TypeOf(d.Value).Elem())
		dec := json.NewDecoder(bytes.NewReader([]byte(js)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(want.Interface()); err != nil {
			t.Fatalf("%s: %v", c.key, err)
		}
		if !reflect.DeepEqual(d.Value, want.Interface()) {
			t.Errorf("%s: decoded payload differs from a decoding of the user message's (-decoding +decoded):\n%s", c.key, cmp.Diff(want.Interface(), d.Value))
		}
		got, ok := prompts.DecodedFrom(prompts.WithDecoded(context.Background(), d), js)
		if !ok || got != d.Value {
			t.Errorf("%s: DecodedFrom(WithDecoded(d), d.JSON) = %v, %v", c.key, got, ok)
		}
		if _, ok := prompts.DecodedFrom(prompts.WithDecoded(context.Background(), d), js+" "); ok {
			t.Errorf("%s: DecodedFrom gives the value for another payload", c.key)
		}
	}
	// A payload given as a Go value is the caller's: nothing is handed on.
	if _, _, d, err := s.RenderDecoded(prompts.Consolidate, "", prompts.ConsolidateInput{Notes: []string{}}, prompts.RenderOptions{}); err != nil || d != nil {
		t.Errorf("RenderDecoded of a Go value = %+v, %v; want nil, nil", d, err)
	}
}
