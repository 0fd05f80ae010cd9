package ui

import "strings"

// DiffLine is one line of a line diff: Op is ' ' (kept), '-' (removed) or
// '+' (added).
type DiffLine struct {
	Op   string `json:"op"`
	Text string `json:"text"`
}

// maxDiffCells bounds the diff's table (lines × lines after the common
// head and tail are cut); beyond it the middle is shown as removed then
// added.
const maxDiffCells = 4_000_000

// Diff is a line diff of a and b by longest common subsequence, after
// cutting their common head and tail. Skills are at most a few thousand
// lines, so the quadratic table is small.
func Diff(a, b string) []DiffLine {
	al, bl := splitLines(a), splitLines(b)
	head := 0
	for head < len(al) && head < len(bl) && al[head] == bl[head] {
		head++
	}
	tail := 0
	for tail < len(al)-head && tail < len(bl)-head && al[len(al)-1-tail] == bl[len(bl)-1-tail] {
		tail++
	}
	out := make([]DiffLine, 0, len(al)+len(bl))
	for _, l := range al[:head] {
		out = append(out, DiffLine{" ", l})
	}
	x, y := al[head:len(al)-tail], bl[head:len(bl)-tail]
	if len(x)*len(y) > maxDiffCells {
		for _, l := range x {
			out = append(out, DiffLine{"-", l})
		}
		for _, l := range y {
			out = append(out, DiffLine{"+", l})
		}
	} else {
		out = append(out, lcsDiff(x, y)...)
	}
	for _, l := range al[len(al)-tail:] {
		out = append(out, DiffLine{" ", l})
	}
	return out
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

func lcsDiff(x, y []string) []DiffLine {
	n, m := len(x), len(y)
	// l[i][j] is the LCS length of x[i:] and y[j:].
	l := make([][]int32, n+1)
	for i := range l {
		l[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				l[i][j] = l[i+1][j+1] + 1
			} else {
				l[i][j] = max(l[i+1][j], l[i][j+1])
			}
		}
	}
	var out []DiffLine
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case x[i] == y[j]:
			out = append(out, DiffLine{" ", x[i]})
			i++
			j++
		case l[i+1][j] >= l[i][j+1]:
			out = append(out, DiffLine{"-", x[i]})
			i++
		default:
			out = append(out, DiffLine{"+", y[j]})
			j++
		}
	}
	for ; i < n; i++ {
		out = append(out, DiffLine{"-", x[i]})
	}
	for ; j < m; j++ {
		out = append(out, DiffLine{"+", y[j]})
	}
	return out
}
