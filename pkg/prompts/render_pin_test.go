package prompts_test

import (
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// renderCase is one rendering the pin test makes.
type renderCase struct {
	key        string
	name, mode string
	payload    any
	opts       prompts.RenderOptions
}

// renderCases are the renderings whose bytes are pinned: every prompt and
// mode, with and without the skill-aware block, with a package skill and
// a trained description where they change the prompt, with a benchmark's
// notes, an override, an indented payload, without the readable blocks,
// and the recorded analyst payload (testdata/analyst_failure.json, from a
// paper-preset run) as JSON.
func renderCases(t testing.TB) []renderCase {
	t.Helper()
	bundle := testBundle(t)
	with := func(p any, field string, v any) any {
		rv := reflect.New(reflect.TypeOf(p)).Elem()
		rv.Set(reflect.ValueOf(p))
		f := rv.FieldByName(field)
		if !f.IsValid() {
			return nil
		}
		f.Set(reflect.ValueOf(v))
		return rv.Interface()
	}
	var cases []renderCase
	for _, name := range prompts.Names() {
		for _, mode := range prompts.Modes(name) {
			key := name + "/" + mode
			for _, aware := range []bool{false, true} {
				k := fmt.Sprintf("%s/aware=%v", key, aware)
				p := prompts.SamplePayload(name, mode, aware)
				cases = append(cases,
					renderCase{k, name, mode, p, prompts.RenderOptions{}},
					renderCase{k + "/notes", name, mode, p, prompts.RenderOptions{Bench: "searchqa"}},
					renderCase{k + "/indent", name, mode, p, prompts.RenderOptions{Indent: true}},
					renderCase{k + "/payload-only", name, mode, p, prompts.RenderOptions{PayloadOnly: true}})
				if pp := with(p, "Skill", bundle); pp != nil {
					cases = append(cases, renderCase{k + "/package", name, mode, pp, prompts.RenderOptions{}})
				}
				if pp := with(p, "TrainDescription", true); pp != nil {
					cases = append(cases, renderCase{k + "/describe", name, mode, pp, prompts.RenderOptions{}})
				}
			}
		}
	}
	setDesc := []prompts.Item{{Op: prompts.OpSetDescription, Content: "Unit rules. Read it first."}}
	cases = append(cases,
		renderCase{"merge_failure/patch/set_description", prompts.MergeFailure, prompts.ModePatch,
			prompts.MergeInput{Skill: bundle, Level: 1, Patches: [][]prompts.Item{setDesc}}, prompts.RenderOptions{}},
		renderCase{"ranking/patch/set_description", prompts.Ranking, prompts.ModePatch,
			prompts.RankInput{Skill: "# Units\n", Budget: 1, Items: setDesc}, prompts.RenderOptions{}})
	raw := recordedAnalystPayload(t)
	cases = append(cases, renderCase{"recorded/analyst_failure/patch", prompts.AnalystFailure, prompts.ModePatch, raw, prompts.RenderOptions{}},
		renderCase{"recorded/analyst_failure/patch/notes", prompts.AnalystFailure, prompts.ModePatch, raw, prompts.RenderOptions{Bench: "searchqa"}})
	return cases
}

// recordedAnalystPayload is testdata/analyst_failure.json: an analyst's
// payload from the paper preset (six failed trajectories, five steps in
// the step buffer), as JSON.
func recordedAnalystPayload(t testing.TB) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "analyst_failure.json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pinnedSet is the Set the pin test renders with: one override (whose
// template leaves blank runs to tidy) and one benchmark's notes.
func pinnedSet() *prompts.Set {
	s := prompts.New(map[string]string{
		"analyst_success.rewrite_from_suggestions": "Custom {{.Items}}.\n\n\n \n{{template \"edit_ops\" .}}",
	})
	return s.WithAnalystNotes("searchqa", "Failure types: wrong_entity, no_answer.")
}

// TestRenderBytesPinned pins the bytes of every rendering in renderCases
// (SHA-256 of the system and of the user message) to
// testdata/render_pinned.txt, recorded before the renderer was made
// faster: a speed-up must not change one byte a model reads. A change
// that means to change the prompts records the file again with
//
//	go test ./pkg/prompts -run TestRenderBytesPinned -update
func TestRenderBytesPinned(t *testing.T) {
	t.Parallel()
	s := pinnedSet()
	var b strings.Builder
	for _, c := range renderCases(t) {
		system, user, err := s.Render(c.name, c.mode, c.payload, c.opts)
		if err != nil {
			t.Fatalf("%s: %v", c.key, err)
		}
		fmt.Fprintf(&b, "%s %x %x\n", c.key, sha256.Sum256([]byte(system)), sha256.Sum256([]byte(user)))
	}
	got := b.String()
	golden := filepath.Join("testdata", "render_pinned.txt")
	if f := flag.Lookup("update"); f != nil && f.Value.String() == "true" {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	gotLines, wantLines := strings.Split(got, "\n"), strings.Split(string(want), "\n")
	if len(gotLines) != len(wantLines) {
		t.Fatalf("%d renderings, %s has %d", len(gotLines)-1, golden, len(wantLines)-1)
	}
	for i := range gotLines {
		if gotLines[i] != wantLines[i] {
			t.Errorf("rendering changed:\n got: %s\nwant: %s", gotLines[i], wantLines[i])
		}
	}
}
