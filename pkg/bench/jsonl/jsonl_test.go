package jsonl_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/benchtest"
	"github.com/skillfleet/skillfleet/pkg/bench/jsonl"
	"github.com/skillfleet/skillfleet/pkg/bench/registry"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

func items(t *testing.T) map[string]bench.Item {
	t.Helper()
	raws, err := bench.ReadItemsFile("testdata/qa.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bench.Item{}
	for _, r := range raws {
		var f struct{ ID string }
		_ = json.Unmarshal(r, &f)
		out[f.ID] = bench.Item{ID: f.ID, Raw: r}
	}
	return out
}

func env(t *testing.T, cfg string) bench.Env {
	t.Helper()
	var c jsonl.Config
	if err := json.Unmarshal([]byte(cfg), &c); err != nil {
		t.Fatal(err)
	}
	e, err := jsonl.New(c)
	if err != nil {
		t.Fatalf("New(%s): %v", cfg, err)
	}
	return e
}

func run(t *testing.T, e bench.Env, it bench.Item, reply string) *bench.Episode {
	t.Helper()
	ep, err := e.Episode(context.Background(), benchtest.Text(reply), bench.EpisodeRequest{Item: it, Skill: "s", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

func TestScorers(t *testing.T) {
	its := items(t)
	for _, tc := range []struct {
		name, cfg, item, reply string
		hard, soft             float64
	}{
		{"exact hit", `{"scorer":"exact"}`, "q1", "<answer>42</answer>", 1, 1},
		{"exact is case- and punctuation-sensitive", `{"scorer":"exact"}`, "q2", "<answer>jupiter.</answer>", 0, 0},
		{"normalized", `{}`, "q2", "<answer>jupiter.</answer>", 1, 1},
		{"normalized second gold", `{}`, "q2", "<answer>The planet Jupiter</answer>", 1, 1},
		// f1: "gas giant jupiter" vs "jupiter": P 1/3, R 1 → 0.5; vs
		// "planet jupiter": common 1, P 1/3, R 1/2 → 0.4. Best 0.5 < 1.
		{"f1 partial", `{"scorer":"f1"}`, "q2", "<answer>gas giant Jupiter</answer>", 0, 0.5},
		{"f1 threshold", `{"scorer":"f1","hard_threshold":0.5}`, "q2", "<answer>gas giant Jupiter</answer>", 1, 0.5},
		{"numeric exact", `{"scorer":"numeric"}`, "q4", "<answer>212 °F</answer>", 1, 1},
		{"numeric outside tolerance", `{"scorer":"numeric","tolerance_abs":1}`, "q4", "<answer>210</answer>", 0, 0},
		// 1% of 212 is 2.12: 210 is within.
		{"numeric rel tolerance", `{"scorer":"numeric","tolerance_rel":0.01}`, "q4", "<answer>210</answer>", 1, 1},
		{"numeric with commas", `{"scorer":"numeric"}`, "q1", "<answer>$4,2</answer>", 1, 1},
		{"numeric no number", `{"scorer":"numeric"}`, "q1", "<answer>forty-two</answer>", 0, 0},
		{"regex pattern", `{"scorer":"regex","scorer_pattern":"^4[0-9]$"}`, "q1", "<answer>47</answer>", 1, 1},
		{"regex gold as pattern", `{"scorer":"regex"}`, "q2", "<answer>Jupiter!</answer>", 1, 1},
		{"choice label", `{"scorer":"choice"}`, "q3", "<answer>c)</answer>", 1, 1},
		{"choice text", `{"scorer":"choice"}`, "q3", "<answer>11</answer>", 1, 1},
		{"choice wrong", `{"scorer":"choice"}`, "q3", "<answer>A</answer>", 0, 0},
		{"last line extraction", `{"extract":"last_line","scorer":"exact"}`, "q1", "thinking\n42", 1, 1},
		{"whole extraction", `{"extract":"whole","scorer":"exact"}`, "q1", "  42 \n", 1, 1},
	} {
		ep := run(t, env(t, tc.cfg), its[tc.item], tc.reply)
		if ep.Hard != tc.hard || abs(ep.Soft-tc.soft) > 1e-9 {
			t.Errorf("%s: hard %v soft %v, want %v %v (reason %q)", tc.name, ep.Hard, ep.Soft, tc.hard, tc.soft, ep.FailReason)
		}
		if (ep.Hard < 1) != (ep.FailReason != "") {
			t.Errorf("%s: fail reason %q with hard %v", tc.name, ep.FailReason, ep.Hard)
		}
	}
}

func TestCommandScorer(t *testing.T) {
	its := items(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "score.sh")
	// Scores 1 when the answer (stdin) equals the first gold, else "0 0.25";
	// the item JSON must reach it.
	body := `#!/bin/sh
read ans
case "$SKILLFLEET_ITEM" in *'"id":"q1"'*) ;; *) echo "no item" >&2; exit 3;; esac
gold=$(echo "$SKILLFLEET_GOLD" | sed 's/^\["//; s/".*//')
if [ "$ans" = "$gold" ]; then echo 1; else echo "0 0.25"; fi
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	e := env(t, `{"scorer":"command","scorer_command":["`+script+`"]}`)
	if ep := run(t, e, its["q1"], "<answer>42</answer>"); ep.Hard != 1 || ep.Soft != 1 {
		t.Errorf("right answer: %+v", ep)
	}
	if ep := run(t, e, its["q1"], "<answer>41</answer>"); ep.Hard != 0 || ep.Soft != 0.25 {
		t.Errorf("wrong answer: hard %v soft %v", ep.Hard, ep.Soft)
	}
	// A broken scorer is an error naming the item, not a 0 score: here
	// the script's item check fails for q2 (exit 3, "no item" on stderr).
	fails := func(e bench.Env, id, want string) {
		t.Helper()
		m := benchtest.Text("<answer>x</answer>")
		ep, err := e.Episode(context.Background(), m, bench.EpisodeRequest{Item: its[id]})
		if err == nil || !strings.Contains(err.Error(), "jsonl item "+id) || !strings.Contains(err.Error(), want) {
			t.Errorf("broken scorer on %s: err %v, want it to name the item and %q", id, err, want)
		}
		// The target call (10 in, 5 out) is still accounted for.
		if ep == nil || ep.Usage.InputTokens != 10 || ep.Calls != 1 {
			t.Errorf("broken scorer on %s: partial episode %+v", id, ep)
		}
	}
	fails(e, "q2", "no item")
	bad := filepath.Join(dir, "bad.sh")
	_ = os.WriteFile(bad, []byte("#!/bin/sh\necho lots\n"), 0o755)
	fails(env(t, `{"scorer":"command","scorer_command":["`+bad+`"]}`), "q1", "want numbers")
	many := filepath.Join(dir, "many.sh")
	_ = os.WriteFile(many, []byte("#!/bin/sh\necho 1 1 1\n"), 0o755)
	fails(env(t, `{"scorer":"command","scorer_command":["`+many+`"]}`), "q1", `"hard soft"`)
	slow := filepath.Join(dir, "slow.sh")
	_ = os.WriteFile(slow, []byte("#!/bin/sh\nsleep 5\necho 1\n"), 0o755)
	start := time.Now()
	fails(env(t, `{"scorer":"command","scorer_command":["`+slow+`"],"scorer_timeout":"200ms"}`), "q1", "timed out after 200ms")
	// The sleeping child is killed with its process group, not waited for.
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("timed-out scorer took %v", d)
	}
	// A single score below the threshold is soft only; with
	// hard_threshold 0.5, 0.6 passes.
	half := filepath.Join(dir, "half.sh")
	_ = os.WriteFile(half, []byte("#!/bin/sh\necho 0.6\n"), 0o755)
	if ep := run(t, env(t, `{"scorer":"command","scorer_command":["`+half+`"]}`), its["q1"], "x"); ep.Hard != 0 || ep.Soft != 0.6 {
		t.Errorf("0.6 at threshold 1: hard %v soft %v", ep.Hard, ep.Soft)
	}
	if ep := run(t, env(t, `{"scorer":"command","scorer_command":["`+half+`"],"hard_threshold":0.5}`), its["q1"], "x"); ep.Hard != 1 || ep.Soft != 0.6 {
		t.Errorf("0.6 at threshold 0.5: hard %v soft %v", ep.Hard, ep.Soft)
	}
}

func TestJudge(t *testing.T) {
	its := items(t)
	e := env(t, `{"scorer":"judge","judge_rubric":"A haiku has three lines.","judge_model":"judge-1","hard_threshold":0.7}`)
	for _, tc := range []struct {
		judge      string
		hard, soft float64
		reason     string
	}{
		{`{"score": 0.8, "reason": "fine"}`, 1, 0.8, ""},
		{"0.5", 0, 0.5, "judge"},
		{"I like it", 0, 0, "judge reply unparseable"},
		{`{"score": 7}`, 0, 0, "judge reply unparseable"},
		// A bare number must lie in [0, 1] too.
		{"1.5", 0, 0, "judge reply unparseable"},
		{"```json\n{\"score\": 1}\n```", 1, 1, ""},
	} {
		m := &benchtest.Scripted{Replies: []*llm.Response{{Content: "<answer>rain on the roof</answer>"}, {Content: tc.judge}}}
		ep, err := e.Episode(context.Background(), m, bench.EpisodeRequest{Item: its["q5"], Skill: "s", Model: "target-1"})
		if err != nil {
			t.Fatal(err)
		}
		if ep.Hard != tc.hard || ep.Soft != tc.soft || !strings.Contains(ep.FailReason, tc.reason) {
			t.Errorf("judge %q: hard %v soft %v reason %q", tc.judge, ep.Hard, ep.Soft, ep.FailReason)
		}
		// Both calls are paid for; the judge ran on its own model and saw the rubric.
		if ep.Calls != 2 || ep.Usage.InputTokens != 20 || m.Requests[1].Model != "judge-1" ||
			!strings.Contains(m.Requests[1].Messages[1].Content, "three lines") {
			t.Errorf("judge accounting/request: calls %d usage %+v model %q", ep.Calls, ep.Usage, m.Requests[1].Model)
		}
	}
}

func TestConfigAndItemErrors(t *testing.T) {
	for cfg, want := range map[string]string{
		`{"scorer":"fuzzy"}`:                "env.scorer",
		`{"extract":"first"}`:               "env.extract",
		`{"prompt_template":"{{.question"}`: "env.prompt_template",
		`{"scorer":"command"}`:              "env.scorer_command",
		`{"scorer":"judge"}`:                "env.judge_rubric",
		`{"scorer_pattern":"("}`:            "env.scorer_pattern",
		`{"scorer_timeout":"soon"}`:         "env.scorer_timeout",
		`{"tolerance_abs":-1}`:              "env.tolerance_abs",
	} {
		var c jsonl.Config
		_ = json.Unmarshal([]byte(cfg), &c)
		if _, err := jsonl.New(c); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %s", cfg, err, want)
		}
	}
	its := items(t)
	e := env(t, `{"prompt_template":"Q: {{.query}}"}`)
	if _, err := e.Episode(context.Background(), benchtest.Text("x"), bench.EpisodeRequest{Item: its["q1"]}); err == nil ||
		!strings.Contains(err.Error(), "q1") || !strings.Contains(err.Error(), "prompt_template") {
		t.Errorf("template error: %v", err)
	}
	e = env(t, `{"answer_field":"gold"}`)
	if _, err := e.Episode(context.Background(), benchtest.Text("x"), bench.EpisodeRequest{Item: its["q1"]}); err == nil || !strings.Contains(err.Error(), `"gold"`) {
		t.Errorf("missing answer field: %v", err)
	}
	// The template sees the item's fields.
	m := benchtest.Text("<answer>42</answer>")
	e = env(t, `{"prompt_template":"Solve: {{.question}} ({{.task_type}})"}`)
	if _, err := e.Episode(context.Background(), m, bench.EpisodeRequest{Item: its["q1"]}); err != nil {
		t.Fatal(err)
	}
	if got := m.Last().Messages[1].Content; got != "Solve: What is 6 times 7? (arithmetic)" {
		t.Errorf("rendered prompt %q", got)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestSplitDirThroughRegistry: the split dir fixture loads the way a run
// reads it (train/val as JSONL, test as {"data": [...]}), and an episode
// built from the registry renders the template, carries the skill and the
// system prompt, and scores with the configured scorer.
func TestSplitDirThroughRegistry(t *testing.T) {
	s, err := registry.LoadSplits(jsonl.Name, "testdata/split", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Train) != 3 || len(s.Val) != 2 || len(s.Test) != 2 || s.Test[1].ID != "s2" || s.Test[1].TaskType != "percent" {
		t.Fatalf("splits: %d/%d/%d, test[1] %+v", len(s.Train), len(s.Val), len(s.Test), s.Test[1])
	}
	e, err := registry.New(jsonl.Name, json.RawMessage(`{"name":"jsonl","split_dir":"testdata/split","scorer":"numeric",
		"system_prompt":"You are a careful calculator.","prompt_template":"Problem ({{.task_type}}): {{.question}}","unknown_shared_key":1}`))
	if err != nil {
		t.Fatal(err)
	}
	m := benchtest.Text("60/50 = 1.2, so the rise is\n<answer>20%</answer>")
	ep, err := e.Episode(context.Background(), m, bench.EpisodeRequest{Item: s.Test[1], Skill: "Show the ratio first.", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	// The last <answer> is "20%"; its last number 20 equals the first gold "20".
	if ep.Hard != 1 || ep.Soft != 1 || ep.Answer != "20%" || ep.TaskType != "percent" || ep.NTurns != 1 {
		t.Errorf("episode: %+v", ep)
	}
	req := m.Last()
	if sys := req.Messages[0].Content; !strings.HasPrefix(sys, "You are a careful calculator.") || !strings.Contains(sys, "## Skill") || !strings.Contains(sys, "Show the ratio first.") {
		t.Errorf("system prompt %q", sys)
	}
	if got := req.Messages[1].Content; got != "Problem (percent): A price rises from $50 to $60. By what percent did it rise?" {
		t.Errorf("user prompt %q", got)
	}
	if last := ep.Messages[len(ep.Messages)-1]; last.Role != llm.RoleSystem || !strings.Contains(last.Content, `["20","20%"]`) {
		t.Errorf("evaluation message %+v", last)
	}
}

// TestItemErrorsBeforeTheCall: golds the scorer cannot use are errors
// naming the item and the field, found before the target is called.
func TestItemErrorsBeforeTheCall(t *testing.T) {
	for _, tc := range []struct{ cfg, item, want string }{
		{`{"scorer":"numeric"}`, `{"id":"n1","question":"q","answer":"many"}`, `item n1: field "answer": no number`},
		{`{"scorer":"regex"}`, `{"id":"r1","question":"q","answer":"(unclosed"}`, `item r1: field "answer": "(unclosed" is not a valid pattern`},
		{`{"scorer":"choice"}`, `{"id":"c1","question":"q","choices":["x","y"],"answer":"Q"}`, `item c1: field "answer": ["Q"] names none of the choices`},
		{`{"scorer":"choice","choices_field":"options"}`, `{"id":"c2","question":"q","answer":"A"}`, `item c2: field "options" (env.choices_field)`},
		{`{}`, `{"id":"e1","question":"q","answer":[]}`, `item e1: "answer" is an empty list`},
		{`{}`, `{"id":"e2","question":"q"}`, `item e2: no "answer" field`},
		{`{}`, `{"id":"e3","text":"q","answer":"1"}`, `item e3: no question, prompt or input field`},
		{`{}`, `["not an object"]`, `item x:`},
	} {
		m := benchtest.Text("<answer>1</answer>")
		_, err := env(t, tc.cfg).Episode(context.Background(), m, bench.EpisodeRequest{Item: bench.Item{ID: idOf(tc.item), Raw: json.RawMessage(tc.item)}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: err %v, want %q", tc.cfg, tc.item, err, tc.want)
		}
		if m.Calls() != 0 {
			t.Errorf("%s: the target was called for a bad item", tc.item)
		}
	}
	// Exact compares trimmed strings on both sides: gold " 42 " matches "42".
	it := bench.Item{ID: "w", Raw: json.RawMessage(`{"id":"w","question":"q","answer":" 42 "}`)}
	if ep := run(t, env(t, `{"scorer":"exact"}`), it, "<answer>42</answer>"); ep.Hard != 1 {
		t.Errorf("exact with a padded gold: %+v", ep)
	}
}

func idOf(raw string) string {
	var f struct{ ID string }
	if json.Unmarshal([]byte(raw), &f) != nil || f.ID == "" {
		return "x"
	}
	return f.ID
}
