package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillfleet/skillfleet/pkg/pricing"
	"github.com/skillfleet/skillfleet/pkg/rundir"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// The run dirs under testdata: demo is a sim demo run as the coordinator
// wrote it; priced is the same run with real model names, cached tokens,
// retries and one model the table cannot price; partial is a run stopped
// during step 6 (no summary.json or tokens.json, a torn last event); eval
// is a finished `skillfleet eval --baseline` of the demo's seed skill.
var runs = []string{"demo", "priced", "partial", "eval"}

func setup(t *testing.T, run string) *Report {
	t.Helper()
	prices, err := pricing.Load(filepath.Join("testdata", "prices.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Load(filepath.Join("testdata", run), prices)
	if err != nil {
		t.Fatalf("Load(%s) = %v", run, err)
	}
	return r
}

func TestTextGolden(t *testing.T) {
	t.Parallel()
	for _, run := range runs {
		t.Run(run, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			if err := setup(t, run).WriteText(&buf); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", run+".golden")
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), buf.String()); diff != "" {
				t.Errorf("WriteText(%s) differs from %s (-want +got):\n%s", run, golden, diff)
			}
		})
	}
}

func TestSpendMatchesTokensJSON(t *testing.T) {
	t.Parallel()
	r := setup(t, "priced")
	stages, total := r.Spend()
	if total.Totals != r.Tokens.Total {
		t.Errorf("Spend() total = %+v, want tokens.json total %+v", total.Totals, r.Tokens.Total)
	}
	if len(stages) != len(r.Tokens.ByStage) {
		t.Errorf("Spend() has %d stages, tokens.json %d", len(stages), len(r.Tokens.ByStage))
	}
	// The spend chart's columns add up to tokens.json, stage by stage.
	d := r.pageData()
	for _, s := range d.Spend.Stages {
		var sum int64
		for _, v := range s.Tokens {
			sum += v
		}
		if want := r.Tokens.ByStage[s.Stage].Tokens(); sum != want {
			t.Errorf("spend chart stage %s sums to %d, tokens.json says %d", s.Stage, sum, want)
		}
	}
	// A stage with an unpriced model is a lower bound; the total too.
	for _, s := range stages {
		if s.Stage == "rank" && s.Priced {
			t.Error("stage rank (served by an unpriced model) is marked priced")
		}
		if s.Stage == "rollout" && !s.Priced {
			t.Error("stage rollout is marked unpriced")
		}
	}
	if total.Priced {
		t.Error("total is marked fully priced with an unpriced model")
	}
}

func TestPageData(t *testing.T) {
	t.Parallel()
	r := setup(t, "demo")
	d := r.pageData()
	acc, rej, skip := r.Decisions()
	if len(d.Verdicts["accepted"]) != acc || len(d.Verdicts["rejected"]) != rej || len(d.Verdicts["skipped"]) != skip {
		t.Errorf("verdict markers %d/%d/%d, want %d/%d/%d", len(d.Verdicts["accepted"]), len(d.Verdicts["rejected"]), len(d.Verdicts["skipped"]), acc, rej, skip)
	}
	if acc != r.Summary.Accepts || rej != r.Summary.Rejects || skip != r.Summary.Skips {
		t.Errorf("Decisions() = %d, %d, %d; summary.json says %d, %d, %d", acc, rej, skip, r.Summary.Accepts, r.Summary.Rejects, r.Summary.Skips)
	}
	if len(d.Current) != 10 || d.Current[0].X != 0 || d.Current[0].Y != r.Summary.BaselineScore {
		t.Errorf("current series = %v, want the baseline at step 0 and 9 steps", d.Current)
	}
	if len(d.RolloutHard) != 9 || d.RolloutHard[0].Y != r.Steps[1].RolloutHard {
		t.Errorf("rollout series = %v", d.RolloutHard)
	}
	if d.Test == nil || d.Test.Hard[2] != r.Summary.TestHard["final"] {
		t.Errorf("test data = %+v", d.Test)
	}
	if got, want := d.Spend.Labels[0], "baseline"; got != want {
		t.Errorf("first spend column = %q, want %q", got, want)
	}
}

