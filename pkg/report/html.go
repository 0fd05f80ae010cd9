package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"
)

// The page inlines everything it needs: Chart.js (assets/, MIT, see
// assets/README.md), our drawing script and stylesheet, and the data. A
// Content-Security-Policy forbids every fetch, so a page that renders at
// all renders without a network.

//go:embed assets/chart.umd.min.js
var chartJSFile string

// chartJS is the library as inlined: its trailing source-map comment is
// dropped (the map is not shipped, and a browser's developer tools would
// try to fetch it).
var chartJS = stripSourceMap(chartJSFile)

func stripSourceMap(js string) string {
	if i := strings.LastIndex(js, "\n//# sourceMappingURL="); i >= 0 {
		return js[:i+1]
	}
	return js
}

//go:embed assets/report.js
var reportJS string

//go:embed assets/report.css
var reportCSS string

// ChartJSVersion is the version of the Chart.js build the page embeds.
const ChartJSVersion = "4.6.1"

// point is one (step, value) of a series.
type point struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
	// Label describes the point in the tooltip.
	Label string `json:"label,omitempty"`
}

// pageData is what assets/report.js draws.
type pageData struct {
	Title string `json:"title"`
	// Selection split: current and best after each decision (step 0 =
	// baseline), candidates by verdict.
	Current  []point            `json:"current"`
	Best     []point            `json:"best"`
	Verdicts map[string][]point `json:"verdicts"`
	// Train rollout score per step.
	RolloutHard []point `json:"rollout_hard"`
	RolloutSoft []point `json:"rollout_soft"`
	// Promoted marks the final promotion of the best skill, half a step
	// after the last (nil when the run ended on its best).
	Promoted *point `json:"promoted,omitempty"`
	// Test split (empty until the run finishes).
	Test *testData `json:"test,omitempty"`
	// Spend: tokens (input + output) per stage per column.
	Spend spendData `json:"spend"`
}

type testData struct {
	Labels []string  `json:"labels"`
	Hard   []float64 `json:"hard"`
	Soft   []float64 `json:"soft,omitempty"`
}

type spendData struct {
	Labels []string      `json:"labels"`
	Stages []stageSeries `json:"stages"`
}

type stageSeries struct {
	Stage  string  `json:"stage"`
	Tokens []int64 `json:"tokens"`
}

func (r *Report) pageData() pageData {
	d := pageData{Title: r.title(), Verdicts: map[string][]point{"accepted": {}, "rejected": {}, "skipped": {}}}
	for _, row := range r.Rows() {
		x := float64(row.Step)
		switch row.Kind {
		case "baseline", "step":
			label := row.Action
			d.Current = append(d.Current, point{X: x, Y: row.Current, Label: label})
			d.Best = append(d.Best, point{X: x, Y: row.Best, Label: label})
		case "final":
			p := point{X: x + 0.5, Y: row.Current, Label: row.Action + " (" + row.CandidateNote + ")"}
			d.Current = append(d.Current, p)
			d.Best = append(d.Best, point{X: p.X, Y: row.Best, Label: row.Action})
			d.Promoted = &p
		}
		if row.Kind != "step" {
			continue
		}
		y, label := row.Current, row.Action
		if row.Candidate != nil {
			y = *row.Candidate
		} else if row.CandidateNote != "" {
			label += " (" + row.CandidateNote + ")"
		}
		d.Verdicts[row.Verdict] = append(d.Verdicts[row.Verdict], point{X: x, Y: y, Label: label})
		if row.Rollout != nil {
			rec := r.Steps[row.Step]
			d.RolloutHard = append(d.RolloutHard, point{X: x, Y: rec.RolloutHard})
			d.RolloutSoft = append(d.RolloutSoft, point{X: x, Y: rec.RolloutSoft})
		}
	}
	if s := r.Summary; s != nil && len(s.TestHard) > 0 {
		t := &testData{}
		for _, k := range []string{"baseline", "best", "final"} {
			if v, ok := s.TestHard[k]; ok {
				t.Labels = append(t.Labels, k)
				t.Hard = append(t.Hard, v)
				if len(s.TestSoft) > 0 {
					t.Soft = append(t.Soft, s.TestSoft[k])
				}
			}
		}
		d.Test = t
	}
	d.Spend = r.spendOverSteps()
	return d
}

