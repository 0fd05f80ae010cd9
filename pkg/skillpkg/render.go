package skillpkg

import (
	"fmt"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/llm"
)

// RenderOptions bound [Render].
type RenderOptions struct {
	// TokenBudget is the most tokens ([llm.EstimateTokens]) the rendering
	// may take; the tree is always shown. Zero means 8000.
	TokenBudget int
	// PageLines is the page size, in lines, of a long file. Zero means
	// 200.
	PageLines int
}

func (o RenderOptions) resolved() RenderOptions {
	if o.TokenBudget <= 0 {
		o.TokenBudget = 8000
	}
	if o.PageLines <= 0 {
		o.PageLines = 200
	}
	return o
}

// lines splits text into lines, each keeping its '\n'.
func lines(text string) []string {
	if text == "" {
		return nil
	}
	return strings.SplitAfter(strings.TrimSuffix(text, "\n"), "\n")
}

// Pages is the number of pages of the file at name (at least 1).
func (p *Package) Pages(name string, pageLines int) int {
	if pageLines <= 0 {
		pageLines = RenderOptions{}.resolved().PageLines
	}
	n := len(lines(p.files[name]))
	if n == 0 {
		return 1
	}
	return (n + pageLines - 1) / pageLines
}

// Page renders page (1-based) of the file at name, framed with its path and
// line range, as [Render] shows it.
func (p *Package) Page(name string, page, pageLines int) (string, error) {
	text, ok := p.files[name]
	if !ok {
		return "", fmt.Errorf("skill package: %s: no such file", name)
	}
	if pageLines <= 0 {
		pageLines = RenderOptions{}.resolved().PageLines
	}
	ls := lines(text)
	pages := p.Pages(name, pageLines)
	if page < 1 || page > pages {
		return "", fmt.Errorf("skill package: %s: page %d out of range 1..%d", name, page, pages)
	}
	lo := (page - 1) * pageLines
	hi := min(lo+pageLines, len(ls))
	var b strings.Builder
	if pages == 1 {
		fmt.Fprintf(&b, "=== FILE %s (%d lines) ===\n", name, len(ls))
	} else {
		fmt.Fprintf(&b, "=== FILE %s (lines %d-%d of %d; page %d of %d) ===\n", name, lo+1, hi, len(ls), page, pages)
	}
	for _, l := range ls[lo:hi] {
		b.WriteString(l)
	}
	if hi > lo && !strings.HasSuffix(ls[hi-1], "\n") {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "=== END %s ===\n", name)
	return b.String(), nil
}

// Tree renders the package's file list with each file's size.
func (p *Package) Tree() string {
	var b strings.Builder
	fm, _ := p.FrontMatter()
	fmt.Fprintf(&b, "Skill package %q: %d files, %d bytes\n", fm.Name, p.Len(), p.Size())
	for _, name := range p.Paths() {
		exec := ""
		if p.exec[name] {
			exec = ", executable"
		}
		fmt.Fprintf(&b, "  %s (%d lines, %d bytes%s)\n", name, len(lines(p.files[name])), len(p.files[name]), exec)
	}
	return b.String()
}

// Render renders the package for an optimizer prompt: its tree, then each
// file in [Package.Paths] order (SKILL.md first) while the token budget
// lasts. A file that fits is shown whole; a long file shows its first page
// with a note of how many pages it has; a file that does not fit at all is
// named as not shown. The result never exceeds the budget except for the
// tree itself.
func Render(p *Package, opts RenderOptions) string {
	opts = opts.resolved()
	var b strings.Builder
	b.WriteString(p.Tree())
	left := opts.TokenBudget - int(llm.EstimateTokens(b.String()))
	var omitted []string
	for _, name := range p.Paths() {
		pages := p.Pages(name, opts.PageLines)
		first, _ := p.Page(name, 1, opts.PageLines)
		block := "\n" + first
		if pages > 1 {
			block += fmt.Sprintf("(%d more pages of %s not shown)\n", pages-1, name)
		}
		cost := int(llm.EstimateTokens(block))
		if cost > left {
			omitted = append(omitted, name)
			continue
		}
		b.WriteString(block)
		left -= cost
	}
	if len(omitted) > 0 {
		note := fmt.Sprintf("\n(not shown, over the token budget: %s)\n", strings.Join(omitted, ", "))
		if int(llm.EstimateTokens(note)) <= left {
			b.WriteString(note)
		}
	}
	return b.String()
}
