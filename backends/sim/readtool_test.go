package sim_test

import (
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

// TestReadToolOverChatAPI: a target built with option skill_files=tool
// (backends.New) reaches sim-llm over its chat completions API with the
// read_skill_file tool; sim-llm's package world calls it for the
// reference SKILL.md points to, the backend answers the call with the
// file, and the episode's reply is right and names the file opened. With
// the default (inline) the same target sees the whole bundle and answers
// the same.
func TestReadToolOverChatAPI(t *testing.T) {
	t.Parallel()
	srv := sim.NewServer(sim.New(sim.Options{Epsilon: -1, HarmSpill: -1, LengthBudget: -1}), sim.ServerOptions{})
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)

	units, _ := simbench.Lookup("units_km")
	w, err := simbench.Generate("demo", 7)
	if err != nil {
		t.Fatal(err)
	}
	var it simbench.Item
	for _, x := range slices.Concat(w.Train, w.Val, w.Test) {
		if len(x.Pitfalls) == 1 && x.Pitfalls[0] == units.ID {
			it = x
			break
		}
	}
	p, err := skillpkg.New(map[string]string{
		"SKILL.md":            "---\nname: records\ndescription: Records.\n---\n# Records\n\nRules for each record type live in references/.\n",
		"references/units.md": "- " + units.Rule + "\n",
		"references/other.md": "- nothing here\n",
	}, skillpkg.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(it)
	episode := func(opts map[string]string) *bench.Episode {
		t.Helper()
		m, err := backends.New(t.Context(), backends.Spec{Backend: "openai", Model: "sim-target", BaseURL: ts.URL + "/v1", APIKeyEnv: "SKILLFLEET_NO_KEY", Options: opts},
			backends.Deps{Getenv: func(string) string { return "unused" }})
		if err != nil {
			t.Fatal(err)
		}
		ep, err := simbench.New(simbench.Config{}).Episode(t.Context(), m, bench.EpisodeRequest{
			Item: bench.Item{ID: it.ID, TaskType: it.TaskType, Raw: raw}, Skill: skillpkg.Encode(p), Model: "sim-target"})
		if err != nil {
			t.Fatal(err)
		}
		return ep
	}
	reply := func(ep *bench.Episode) string {
		r := ""
		for _, m := range ep.Messages {
			if m.Role == llm.RoleAssistant {
				r = m.Text()
			}
		}
		return r
	}
	viaTool := episode(map[string]string{"skill_files": "tool"})
	inline := episode(nil)
	note, rest, _ := strings.Cut(reply(viaTool), "\n\n")
	if note != skillpkg.OpenedNote+" SKILL.md, references/other.md, references/units.md]" || viaTool.Hard != 1 {
		t.Fatalf("via the tool: reply %q (hard %v), want the note naming both references and a right answer", reply(viaTool), viaTool.Hard)
	}
	if rest != reply(inline) || inline.Hard != 1 {
		t.Fatalf("via the tool %q, inline %q (hard %v): want the same reply", rest, reply(inline), inline.Hard)
	}
	if st := srv.Stats(); st.Served != 3 {
		t.Fatalf("sim-llm served %d requests, want 3 (the tool round trip, its answer, the inline call)", st.Served)
	}
	if _, err := backends.New(t.Context(), backends.Spec{Backend: "openai", Model: "m", BaseURL: ts.URL, Options: map[string]string{"skill_files": "files"}}, backends.Deps{Getenv: func(string) string { return "k" }}); err == nil || !strings.Contains(err.Error(), "skill_files") {
		t.Fatalf("option skill_files=files: err %v, want one naming the option", err)
	}
}
