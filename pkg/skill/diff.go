package skill

import (
	"fmt"
	"strings"
)

// diffContext is the number of unchanged lines shown around a change.
const diffContext = 3

// Diff returns a unified line diff from a to b ("--- a", "+++ b", hunks
// with three lines of context), or "" when the texts are equal. A last
// line without a newline is marked "\ No newline at end of file". The
// edit script is a shortest one (Myers' algorithm, linear space), with
// deletions before insertions inside a change.
func Diff(a, b string) string {
	if a == b {
		return ""
	}
	al, bl := splitLines(a), splitLines(b)
	d := newDiffer(al, bl)
	d.compare(0, len(al), 0, len(bl))
	return d.unified()
}

// splitLines splits s after each '\n'; the last line may lack one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

type differ struct {
	a, b []string
	// ai and bi are the lines as small integers (equal lines, equal ids).
	ai, bi []int
	// delA marks lines of a not in b; insB lines of b not in a.
	delA, insB []bool
	// vf and vb are scratch space for the midpoint search.
	vf, vb []int
}

func newDiffer(a, b []string) *differ {
	ids := make(map[string]int, len(a)+len(b))
	id := func(lines []string) []int {
		out := make([]int, len(lines))
		for i, l := range lines {
			v, ok := ids[l]
			if !ok {
				v = len(ids)
				ids[l] = v
			}
			out[i] = v
		}
		return out
	}
	size := 2*((len(a)+len(b)+1)/2) + 3
	return &differ{
		a: a, b: b, ai: id(a), bi: id(b),
		delA: make([]bool, len(a)), insB: make([]bool, len(b)),
		vf: make([]int, size), vb: make([]int, size),
	}
}

// compare marks the differences between a[aLo:aHi] and b[bLo:bHi].
func (d *differ) compare(aLo, aHi, bLo, bHi int) {
	for aLo < aHi && bLo < bHi && d.ai[aLo] == d.bi[bLo] {
		aLo++
		bLo++
	}
	for aLo < aHi && bLo < bHi && d.ai[aHi-1] == d.bi[bHi-1] {
		aHi--
		bHi--
	}
	switch {
	case aLo == aHi:
		for j := bLo; j < bHi; j++ {
			d.insB[j] = true
		}
		return
	case bLo == bHi:
		for i := aLo; i < aHi; i++ {
			d.delA[i] = true
		}
		return
	}
	x, y := d.midpoint(aLo, aHi, bLo, bHi)
	if (x == aLo && y == bLo) || (x == aHi && y == bHi) {
		// Cannot happen after trimming; guard against endless recursion.
		for i := aLo; i < aHi; i++ {
			d.delA[i] = true
		}
		for j := bLo; j < bHi; j++ {
			d.insB[j] = true
		}
		return
	}
	d.compare(aLo, x, bLo, y)
	d.compare(x, aHi, y, bHi)
}

// midpoint returns a point on a shortest edit path through the middle of
// a[aLo:aHi] versus b[bLo:bHi], searching forward from the start and
// backward from the end until the two frontiers meet (Myers 1986, §4b).
// vf[off+k] is the furthest x on forward diagonal k = x - y; vb[off+k] the
// furthest number of lines consumed from the ends on reverse diagonal k,
// which is forward diagonal delta - k.
func (d *differ) midpoint(aLo, aHi, bLo, bHi int) (int, int) {
	n, m := aHi-aLo, bHi-bLo
	delta := n - m
	odd := delta&1 != 0
	maxD := (n + m + 1) / 2
	off := maxD + 1
	vf, vb := d.vf[:2*maxD+3], d.vb[:2*maxD+3]
	vf[off+1], vb[off+1] = 0, 0
	for step := 0; step <= maxD; step++ {
		for k := -step; k <= step; k += 2 {
			var x int
			if k == -step || (k != step && vf[off+k-1] < vf[off+k+1]) {
				x = vf[off+k+1]
			} else {
				x = vf[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && d.ai[aLo+x] == d.bi[bLo+y] {
				x++
				y++
			}
			vf[off+k] = x
			if odd {
				if kr := delta - k; kr >= -(step-1) && kr <= step-1 && x+vb[off+kr] >= n {
					return aLo + x, bLo + y
				}
			}
		}
		for k := -step; k <= step; k += 2 {
			var x int
			if k == -step || (k != step && vb[off+k-1] < vb[off+k+1]) {
				x = vb[off+k+1]
			} else {
				x = vb[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && d.ai[aHi-1-x] == d.bi[bHi-1-y] {
				x++
				y++
			}
			vb[off+k] = x
			if !odd {
				if kf := delta - k; kf >= -step && kf <= step && x+vf[off+kf] >= n {
					return aHi - x, bHi - y
				}
			}
		}
	}
	// Unreachable: the frontiers meet by step = ceil((n+m)/2).
	return aLo, bLo
}

// line is one line of the edit script.
type line struct {
	kind   byte // ' ', '-' or '+'
	ai, bi int  // 0-based positions in a and b before this line
	text   string
}

func (d *differ) script() []line {
	var out []line
	i, j := 0, 0
	for i < len(d.a) || j < len(d.b) {
		switch {
		case i < len(d.a) && d.delA[i]:
			out = append(out, line{'-', i, j, d.a[i]})
			i++
		case j < len(d.b) && d.insB[j]:
			out = append(out, line{'+', i, j, d.b[j]})
			j++
		default:
			out = append(out, line{' ', i, j, d.a[i]})
			i++
			j++
		}
	}
	return out
}

func (d *differ) unified() string {
	script := d.script()
	var b strings.Builder
	b.WriteString("--- a\n+++ b\n")
	for lo := 0; lo < len(script); {
		// Find the next change.
		for lo < len(script) && script[lo].kind == ' ' {
			lo++
		}
		if lo == len(script) {
			break
		}
		start := max(0, lo-diffContext)
		// Extend the hunk while the next change is within 2*context lines.
		end := lo
		for {
			for end < len(script) && script[end].kind != ' ' {
				end++
			}
			next := end
			for next < len(script) && script[next].kind == ' ' {
				next++
			}
			if next == len(script) || next-end > 2*diffContext {
				break
			}
			end = next
		}
		stop := min(len(script), end+diffContext)
		writeHunk(&b, script[start:stop])
		lo = stop
	}
	return b.String()
}

func writeHunk(b *strings.Builder, h []line) {
	aStart, bStart := h[0].ai, h[0].bi
	var aLen, bLen int
	for _, l := range h {
		if l.kind != '+' {
			aLen++
		}
		if l.kind != '-' {
			bLen++
		}
	}
	fmt.Fprintf(b, "@@ -%s +%s @@\n", hunkRange(aStart, aLen), hunkRange(bStart, bLen))
	for _, l := range h {
		b.WriteByte(l.kind)
		b.WriteString(l.text)
		if !strings.HasSuffix(l.text, "\n") {
			b.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// hunkRange formats a hunk side as unified diff does: "start,len" with a
// 1-based start, the start alone when len is 1, and the line before the
// hunk when len is 0.
func hunkRange(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}
