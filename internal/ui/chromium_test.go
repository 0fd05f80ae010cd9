package ui

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/internal/ui/uitest"
)

// TestUntrustedContentRendersAsText: a skill holding <script> and an edit
// holding HTML show up as text in the page; nothing of theirs runs or
// becomes an element.
func TestUntrustedContentRendersAsText(t *testing.T) {
	b := uitest.New(t)
	dir := filepath.Join(t.TempDir(), "evil<i>run")
	r := newFakeRun(t, dir, 3)
	r.skill = "# Skill <script>window.__pwned=1</script>\n\n- <img src=/x1 onerror=\"window.__pwned=2\">\n"
	r.edit = `<b id="injected">bold</b><img src=/x2 onerror="window.__pwned=3">`
	r.write("skills/skill_v0000.md", r.skill)
	r.step()
	r.step()
	s := serve(t, Options{Poll: 100 * time.Millisecond}, dir)
	if err := b.Navigate(s.URL()); err != nil {
		t.Fatal(err)
	}
	if err := b.WaitFor(`document.querySelector("#skill-best .md") && document.querySelector("#step-detail pre.diff") && document.querySelector("#rejected ol")`, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	checks := map[string]string{
		"script did not run":           `window.__pwned === undefined`,
		"no injected element":          `document.getElementById("injected") === null`,
		"no injected image":            `document.querySelectorAll("img").length === 0`,
		"one script element per asset": `document.scripts.length === 2`,
		"skill shown as text":          `document.getElementById("skill-best").textContent.includes("<script>window.__pwned=1</script>")`,
		"edit shown as text in diff":   `document.querySelector("#step-detail pre.diff").textContent.includes('<b id="injected">bold</b>')`,
		"edit shown as text in buffer": `document.getElementById("rejected").textContent.includes('<b id="injected">bold</b>')`,
		"run name shown as text":       `document.getElementById("title").textContent.includes("evil<i>run") && document.querySelectorAll("#title i").length === 0`,
		"no script errors":             `!document.documentElement.dataset.errors`,
		"selection curve drawn":        `document.getElementById("chart-selection").dataset.points === "3" && !!document.querySelector("#chart-selection canvas")`,
	}
	for name, expr := range checks {
		ok, err := uitest.Eval[bool](b, expr)
		if err != nil || !ok {
			t.Errorf("%s: %s is false (err %v)", name, expr, err)
		}
	}
	for _, u := range b.Requests() {
		if strings.Contains(u, "/x1") || strings.Contains(u, "/x2") {
			t.Errorf("the page fetched an image from run content: %s", u)
		}
	}
	if nl := b.NonLoopback(); len(nl) > 0 {
		t.Errorf("requests beyond loopback: %v", nl)
	}
}

// TestFinalPromotionOnTheLiveChart: a run that ends by promoting its final
// skill over its best shows, on the served run page, the promotion as a
// marker half a step after the last step where the current line rises to
// the new best, a final row in the steps table, and a "best so far"
// header with the same score and step. The spend chart's axes are titled
// (tokens, $) and wide enough for their widest tick label.
func TestFinalPromotionOnTheLiveChart(t *testing.T) {
	b := uitest.New(t)
	dir := filepath.Join(t.TempDir(), "promoted")
	r := newFakeRun(t, dir, 4)
	r.inputScale = 40 // the rollout's tokens reach hundreds of thousands
	for range 4 {
		r.step()
	}
	r.finishPromoted(0.975)
	s := serve(t, Options{Poll: 100 * time.Millisecond}, dir)
	if err := b.Navigate(s.URL()); err != nil {
		t.Fatal(err)
	}
	if err := b.WaitFor(`document.getElementById("chart-selection").dataset.promoted && document.querySelector("#chart-spend canvas") && document.getElementById("best-so-far")`, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	checks := map[string]string{
		"marker half a step after the last": `document.getElementById("chart-selection").dataset.promoted === "4.5"`,
		"marker in the legend":              `document.querySelector("#chart-selection .u-legend").textContent.includes("★ final promotion")`,
		// The plotted data: x ends at 4.5 where current, best and the
		// marker are all the promoted score.
		"current rises to the best": `(function () { var d = document.getElementById("chart-selection").uplot.data; var n = d[0].length - 1;
			return d[0][n] === 4.5 && d[1][n] === 0.975 && d[2][n] === 0.975 && d[4][n] === 0.975 && d[4].slice(0, n).every(function (x) { return x == null; }); })()`,
		"best so far header": `document.getElementById("best-so-far").textContent === "best so far 0.975 (step 4, the final skill promoted at the end: 0.300 → 0.975)"`,
		"final row":          `document.getElementById("final-row").textContent.includes("final: best skill promoted") && document.getElementById("final-row").textContent.includes("0.975")`,
		"final row on top":   `document.querySelector("#steps tbody tr").id === "final-row"`,
		// uPlot draws axis titles on the canvas, in the room it reserves.
		"spend axes titled": `document.getElementById("chart-spend").uplot.axes.map(function (a) { return a.label + ":" + (a.label ? a.labelSize > 0 : ""); }).join("|") === "step:true|tokens spent:true|$ spent:true"`,
		"score axis titled": `document.getElementById("chart-selection").uplot.axes[1].label === "selection score"`,
		"no script errors":  `!document.documentElement.dataset.errors`,
	}
	for name, expr := range checks {
		ok, err := uitest.Eval[bool](b, expr)
		if err != nil || !ok {
			t.Errorf("%s: %s is false (err %v)", name, expr, err)
		}
	}
	// Each y axis of the spend chart is at least as wide as its widest
	// tick label plus its ticks: nothing is cut at the canvas edge.
	fit, err := uitest.Eval[string](b, `(function () {
		var u = document.getElementById("chart-spend").uplot, c = document.createElement("canvas").getContext("2d"), out = [];
		u.axes.forEach(function (a, i) {
			if (i === 0 || !a._values) return;
			c.font = a.font[0];
			var w = 0;
			a._values.forEach(function (v) { if (v != null) w = Math.max(w, c.measureText(String(v)).width / (window.devicePixelRatio || 1)); });
			out.push(a._values.join(",") + ":" + (a._size >= w + a.ticks.size + a.gap ? "fits" : "cut " + a._size + "<" + (w + a.ticks.size + a.gap)));
		});
		return out.join(" | ");
	})()`)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(fit, "cut") || strings.Count(fit, "fits") != 2 || !strings.Contains(fit, "k") {
		t.Errorf("spend axes: %s; want two axes (tokens, $) whose labels fit", fit)
	}
	t.Logf("spend axes: %s", fit)
}
