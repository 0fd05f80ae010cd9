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