func TestPartialRun(t *testing.T) {
	t.Parallel()
	r := setup(t, "partial")
	if r.Summary != nil || r.Tokens != nil || r.Cost != nil {
		t.Errorf("partial run: summary %v tokens %v cost %v, want none", r.Summary, r.Tokens, r.Cost)
	}
	if r.RunID != "partial-example" {
		t.Errorf("RunID = %q, want it from the run_id file", r.RunID)
	}
	stages, total := r.Spend()
	var want int64
	for _, rec := range r.Steps {
		for _, v := range rec.Tokens {
			want += v.Tokens()
		}
	}
	if total.Tokens() != want || len(stages) == 0 {
		t.Errorf("Spend() total = %d tokens over %d stages, want %d from the step records", total.Tokens(), len(stages), want)
	}
	var buf bytes.Buffer
	if err := r.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), `id="chart-test"`) {
		t.Error("a run without test scores draws a test chart")
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	if _, err := Load(t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), "run directory") {
		t.Errorf("Load(empty dir) = %v, want an error saying it is not a run directory", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "events.jsonl"), []byte("{bad\n{\"type\":\"baseline\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir, nil); err == nil || !strings.Contains(err.Error(), "events.jsonl:1") {
		t.Errorf("Load(corrupt events) = %v, want an error naming events.jsonl:1", err)
	}
	// No price table: tokens but no dollars.
	r, err := Load(filepath.Join("testdata", "demo"), nil)
	if err != nil || r.Cost != nil {
		t.Fatalf("Load(demo, nil prices) = %v, cost %v", err, r.Cost)
	}
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil || strings.Contains(buf.String(), "$") {
		t.Errorf("WriteText without prices printed dollars (%v):\n%s", err, buf.String())
	}
}

// pageJSON extracts the data the page embeds for its charts.
func pageJSON(t *testing.T, html string) pageData {
	t.Helper()
	m := regexp.MustCompile(`(?s)<script>window\.skillfleetReport = (.*?);</script>`).FindStringSubmatch(html)
	if m == nil {
		t.Fatal("page has no report data")
	}
	var d pageData
	if err := json.Unmarshal([]byte(m[1]), &d); err != nil {
		t.Fatalf("report data: %v", err)
	}
	return d
}

func TestHTMLContainsData(t *testing.T) {
	t.Parallel()
	r := setup(t, "priced")
	var buf bytes.Buffer
	if err := r.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	if diff := cmp.Diff(r.pageData(), pageJSON(t, html)); diff != "" {
		t.Errorf("embedded data (-want +got):\n%s", diff)
	}
	for _, want := range []string{
		"<title>skillfleet run priced-example (sim)</title>",
		`id="chart-selection"`, `id="chart-rollout"`, `id="chart-test"`, `id="chart-spend"`,
		"Chart.js v" + ChartJSVersion, // the library, license header intact
		"Released under the MIT License",
		"accept_new_best", "reject", "skip_no_patches",
		"<td>rollout</td>", "≥$", // a lower bound where a model is unpriced
		"my-azure-deployment",
		"as of 2026-01-01",
		"Content-Security-Policy",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// Self-contained: nothing is fetched.
	if m := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//`).FindString(html); m != "" {
		t.Errorf("page loads something from the network: %q", m)
	}
	if strings.Contains(html, "sourceMappingURL") {
		t.Error("page keeps a source-map reference")
	}
}

func TestVerdict(t *testing.T) {
	t.Parallel()
	for action, want := range map[string]string{
		"accept_new_best": "accepted", "accept": "accepted", "force_accept": "accepted",
		"reject": "rejected", "skip_no_patches": "skipped", "skip_no_rewrite": "skipped",
	} {
		if got := Verdict(action); got != want {
			t.Errorf("Verdict(%q) = %q, want %q", action, got, want)
		}
	}
}

func TestCount(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -4200: "-4,200"} {
		if got := count(n); got != want {
			t.Errorf("count(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestCacheSavingsLine: a run that reused rollouts from the shared cache
// says how many and what they saved; a run that did not says nothing.
func TestCacheSavingsLine(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "demo"))); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "tokens.json")
	var tok map[string]any
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &tok); err != nil {
		t.Fatal(err)
	}
	gate := tok["by_stage"].(map[string]any)["gate"].(map[string]any)
	gate["cache_hits"], gate["saved_calls"], gate["saved_input_tokens"], gate["saved_output_tokens"] = 120, 120, 30000, 3120
	data, _ = json.Marshal(tok)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	// 30,000 + 3,120 = 33,120 tokens.
	if want := "rollout cache: 120 results reused from earlier runs, saving 120 calls and 33,120 tokens"; !strings.Contains(buf.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, buf.String())
	}
	buf.Reset()
	if err := setup(t, "demo").WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "rollout cache") {
		t.Error("a run without cache hits mentions the cache")
	}
}

