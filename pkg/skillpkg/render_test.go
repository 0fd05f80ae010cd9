package skillpkg

import (
	"fmt"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/llm"
)

func longFile(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestRenderWholeAndPaged(t *testing.T) {
	p, err := New(map[string]string{
		"SKILL.md":            entry,
		"references/long.md":  longFile(25),
		"references/short.md": "short\n",
	}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	out := Render(p, RenderOptions{TokenBudget: 10000, PageLines: 10})
	for _, want := range []string{
		`Skill package "units": 3 files`,
		"  references/long.md (25 lines, ",
		"=== FILE SKILL.md (7 lines) ===\n---\nname: units\n",
		"=== FILE references/long.md (lines 1-10 of 25; page 1 of 3) ===\nline 1\n",
		"line 10\n=== END references/long.md ===\n(2 more pages of references/long.md not shown)\n",
		"=== FILE references/short.md (1 lines) ===\nshort\n=== END references/short.md ===\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("render lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "line 11\n") {
		t.Error("page 2 rendered in page 1")
	}
	if strings.Index(out, "FILE SKILL.md") > strings.Index(out, "FILE references/") {
		t.Error("SKILL.md not first")
	}
	pg, err := p.Page("references/long.md", 3, 10)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(pg, "(lines 21-25 of 25; page 3 of 3)") || !strings.Contains(pg, "line 25\n") || strings.Contains(pg, "line 20\n") {
		t.Fatalf("page 3:\n%s", pg)
	}
	if _, err := p.Page("references/long.md", 4, 10); err == nil {
		t.Fatal("page 4 of 3 rendered")
	}
}

func TestRenderBudget(t *testing.T) {
	p, err := New(map[string]string{
		"SKILL.md":          entry,
		"references/big.md": strings.Repeat("word ", 2000),
		"references/z.md":   "z\n",
	}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, budget := range []int{200, 400, 1000} {
		out := Render(p, RenderOptions{TokenBudget: budget})
		if got := int(llm.EstimateTokens(out)); got > budget {
			t.Errorf("budget %d: rendered %d tokens", budget, got)
		}
		if !strings.Contains(out, "FILE SKILL.md") {
			t.Errorf("budget %d: SKILL.md missing", budget)
		}
		if strings.Contains(out, "FILE references/big.md") {
			t.Errorf("budget %d: 10 KB file shown", budget)
		}
		if !strings.Contains(out, "FILE references/z.md") {
			t.Errorf("budget %d: small file after the big one skipped", budget)
		}
		if !strings.Contains(out, "not shown, over the token budget: references/big.md") {
			t.Errorf("budget %d: omission not stated:\n%s", budget, out)
		}
	}
}
