package sim

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/skillfleet/skillfleet/internal/testrace"
	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/envserver/textgame"
	"github.com/skillfleet/skillfleet/pkg/bench/registry"
	"github.com/skillfleet/skillfleet/pkg/bench/synth"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// synthWorld writes a small world of benchmark name and returns its
// splits, its environment and its manifest.
func synthWorld(t *testing.T, name string, cfg map[string]any) (*bench.Splits, bench.Env, *synth.Manifest) {
	t.Helper()
	dir := t.TempDir()
	man, err := synth.Write(name, dir, synth.PresetSmall, 3)
	if err != nil {
		t.Fatal(err)
	}
	s, err := registry.LoadSplits(name, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if cfg == nil {
		cfg = map[string]any{}
	}
	cfg["name"], cfg["split_dir"] = name, dir
	if name == "textgame" || name == "alfworld" {
		cfg["env_server"], cfg["max_steps"], cfg["history"] = serveLayout(t, filepath.Join(dir, synth.LayoutFile)), 20, 30
	}
	raw, _ := json.Marshal(cfg)
	env, err := registry.New(name, raw)
	if err != nil {
		t.Fatal(err)
	}
	return s, env, man
}

// worldScore is the mean hard score of items under skill.
func worldScore(t *testing.T, m *Model, env bench.Env, items []bench.Item, skill string) (float64, []prompts.Trajectory) {
	t.Helper()
	sum := 0.0
	var trs []prompts.Trajectory
	for _, it := range items {
		ep, err := env.Episode(t.Context(), m, bench.EpisodeRequest{Item: it, Skill: skill, Model: "target", Split: bench.SplitTrain})
		if err != nil {
			t.Fatalf("Episode(%s): %v", it.ID, err)
		}
		sum += ep.Hard
		trs = append(trs, trajectory(it.ID, ep))
	}
	return sum / float64(len(items)), trs
}

// checkWorld checks the sim on a world: the reference skill (every rule)
// scores near 1, a skill with no rule scores low, and a failure analyst
// shown the failures under the no-rule skill proposes the rules behind
// them.
func checkWorld(t *testing.T, name string, cfg map[string]any, wantProposed int) {
	t.Helper()
	s, env, man := synthWorld(t, name, cfg)
	if name == "spreadsheet" {
		s.Test = s.Test[:min(len(s.Test), 10)] // every episode runs Python in the sandbox
	}
	m := quiet()
	ref := synth.ReferenceSkill("Reference", "Answer the task.", man.Rules)
	bare := synth.ReferenceSkill("Bare", "Answer the task.", nil)
	good, _ := worldScore(t, m, env, s.Test, ref)
	bad, trs := worldScore(t, m, env, s.Test, bare)
	t.Logf("%s: reference skill %.3f, bare skill %.3f", name, good, bad)
	if good < 0.95 || bad > 0.5 {
		t.Fatalf("%s: reference skill scores %.3f (want >= 0.95), bare skill %.3f (want <= 0.5)", name, good, bad)
	}
	var fails []prompts.Trajectory
	for _, tr := range trs {
		if tr.Hard < 1 && len(fails) < 8 {
			fails = append(fails, tr)
		}
	}
	var out prompts.AnalystReply
	ask(t, m, prompts.AnalystFailure, prompts.ModePatch, prompts.AnalystInput{
		Kind: prompts.AnalystFailure, Mode: prompts.ModePatch, Skill: bare, Budget: 8, Trajectories: fails, BatchSize: len(fails),
	}, &out)
	items := out.Patch.Items(prompts.ModePatch)
	covered := 0
	text := bare
	for _, it := range items {
		text += "\n" + it.Content
	}
	for _, id := range man.Rules {
		if ru, _ := synth.LookupRule(id); ru.Covered(text) {
			covered++
		}
	}
	if covered < wantProposed {
		t.Fatalf("%s: the failure analyst's %d edits state %d of the world's rules, want >= %d: %+v", name, len(items), covered, wantProposed, items)
	}
}

func TestWorldSearchQA(t *testing.T) { checkWorld(t, "searchqa", nil, 3) }
func TestWorldJSONL(t *testing.T) {
	checkWorld(t, "jsonl", map[string]any{"prompt_template": synth.JSONLTemplate, "scorer": "exact"}, 3)
}
func TestWorldLiveMath(t *testing.T) { checkWorld(t, "livemath", nil, 3) }
func TestWorldDocVQA(t *testing.T)   { checkWorld(t, "docvqa", nil, 3) }

func TestWorldOfficeQA(t *testing.T) {
	checkWorld(t, "officeqa", map[string]any{"docs_dir": "docs"}, 3)
}

// serveLayout serves a household world's games on a loopback port until
// the test ends.
func serveLayout(t *testing.T, layout string) string {
	t.Helper()
	games, err := textgame.LoadLayout(layout)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- textgame.Serve(ctx, ln, textgame.NewLayoutServer(games)) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return ln.Addr().String()
}

func TestWorldTextGame(t *testing.T) {
	testrace.SkipExperiment(t, "plays the text-game world's items twice")
	checkWorld(t, "textgame", nil, 3)
}

func TestWorldALFWorld(t *testing.T) { checkWorld(t, "alfworld", nil, 3) }

func TestWorldSpreadsheet(t *testing.T) {
	testrace.SkipExperiment(t, "runs the spreadsheet world's episodes in the Python sandbox")
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	checkWorld(t, "spreadsheet", map[string]any{"python": "/usr/bin/python3"}, 2)
}