func TestLoadRefusesANewerRunDirFormat(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		rundir.FormatFile: `{"run_dir_format":"2.0"}` + "\n",
		rundir.EventsFile: `{"type":"something_format_2_writes"}` + "\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Load(dir, nil)
	var fe *rundir.FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("Load of a format 2.0 run dir = %v, want a *rundir.FormatError", err)
	}
	if !strings.Contains(err.Error(), "run-dir format 2.0") {
		t.Errorf("refusal %q does not name the run dir's format", err)
	}
}

// TestEvalDir: an evaluation's dir is reported as one: its scores by
// task type per skill, not "the run has not finished"; the HTML page has
// the same table and no training charts.
func TestEvalDir(t *testing.T) {
	t.Parallel()
	r := setup(t, "eval")
	if len(r.Eval) != 3 || r.Eval[0].Name != "no_skill" {
		t.Fatalf("Eval = %+v, want no_skill, seed_skill and skill", r.Eval)
	}
	for _, n := range r.Notes {
		if strings.Contains(n, "not finished") {
			t.Errorf("note %q on a finished evaluation", n)
		}
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	overall := r.Eval[2].ByType["overall"]
	for _, want := range []string{"evaluation on the test split", "no_skill", "seed_skill", fmt.Sprintf("%.3f (%d)", overall.Hard, overall.Total)} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	if strings.Contains(text.String(), "decisions:") {
		t.Errorf("an evaluation's text lists training decisions:\n%s", text.String())
	}
	var page bytes.Buffer
	if err := r.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	if !strings.Contains(html, `<section id="eval">`) || !strings.Contains(html, "<td>"+fmt.Sprintf("%.3f (%d)", overall.Hard, overall.Total)+"</td>") {
		t.Errorf("page lacks the evaluation table")
	}
	if strings.Contains(html, "has not finished") || strings.Contains(html, `id="chart-selection"`) {
		t.Errorf("an evaluation's page shows a training run's scores")
	}

	// Several splits (eval --split all): each column names its split.
	two := []EvalResult{{Name: "skill", Split: "val", ByType: r.Eval[2].ByType}, {Name: "skill", Split: "test", ByType: r.Eval[2].ByType}}
	text.Reset()
	if err := (&Report{Eval: two}).WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"evaluation on the val, test splits", "skill (val)", "skill (test)"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("two splits: text lacks %q:\n%s", want, text.String())
		}
	}
}

// promoted is the demo run as it would read had its best skill been
// promoted at the end: the last step's current score below the best.
func promoted(t *testing.T) *Report {
	t.Helper()
	r := setup(t, "demo")
	s := *r.Summary
	s.Promoted = true
	s.BestScore = 0.975
	r.Summary = &s
	return r
}

// TestFinalPromotion: the promotion of the best skill at a run's end is a
// row after the last step (text and HTML) and a point on the selection
// chart, half a step after the last, where current meets best; a run that
// ends on its best has neither.
func TestFinalPromotion(t *testing.T) {
	t.Parallel()
	plain := setup(t, "demo")
	if rows := plain.Rows(); rows[len(rows)-1].Kind == "final" || plain.pageData().Promoted != nil {
		t.Errorf("a run that was not promoted has a promotion")
	}
	r := promoted(t)
	rows := r.Rows()
	last, final := rows[len(rows)-2], rows[len(rows)-1]
	if final.Kind != "final" || final.Current != 0.975 || final.Best != 0.975 || final.Action != ActionPromote {
		t.Fatalf("last row = %+v, want the promotion to 0.975", final)
	}
	d := r.pageData()
	if d.Promoted == nil || d.Promoted.X != float64(last.Step)+0.5 || d.Promoted.Y != 0.975 {
		t.Fatalf("promotion point = %+v, want (%d.5, 0.975)", d.Promoted, last.Step)
	}
	if c := d.Current[len(d.Current)-1]; c != *d.Promoted {
		t.Errorf("current series ends at %+v, want the promotion", c)
	}
	if c := d.Current[len(d.Current)-2]; c.Y != last.Current {
		t.Errorf("current series before the promotion = %+v, want the last step's %v", c, last.Current)
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("final     -  %-32s %8s %10s %8.4f %8.4f", ActionPromote, "-", fmt.Sprintf("from %.4f", last.Current), 0.975, 0.975)
	if !strings.Contains(text.String(), want) {
		t.Errorf("text lacks the promotion row %q:\n%s", want, text.String())
	}
	var page bytes.Buffer
	if err := r.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	if got := pageJSON(t, page.String()).Promoted; got == nil || *got != *d.Promoted {
		t.Errorf("page's promotion point = %+v", got)
	}
	if !strings.Contains(page.String(), "<td>final</td><td>-</td><td>"+ActionPromote+"</td>") {
		t.Errorf("page lacks the promotion row")
	}
}