// spendOverSteps spreads tokens over columns: "baseline" (from
// tokens.json), one per step (from its record), and "other" for what
// happened outside steps (epoch boundaries, final evaluation), so the
// columns add up to tokens.json's totals.
func (r *Report) spendOverSteps() spendData {
	var steps []int
	for s := range r.Steps {
		steps = append(steps, s)
	}
	sort.Ints(steps)
	stageSet := map[string]bool{}
	for _, rec := range r.Steps {
		for k := range rec.Tokens {
			stageSet[k] = true
		}
	}
	var labels []string
	if r.Tokens != nil {
		labels = append(labels, "baseline")
		for k := range r.Tokens.ByStage {
			stageSet[k] = true
		}
	}
	for _, s := range steps {
		labels = append(labels, fmt.Sprint(s))
	}
	if r.Tokens != nil {
		labels = append(labels, "other")
	}
	var stages []string
	for k := range stageSet {
		stages = append(stages, k)
	}
	sort.Strings(stages)
	var out []stageSeries
	for _, st := range stages {
		var vals []int64
		var inSteps int64
		if r.Tokens != nil {
			if st == "baseline" {
				vals = append(vals, r.Tokens.ByStage[st].Tokens())
			} else {
				vals = append(vals, 0)
			}
		}
		for _, s := range steps {
			n := r.Steps[s].Tokens[st].Tokens()
			inSteps += n
			vals = append(vals, n)
		}
		if r.Tokens != nil {
			other := r.Tokens.ByStage[st].Tokens() - inSteps
			if st == "baseline" {
				other = 0
			}
			vals = append(vals, max(other, 0))
		}
		var sum int64
		for _, v := range vals {
			sum += v
		}
		if sum == 0 {
			continue
		}
		out = append(out, stageSeries{Stage: st, Tokens: vals})
	}
	return spendData{Labels: labels, Stages: out}
}

func (r *Report) title() string {
	t := "skillfleet run"
	if r.RunID != "" {
		t += " " + r.RunID
	}
	if r.Benchmark != "" {
		t += " (" + r.Benchmark + ")"
	}
	return t
}

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"score":      score,
	"candidate":  candidate,
	"tokens":     tokens,
	"count":      count,
	"usd":        func(r *Report, s StageSpend) string { return r.usd(s) },
	"f4":         func(v float64) string { return fmt.Sprintf("%.4f", v) },
	"signed":     func(v *float64) string { return fmt.Sprintf("%+.4f", *v) },
	"lower":      strings.ToLower,
	"evalColumn": evalColumn,
	"evalTypes":  evalTypes,
	"evalCell":   evalCell,
}).Parse(pageTemplate))

type pageView struct {
	R        *Report
	Title    string
	Rows     []StepRow
	Stages   []StageSpend
	Total    StageSpend
	Accepted int
	Rejected int
	Skipped  int
	Data     pageData
	ChartJS  template.JS
	Script   template.JS
	CSS      template.CSS
	Version  string
}

// WriteHTML writes the self-contained HTML page.
func (r *Report) WriteHTML(w io.Writer) error {
	stages, total := r.Spend()
	acc, rej, skip := r.Decisions()
	v := pageView{R: r, Title: r.title(), Rows: r.Rows(), Stages: stages, Total: total,
		Accepted: acc, Rejected: rej, Skipped: skip, Data: r.pageData(),
		ChartJS: template.JS(chartJS), Script: template.JS(reportJS), CSS: template.CSS(reportCSS), Version: ChartJSVersion}
	if err := page.Execute(w, v); err != nil {
		return fmt.Errorf("report: html: %w", err)
	}
	return nil
}

const pageTemplate = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<meta name="generator" content="skillfleet report">
<title>{{.Title}}</title>
<style>{{.CSS}}</style>
<script>
(function () {
  var errors = [];
  function fail(msg) {
    errors.push(String(msg));
    document.documentElement.setAttribute("data-errors", errors.join(" | "));
  }
  window.skillfleetFail = fail;
  window.addEventListener("error", function (e) { fail(e.message || "script error"); });
  document.addEventListener("securitypolicyviolation", function (e) { fail("blocked by the page's policy: " + e.blockedURI); });
})();
</script>
</head>
<body>
<header>
<h1>{{.Title}}</h1>
<p class="lede">{{.Accepted}} accepted · {{.Rejected}} rejected · {{.Skipped}} skipped steps{{with .R.Summary}} · wall time {{printf "%.1f" .WallTime}} s{{end}}</p>
</header>

