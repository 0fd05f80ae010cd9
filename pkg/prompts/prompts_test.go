package prompts

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files")

const sampleSkill = "# Answering skill\n\nAnswer with a number.\n\n```json\n{\"x\": 1}\n```\n\n" +
	"<!-- SLOW_UPDATE_START -->\n- Check units.\n<!-- SLOW_UPDATE_END -->\n\n" +
	"<!-- APPENDIX_START -->\n## Execution Notes Appendix\n<!-- APPENDIX_END -->\n"

func ptr(f float64) *float64 { return &f }

func sampleBuffer() []BufferEntry {
	return []BufferEntry{
		{
			Step: 3, Action: "reject", NTotal: 40, NFail: 5,
			FailurePatterns: []FailurePattern{
				{Pattern: "wrong_unit", Count: 3, TaskIDs: []string{"q1", "q7", "q9"}},
				{Pattern: "no_answer", Count: 2, TaskIDs: []string{"q2", "q4"}},
			},
			ScoreBefore: ptr(0.625), ScoreAfter: ptr(0.6),
			RejectedEdits: []RejectedEdit{
				{Op: "replace", Target: "Answer with a number.", Content: "Answer with a number\nand its unit."},
				{Op: "append", Content: "Always cite the passage."},
				{Op: "delete", Target: "Be brief."},
				{Type: "clarify", Title: "Units", Instruction: "Say which unit to use."},
				{Title: "v2", ChangeSummary: []string{"added unit rule", "removed brevity rule"}, SourceType: "failure"},
			},
		},
		{
			Step: 4, Action: "accept_new_best", NTotal: 40, NFail: 12,
			FailurePatterns: []FailurePattern{
				{Pattern: "timeout", Count: 12, TaskIDs: []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"}},
			},
		},
		{Step: 5, Action: "reject", NTotal: 40, NFail: 0, ScoreBefore: ptr(0.7), ScoreAfter: ptr(0.7)},
		{Step: 6, Action: "reject", NTotal: 40, NFail: 1, ScoreBefore: ptr(0.7), EarlyStopped: true,
			FailurePatterns: []FailurePattern{{Pattern: "multi\nline pattern", Count: 1}},
			RejectedEdits:   []RejectedEdit{{Op: "insert_after", Target: "Answer with a number.", Content: strings.Repeat("long ", 50)}}},
	}
}

func sampleItems(mode string) []Item {
	switch mode {
	case ModeRewrite:
		return []Item{{Type: "clarify", Title: "Units", Motivation: "3 unit errors", Instruction: "Name the unit.", PriorityHint: "high", SupportCount: 3, SourceType: "failure", MergeLevel: 1}}
	case ModeFullRewrite:
		return []Item{{Title: "v2", ChangeSummary: []string{"unit rule"}, NewSkill: sampleSkill + "More.\n", SupportCount: 8, SourceType: "success"}}
	default:
		return []Item{
			{Op: "replace", Target: "Answer with a number.", Content: "Answer with a number and its unit.", SupportCount: 3, SourceType: "failure", MergeLevel: 2, Label: "SKILL_DEFECT"},
			{Op: "append", Content: "Cite the passage.", SupportCount: 1, SourceType: "success"},
		}
	}
}

func samplePairs() []Pair {
	return []Pair{
		{ID: "t1", Task: "2+2 in apples", Category: "regressed",
			Prev:           Outcome{Hard: 1, Soft: 1, PredictedAnswer: "4 apples"},
			Curr:           Outcome{Hard: 0, Soft: 0.5, PredictedAnswer: "4", FailReason: "unit: missing"},
			PrevTrajectory: []Message{{Role: "user", Content: "q"}, {Role: "assistant", Content: "4 apples"}},
			CurrTrajectory: []Message{{Role: "user", Content: "q"}, {Role: "assistant", Content: "4"}}},
		{ID: "t2", Task: "3+3", Category: "stable_success", Prev: Outcome{Hard: 1, Soft: 1}, Curr: Outcome{Hard: 1, Soft: 1}},
	}
}

// samplePayload returns a fully populated input for a prompt, with Kind
// and Mode left empty for Render to fill in.
func samplePayload(name, mode string, skillAware bool) any {
	switch name {
	case AnalystFailure, AnalystSuccess:
		return AnalystInput{
			Skill: sampleSkill, Budget: 4, StepBuffer: sampleBuffer(), MetaSkill: "- Short rules work.", SkillAware: skillAware, BatchSize: 1,
			Trajectories: []Trajectory{{
				ID: "q1", Task: "How far? <km>", TaskType: "math", FailReason: "EM=0: wrong unit", NTurns: 2, Hard: 0, Soft: 0.5,
				Answer: "5 miles", Reference: "8 km",
				Messages: []Message{{Role: "system", Content: "skill"}, {Role: "user", Content: "How far?"}, {Role: "assistant", Content: "5 miles"}},
			}},
		}
	case MergeFailure, MergeSuccess:
		return MergeInput{Skill: sampleSkill, MetaSkill: "notes", Level: 2, Patches: [][]Item{sampleItems(mode), sampleItems(mode)}}
	case MergeFinal:
		return MergeFinalInput{Skill: sampleSkill, MetaSkill: "notes", Failure: sampleItems(mode), Success: sampleItems(mode)}
	case Ranking:
		return RankInput{Skill: sampleSkill, MetaSkill: "notes", Budget: 1, Items: sampleItems(mode)}
	case LRController:
		return LRInput{Skill: sampleSkill, MetaSkill: "notes", N: 40, Hard: 0.55, Soft: 0.7, Items: []string{"[replace] unit rule", "[append] cite"}, StepBuffer: sampleBuffer()}
	case Rewrite:
		return RewriteInput{Skill: sampleSkill, Suggestions: sampleItems(ModeRewrite), StepBuffer: sampleBuffer()}
	case SlowUpdate, MetaSkill:
		return EpochInput{PrevSkill: "# Old\n", Skill: sampleSkill, Previous: "- Check units.", Counts: map[string]int{"regressed": 1, "stable_success": 1}, Pairs: samplePairs()}
	case Consolidate:
		return ConsolidateInput{Notes: []string{"Check units.", "Always check the unit.", "Cite sources."}}
	}
	panic("no sample for " + name)
}

func forEachPrompt(t *testing.T, f func(t *testing.T, name, mode string)) {
	t.Helper()
	for _, name := range Names() {
		for _, mode := range Modes(name) {
			t.Run(name+"/"+cmpOr(mode, "-"), func(t *testing.T) {
				t.Parallel()
				f(t, name, mode)
			})
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func TestEveryPromptRendersAndRoundTrips(t *testing.T) {
	t.Parallel()
	s := New(nil)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if got := len(Names()); got != 11 {
		t.Errorf("len(Names()) = %d, want 11", got)
	}
	forEachPrompt(t, func(t *testing.T, name, mode string) {
		for _, indent := range []bool{false, true} {
			in := samplePayload(name, mode, true)
			system, user, err := s.Render(name, mode, in, RenderOptions{Indent: indent})
			if err != nil {
				t.Fatalf("Render(%s, %q) = %v", name, mode, err)
			}
			for _, bad := range []string{"<no value>", "{{", "}}\n"} {
				if strings.Contains(system, bad) {
					t.Errorf("system prompt contains %q", bad)
				}
			}
			if !strings.Contains(system, "## Reply format") || !strings.Contains(system, "Output schema") {
				t.Errorf("system prompt lacks the reply format or schema:\n%s", system)
			}
			if strings.Contains(system, "\n\n\n") {
				t.Errorf("system prompt has a run of blank lines")
			}

			kind, raw, err := ExtractPayload(user)
			if err != nil {
				t.Fatalf("ExtractPayload = %v\nuser message:\n%s", err, user)
			}
			if kind != name {
				t.Errorf("payload kind = %q, want %q", kind, name)
			}
			got := reflect.New(reflect.TypeOf(in))
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(got.Interface()); err != nil {
				t.Fatalf("decode payload: %v\n%s", err, raw)
			}
			want := reflect.New(reflect.TypeOf(in)).Elem()
			want.Set(reflect.ValueOf(in))
			want.FieldByName("Kind").SetString(name)
			if f := want.FieldByName("Mode"); f.IsValid() {
				f.SetString(mode)
			}
			if diff := cmp.Diff(want.Interface(), got.Elem().Interface()); diff != "" {
				t.Errorf("payload round trip (-want +got):\n%s", diff)
			}
			if bytes.Contains(raw, []byte("```")) {
				t.Errorf("payload contains an unescaped fence")
			}
			if !strings.Contains(string(raw), "<!-- SLOW_UPDATE_START -->") && name != Consolidate {
				t.Errorf("payload escapes the skill's markers: %s", raw)
			}
		}
	})
}

// itemKeys are the Item fields a mode's replies carry.
var itemKeys = map[string][]string{
	ModePatch:       {"Op", "Target", "Content"},
	ModeRewrite:     {"Type", "Title", "Motivation", "Instruction", "PriorityHint"},
	ModeFullRewrite: {"Title", "ChangeSummary", "NewSkill"},
}

// mergedKeys are the Item fields merge replies add; coordinatorKeys are
// stamped by code and never asked of a model; labelKeys only in
// skill-aware analyst replies.
var (
	mergedKeys      = []string{"SupportCount", "SourceType"}
	coordinatorKeys = []string{"MergeLevel"}
	labelKeys       = []string{"Label"}
	// packageKeys only in patch-mode replies of a package run (package.md).
	packageKeys = []string{"File"}
)

func TestItemKeyGroupsCoverItem(t *testing.T) {
	t.Parallel()
	var all []string
	for _, ks := range itemKeys {
		all = append(all, ks...)
	}
	all = append(append(append(append(all, mergedKeys...), coordinatorKeys...), labelKeys...), packageKeys...)
	it := reflect.TypeFor[Item]()
	for i := range it.NumField() {
		if !slices.Contains(all, it.Field(i).Name) {
			t.Errorf("Item.%s is in no key group of this test: say which replies carry it", it.Field(i).Name)
		}
	}
}

// jsonKey returns a struct field's JSON key.
func jsonKey(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// replyKeys walks a reply type by reflection and returns the JSON keys a
// (name, mode) reply must carry: every key of the reply struct and of the
// structs it holds, less those that belong to other modes, the other
// analyst side, or skill-aware replies when skillAware is false.
func replyKeys(t *testing.T, name, mode string, skillAware bool) []string {
	t.Helper()
	var reply reflect.Type
	switch name {
	case AnalystFailure, AnalystSuccess:
		reply = reflect.TypeFor[AnalystReply]()
	case MergeFailure, MergeSuccess, MergeFinal:
		reply = reflect.TypeFor[MergeReply]()
	case Ranking:
		reply = reflect.TypeFor[RankReply]()
	case LRController:
		reply = reflect.TypeFor[LRReply]()
	case Rewrite:
		reply = reflect.TypeFor[RewriteReply]()
	case SlowUpdate:
		reply = reflect.TypeFor[SlowUpdateReply]()
	case MetaSkill:
		reply = reflect.TypeFor[MetaSkillReply]()
	case Consolidate:
		reply = reflect.TypeFor[ConsolidateReply]()
	default:
		t.Fatalf("no reply type for %s", name)
	}
	itemFields := slices.Clone(itemKeys[mode])
	if strings.HasPrefix(name, "merge_") {
		itemFields = append(itemFields, mergedKeys...)
	}
	if skillAware && mode != ModeFullRewrite && strings.HasPrefix(name, "analyst_") {
		itemFields = append(itemFields, labelKeys...)
	}
	var keys []string
	var walk func(t reflect.Type)
	walk = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct {
			return
		}
		for i := range typ.NumField() {
			f := typ.Field(i)
			key := jsonKey(f)
			switch {
			case typ == reflect.TypeFor[Item]() && !slices.Contains(itemFields, f.Name):
				continue
			case (typ == reflect.TypeFor[PatchBody]() || typ == reflect.TypeFor[MergeReply]()) &&
				slices.Contains([]string{"edits", "revise_suggestions", "skill_candidates"}, key) && key != PayloadKey(mode):
				continue
			case typ == reflect.TypeFor[AnalystReply]() && key == "failure_summary" && name != AnalystFailure,
				typ == reflect.TypeFor[AnalystReply]() && key == "success_patterns" && name != AnalystSuccess,
				typ == reflect.TypeFor[AnalystReply]() && key == "appendix_notes" && (!skillAware || mode == ModeFullRewrite):
				continue
			}
			keys = append(keys, key)
			walk(f.Type)
		}
	}
	walk(reply)
	return keys
}

func TestSchemaMentionsEveryReplyKey(t *testing.T) {
	t.Parallel()
	s := New(nil)
	forEachPrompt(t, func(t *testing.T, name, mode string) {
		for _, aware := range []bool{false, true} {
			system, _, err := s.Render(name, mode, samplePayload(name, mode, aware), RenderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, key := range replyKeys(t, name, mode, aware) {
				if !strings.Contains(system, `"`+key+`"`) {
					t.Errorf("skill_aware=%v: system prompt does not mention reply key %q", aware, key)
				}
			}
			// Keys of other modes must not leak into the schema.
			for _, other := range []string{"edits", "revise_suggestions", "skill_candidates"} {
				if strings.HasPrefix(name, "analyst_") || strings.HasPrefix(name, "merge_") {
					if other != PayloadKey(mode) && strings.Contains(system, `"`+other+`"`) {
						t.Errorf("system prompt for mode %s mentions %q", mode, other)
					}
				}
			}
		}
	})
}

func TestCommonRulesStated(t *testing.T) {
	t.Parallel()
	s := New(nil)
	forEachPrompt(t, func(t *testing.T, name, mode string) {
		system, _, err := s.Render(name, mode, samplePayload(name, mode, false), RenderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		editing := strings.HasPrefix(name, "analyst_") || strings.HasPrefix(name, "merge_") || name == Ranking || name == Rewrite
		markers := []string{"<!-- SLOW_UPDATE_START -->", "<!-- SLOW_UPDATE_END -->", "<!-- APPENDIX_START -->", "<!-- APPENDIX_END -->"}
		if name == SlowUpdate {
			markers = markers[:2]
		} else if !editing {
			markers = nil
		}
		for _, marker := range markers {
			if !strings.Contains(system, marker) {
				t.Errorf("system prompt does not name %s", marker)
			}
		}
		if mode == ModePatch && !strings.Contains(system, "character for character") && name != Ranking {
			t.Errorf("patch-mode prompt does not require exact targets")
		}
		if (strings.HasPrefix(name, "analyst_") && mode != ModeFullRewrite) && !strings.Contains(system, "`budget`") {
			t.Errorf("analyst prompt does not state the budget")
		}
		if (strings.HasPrefix(name, "analyst_") || name == LRController || name == Rewrite) && !strings.Contains(system, "rejected") {
			t.Errorf("prompt does not mention rejected changes")
		}
	})
}

func TestSkillAwareBlock(t *testing.T) {
	t.Parallel()
	s := New(nil)
	for _, name := range []string{AnalystFailure, AnalystSuccess} {
		for _, mode := range Modes(name) {
			for _, aware := range []bool{false, true} {
				system, _, err := s.Render(name, mode, samplePayload(name, mode, aware), RenderOptions{})
				if err != nil {
					t.Fatal(err)
				}
				marker := map[string]string{AnalystFailure: "EXECUTION_LAPSE", AnalystSuccess: "DISCOVERY"}[name]
				want := aware && mode != ModeFullRewrite
				if got := strings.Contains(system, marker); got != want {
					t.Errorf("%s/%s skill_aware=%v: block present = %v, want %v", name, mode, aware, got, want)
				}
				if want && !strings.Contains(system, `"appendix_notes"`) {
					t.Errorf("%s/%s: skill-aware block lacks appendix_notes", name, mode)
				}
			}
		}
	}
}

func TestStepBufferGolden(t *testing.T) {
	t.Parallel()
	got := RenderStepBuffer(sampleBuffer())
	golden := filepath.Join("testdata", "step_buffer.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("RenderStepBuffer (-want +got):\n%s", diff)
	}
	if RenderStepBuffer(nil) != "" {
		t.Errorf("RenderStepBuffer(nil) = %q, want empty", RenderStepBuffer(nil))
	}
}

func TestUserMessageBlocks(t *testing.T) {
	t.Parallel()
	s := New(nil)
	_, user, err := s.Render(AnalystFailure, ModePatch, samplePayload(AnalystFailure, ModePatch, false), RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fence := strings.LastIndex(user, "```json")
	sb := strings.Index(user, "## Previous steps in this epoch")
	ms := strings.Index(user, metaSkillHeading)
	if sb < 0 || ms < 0 || sb > fence || ms > fence || sb > ms {
		t.Errorf("want step buffer, then meta skill, then the payload fence; got positions %d, %d, %d in:\n%s", sb, ms, fence, user)
	}
	if !strings.Contains(user, "Step 3 — reject (5/40 failed)") || !strings.Contains(user, metaSkillNote) {
		t.Errorf("user message lacks the readable blocks:\n%s", user)
	}
	if !strings.HasSuffix(user, "\n```\n") {
		t.Errorf("user message does not end with the payload fence")
	}

	_, user, err = s.Render(AnalystFailure, ModePatch, samplePayload(AnalystFailure, ModePatch, false), RenderOptions{PayloadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(user, "## Previous steps") || strings.Contains(user, metaSkillHeading) {
		t.Errorf("PayloadOnly message has readable blocks:\n%s", user)
	}
	// Merge prompts have a meta skill but no step buffer.
	_, user, err = s.Render(MergeFailure, ModePatch, samplePayload(MergeFailure, ModePatch, false), RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(user, "## Previous steps") || !strings.Contains(user, metaSkillHeading) {
		t.Errorf("merge message blocks wrong:\n%s", user)
	}
}

func TestPayloadForms(t *testing.T) {
	t.Parallel()
	s := New(nil)
	in := RankInput{Skill: "s", Budget: 2, Items: sampleItems(ModePatch)}
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, p := range []any{in, &in, json.RawMessage(raw), raw} {
		_, user, err := s.Render(Ranking, ModePatch, p, RenderOptions{})
		if err != nil {
			t.Fatalf("Render(%T) = %v", p, err)
		}
		users = append(users, user)
	}
	// A prompt without variants ignores the run's update mode.
	sysPlain, userPlain, err := s.Render(LRController, "", LRInput{N: 1}, RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sysMode, userMode, err := s.Render(LRController, ModeFullRewrite, LRInput{N: 1}, RenderOptions{})
	if err != nil || sysMode != sysPlain || userMode != userPlain {
		t.Errorf("Render(lr_controller, full_rewrite_minibatch) = %v, or differs from mode \"\"", err)
	}
	for i := 1; i < len(users); i++ {
		if users[i] != users[0] {
			t.Errorf("payload form %d renders differently:\n%s\nvs\n%s", i, users[i], users[0])
		}
	}
	if in.Kind != "" || in.Mode != "" {
		t.Errorf("Render changed the caller's payload: %+v", in)
	}
}

func TestRenderErrors(t *testing.T) {
	t.Parallel()
	s := New(nil)
	tests := []struct {
		name, mode string
		payload    any
		want       string
		is         error
	}{
		{"analyst", ModePatch, AnalystInput{}, `prompts: "analyst": unknown prompt`, ErrUnknownPrompt},
		{AnalystFailure, "edits", AnalystInput{}, `prompts: analyst_failure: mode "edits": unknown mode`, ErrUnknownMode},
		{AnalystFailure, "", AnalystInput{}, `prompts: analyst_failure: mode "": unknown mode`, ErrUnknownMode},
		{Ranking, ModeFullRewrite, RankInput{}, `prompts: ranking: mode "full_rewrite_minibatch": unknown mode`, ErrUnknownMode},
		{LRController, "edits", LRInput{}, `prompts: lr_controller: mode "edits": unknown mode`, ErrUnknownMode},
		{Ranking, ModePatch, AnalystInput{}, "prompts: ranking: payload is prompts.AnalystInput, want prompts.RankInput", nil},
		{Ranking, ModePatch, nil, "prompts: ranking: payload is <nil>, want prompts.RankInput", nil},
		{Ranking, ModePatch, (*RankInput)(nil), "prompts: ranking: payload is *prompts.RankInput, want prompts.RankInput", nil},
		{Ranking, ModePatch, RankInput{Kind: "merge_final"}, `prompts: ranking: payload kind is "merge_final", want "ranking"`, nil},
		{Ranking, ModePatch, RankInput{Mode: ModeRewrite}, `prompts: ranking: payload mode is "rewrite_from_suggestions", want "patch"`, nil},
		{Ranking, ModePatch, []byte(`{"budget": 1, "extra": true}`), `prompts: ranking: decode payload: json: unknown field "extra"`, nil},
	}
	for _, tt := range tests {
		_, _, err := s.Render(tt.name, tt.mode, tt.payload, RenderOptions{})
		if err == nil || err.Error() != tt.want {
			t.Errorf("Render(%s, %q, %T) = %v, want %s", tt.name, tt.mode, tt.payload, err, tt.want)
		}
		if tt.is != nil && !errors.Is(err, tt.is) {
			t.Errorf("Render(%s, %q) error is not %v", tt.name, tt.mode, tt.is)
		}
	}
}

func TestOverridesAndNotes(t *testing.T) {
	t.Parallel()
	s := New(map[string]string{
		"analyst_failure.patch": "# Custom failure analyst for {{.Mode}}\n\n{{template \"edit_ops\" .}}\n\n{{template \"analyst_schema\" .}}",
		"analyst_success":       "Custom success analyst ({{.Items}}).",
	})
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	s.WithAnalystNotes("searchqa", "Failure types: wrong_entity, no_answer.")

	render := func(name, mode, bench string) string {
		t.Helper()
		system, _, err := s.Render(name, mode, samplePayload(name, mode, false), RenderOptions{Bench: bench})
		if err != nil {
			t.Fatal(err)
		}
		return system
	}
	if got := render(AnalystFailure, ModePatch, ""); !strings.HasPrefix(got, "# Custom failure analyst for patch") || !strings.Contains(got, `"failure_summary"`) {
		t.Errorf("override of analyst_failure.patch not used:\n%s", got)
	}
	if got := render(AnalystFailure, ModeRewrite, ""); !strings.HasPrefix(got, "# Role: failure analyst (revision suggestions)") {
		t.Errorf("a mode-specific override leaks into another mode:\n%s", got)
	}
	if got := render(AnalystSuccess, ModeRewrite, ""); got != "Custom success analyst (suggestions).\n" {
		t.Errorf("name-wide override = %q", got)
	}
	notes := "## Notes for this benchmark\n\nFailure types: wrong_entity, no_answer."
	if got := render(AnalystFailure, ModeRewrite, "searchqa"); !strings.HasSuffix(got, notes+"\n") {
		t.Errorf("analyst prompt lacks the benchmark notes:\n%s", got)
	}
	if got := render(AnalystSuccess, ModePatch, "searchqa"); !strings.Contains(got, notes) {
		t.Errorf("overridden analyst prompt lacks the benchmark notes:\n%s", got)
	}
	if got := render(AnalystFailure, ModeRewrite, "docvqa"); strings.Contains(got, notes) {
		t.Errorf("notes of another benchmark added")
	}
	if got := render(MergeFailure, ModePatch, "searchqa"); strings.Contains(got, notes) {
		t.Errorf("notes added to a merge prompt")
	}

	bad := New(map[string]string{
		"analyst_failure.patch":          "{{template \"no_such_block\" .}}",
		"ranking.full_rewrite_minibatch": "x",
		"nonsense":                       "x",
	})
	err := bad.Err()
	for _, want := range []string{`override "analyst_failure.patch"`, `override "ranking.full_rewrite_minibatch": unknown prompt`, `override "nonsense": unknown prompt`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Err() = %v, want it to contain %s", err, want)
		}
	}
	if _, _, err := bad.Render(AnalystFailure, ModePatch, samplePayload(AnalystFailure, ModePatch, false), RenderOptions{}); err == nil {
		t.Errorf("Render with a broken override = nil error")
	}
	if _, _, err := bad.Render(AnalystFailure, ModeRewrite, samplePayload(AnalystFailure, ModeRewrite, false), RenderOptions{}); err != nil {
		t.Errorf("Render of an unaffected mode = %v", err)
	}
}

func TestExtractPayload(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, kind, payload, err string
	}{
		{"lead\n\n```json\n{\"kind\":\"a\"}\n```\n", "a", `{"kind":"a"}`, ""},
		{"```json\n{\"kind\":\"b\"}\n```", "b", `{"kind":"b"}`, ""},
		{"x\n```json\n{\"kind\":\"old\"}\n```\nmore\n```json\n{\"kind\":\"new\"}\n```\n", "new", `{"kind":"new"}`, ""},
		{"no fence", "", "", "prompts: no ```json fence"},
		{"x\n```json\n{\"kind\":1", "", "", "prompts: unterminated ```json fence"},
		{"x\n```json\nnot json\n```", "", "", "prompts: payload: invalid character 'o' in literal null (expecting 'u')"},
	}
	for _, tt := range tests {
		kind, raw, err := ExtractPayload(tt.in)
		if fmt.Sprint(err) != cmpOr(tt.err, "<nil>") || kind != tt.kind || string(raw) != tt.payload {
			t.Errorf("ExtractPayload(%q) = %q, %s, %v; want %q, %s, %s", tt.in, kind, raw, err, tt.kind, tt.payload, tt.err)
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	s := New(nil)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.WithAnalystNotes(fmt.Sprint("bench", i%2), "notes")
			for _, mode := range Modes(AnalystFailure) {
				if _, _, err := s.Render(AnalystFailure, mode, samplePayload(AnalystFailure, mode, true), RenderOptions{Bench: "bench0"}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
}