{{if .R.Eval}}<section id="eval">
<h2>Evaluation</h2>
<p class="dim">Hard accuracy by task type over the scored items (their count); items that could not be scored show as scored/total.</p>
<table class="grid num">
<thead><tr><th>task type</th>{{range .R.Eval}}<th>{{evalColumn . $.R.Eval}}</th>{{end}}</tr></thead>
<tbody>
{{range $k := evalTypes .R.Eval}}<tr><td>{{$k}}</td>{{range $.R.Eval}}<td>{{evalCell . $k}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
</section>
{{else}}
<section id="scores">
<h2>Scores</h2>
{{with .R.Summary}}
<table class="kv">
<tr><th>selection baseline</th><td>{{f4 .BaselineScore}}</td></tr>
<tr><th>selection best</th><td>{{f4 .BestScore}} <span class="dim">step {{.BestStep}}, {{.BestOrigin}}</span></td></tr>
{{with .FinalScore}}<tr><th>selection final</th><td>{{f4 .}}</td></tr>{{end}}
{{if .TestHard}}<tr><th>test hard</th><td>baseline {{f4 (index .TestHard "baseline")}} · best {{f4 (index .TestHard "best")}} · final {{f4 (index .TestHard "final")}}{{if .DeltaBestHard}} <span class="dim">(Δbest {{signed .DeltaBestHard}}, Δfinal {{signed .DeltaFinalHard}})</span>{{end}}</td></tr>{{end}}
</table>
{{else}}
<p class="dim">The run has not finished: no final or test scores yet.</p>
{{end}}
<div class="charts">
<figure><figcaption>Selection score: current and best skill after each step; candidates marked by the gate's verdict</figcaption><div class="box"><canvas id="chart-selection" role="img" aria-label="selection score per step"></canvas></div></figure>
<figure><figcaption>Train rollout score of the current skill, per step</figcaption><div class="box"><canvas id="chart-rollout" role="img" aria-label="train rollout score per step"></canvas></div></figure>
{{if .Data.Test}}<figure><figcaption>Test split: baseline, best and final skill</figcaption><div class="box"><canvas id="chart-test" role="img" aria-label="test scores"></canvas></div></figure>{{end}}
<figure><figcaption>Token spend (input + output) per stage: baseline, each step, and other (epoch boundaries, final evaluation)</figcaption><div class="box"><canvas id="chart-spend" role="img" aria-label="tokens per stage per step"></canvas></div></figure>
</div>
<noscript><p>The charts need JavaScript; the tables below hold the same numbers.</p></noscript>
</section>

<section id="steps">
<h2>Steps</h2>
<table class="grid">
<thead><tr><th>step</th><th>epoch</th><th>action</th><th>rollout</th><th>candidate</th><th>current</th><th>best</th><th>tokens</th></tr></thead>
<tbody>
{{range .Rows}}<tr class="{{if .Verdict}}{{.Verdict}}{{else}}{{.Kind}}{{end}}"><td>{{if eq .Kind "slow_update"}}·{{else if eq .Kind "final"}}final{{else}}{{.Step}}{{end}}</td><td>{{if or (eq .Kind "baseline") (eq .Kind "final")}}-{{else}}{{.Epoch}}{{end}}</td><td>{{if eq .Kind "slow_update"}}slow update: {{end}}{{.Action}}</td><td>{{score .Rollout}}</td><td>{{candidate .}}</td><td>{{f4 .Current}}</td><td>{{f4 .Best}}</td><td>{{tokens .Tokens}}</td></tr>
{{end}}</tbody>
</table>
</section>
{{end}}

{{if .R.Packages}}<section id="package">
<h2>Package changes</h2>
<p class="dim">Each step's candidate skill package against the package the step started from, file by file (changed lines only).</p>
{{range .R.Packages}}<details class="{{.Verdict}}"><summary>step {{.Step}} · {{.Verdict}} ({{.Action}}) · {{len .Files}} file(s)</summary>
{{range .Files}}<p><code>{{.Summary}}</code></p>
<pre class="diff">{{range .Shown}}{{.}}
{{end}}{{with .Hidden}}… {{.}} more line(s)
{{end}}</pre>
{{end}}</details>
{{end}}</section>
{{end}}

<section id="spend">
<h2>Spend by stage</h2>
{{with .R.Cost}}<p class="dim">Prices: {{.Source}}, as of {{.AsOf}}. Prices change; check them.</p>{{end}}
<table class="grid num">
<thead><tr><th>stage</th><th>calls</th><th>failed</th><th>retries</th><th>429s</th><th>input</th><th>cached</th><th>output</th><th>USD</th></tr></thead>
<tbody>
{{range .Stages}}<tr><td>{{.Stage}}</td><td>{{count .Calls}}</td><td>{{count .FailedCalls}}</td><td>{{count .Retries}}</td><td>{{count .RateLimited}}</td><td>{{count .Input}}</td><td>{{count .CacheRead}}</td><td>{{count .Output}}</td><td>{{usd $.R .}}</td></tr>
{{end}}<tr class="total"><td>total</td><td>{{count .Total.Calls}}</td><td>{{count .Total.FailedCalls}}</td><td>{{count .Total.Retries}}</td><td>{{count .Total.RateLimited}}</td><td>{{count .Total.Input}}</td><td>{{count .Total.CacheRead}}</td><td>{{count .Total.Output}}</td><td>{{usd .R .Total}}</td></tr>
</tbody>
</table>
{{if .R.Notes}}<ul class="notes">{{range .R.Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
</section>

<footer class="dim">Made by <code>skillfleet report</code>. Charts drawn with Chart.js {{.Version}} (MIT License), included in this page.</footer>

<script>window.skillfleetReport = {{.Data}};</script>
<script>{{.ChartJS}}</script>
<script>{{.Script}}</script>
</body>
</html>
`
