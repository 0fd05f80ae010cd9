// Package score holds the answer extraction, normalisation and scoring
// rules the benchmarks share, each equal to SkillOpt's (microsoft/SkillOpt
// at bdfdc30) on every input: the string operations follow CPython's
// semantics through [pystr], and TestSkillOptScorerCorpus checks every
// function against SkillOpt's own results on 51,085 replies.
package score

import (
	"regexp"
	"strings"

	"github.com/skillfleet/skillfleet/internal/pystr"
)

// LastNonEmptyLine returns the last line of s (lines as str.splitlines()
// cuts them) that has text after stripping, stripped; ok is false when
// there is none.
func LastNonEmptyLine(s string) (line string, ok bool) {
	lines := pystr.SplitLines(s)
	for i := len(lines) - 1; i >= 0; i-- {
		if l := pystr.Strip(lines[i]); l != "" {
			return l, true
		}
	}
	return "", false
}

// AnswerTag matches one <answer>…</answer> pair, case-insensitive and
// across lines, shortest first. Go's simple case folding accepts the
// same spellings as Python's re.IGNORECASE here (ſ for s included).
var AnswerTag = regexp.MustCompile(`(?is)<answer>(.*?)</answer>`)

// ExtractAnswer is the SearchQA / LiveMath rule: the text of the last
// complete <answer>…</answer> pair, else the last non-empty line, else the
// whole text; stripped.
func ExtractAnswer(text string) string {
	if m := AnswerTag.FindAllStringSubmatch(text, -1); len(m) > 0 {
		return pystr.Strip(m[len(m)-1][1])
	}
	if l, ok := LastNonEmptyLine(text); ok {
		return l
	}
	return pystr.Strip(text)
}

// ExtractFirstAnswer is the OfficeQA rule: the first complete
// <answer>…</answer> pair, else the last non-empty line; stripped.
func ExtractFirstAnswer(text string) string {
	if m := AnswerTag.FindStringSubmatch(text); m != nil {
		return pystr.Strip(m[1])
	}
	l, _ := LastNonEmptyLine(text)
	return l
}

// ExtractAnswerRfind is the DocVQA rule: in a lowercased copy of the text
// (str.lower()), the last "<answer>" and the last "</answer>"; when the
// closer comes after the opener, the original text between them, cut at
// those code point positions, stripped; else the last non-empty line.
//
// As in SkillOpt, the positions are found in the lowercased copy and used
// on the original: a character whose lowercase has more code points (İ
// lowers to two) shifts the cut, and skillfleet reproduces that.
func ExtractAnswerRfind(text string) string {
	lower := pystr.Lower(text)
	start := pystr.RFind(lower, "<answer>")
	end := pystr.RFind(lower, "</answer>")
	if start >= 0 && end > start {
		return pystr.Strip(pystr.Slice(text, start+len("<answer>"), end))
	}
	l, _ := LastNonEmptyLine(text)
	return l
}

// asciiPunct is Python's string.punctuation.
const asciiPunct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// IsASCIIPunct reports whether r is in Python's string.punctuation.
func IsASCIIPunct(r rune) bool { return r < 128 && strings.ContainsRune(asciiPunct, r) }

var articles = []string{"a", "an", "the"}

// NormalizeSQuAD is the SQuAD answer normalisation: lowercase (str.lower),
// delete ASCII punctuation, replace the whole words a, an and the with a
// space (word boundaries as Python's Unicode \b), and collapse whitespace.
func NormalizeSQuAD(s string) string {
	s = pystr.Lower(s)
	s = strings.Map(func(r rune) rune {
		if IsASCIIPunct(r) {
			return -1
		}
		return r
	}, s)
	s = pystr.ReplaceWords(s, articles, " ")
	return pystr.JoinFields(s)
}

// ExactMatch is 1 when the normalised prediction equals some normalised
// gold, else 0.
func ExactMatch(pred string, golds []string) float64 {
	p := NormalizeSQuAD(pred)
	for _, g := range golds {
		if p == NormalizeSQuAD(g) {
			return 1
		}
	}
	return 0
}

// SubEM is 1 when a normalised gold contains the normalised prediction or
// the other way round (SkillOpt computes it and does not use it).
func SubEM(pred string, golds []string) float64 {
	p := NormalizeSQuAD(pred)
	for _, g := range golds {
		n := NormalizeSQuAD(g)
		if strings.Contains(n, p) || strings.Contains(p, n) {
			return 1
		}
	}
	return 0
}

// TokenF1 is the F1 of two token multisets. Two empty lists score 1; one
// empty list scores 0.
func TokenF1(pred, gold []string) float64 {
	if len(pred) == 0 || len(gold) == 0 {
		if len(pred) == 0 && len(gold) == 0 {
			return 1
		}
		return 0
	}
	counts := map[string]int{}
	for _, g := range gold {
		counts[g]++
	}
	common := 0
	for _, p := range pred {
		if counts[p] > 0 {
			counts[p]--
			common++
		}
	}
	if common == 0 {
		return 0
	}
	precision := float64(common) / float64(len(pred))
	recall := float64(common) / float64(len(gold))
	return 2 * precision * recall / (precision + recall)
}

// F1 is the SQuAD token F1 of the normalised texts, the best over golds.
// An empty prediction scores 1 only against a gold that normalises to
// empty.
func F1(pred string, golds []string) float64 {
	pt := pystr.Fields(NormalizeSQuAD(pred))
	best := 0.0
	for _, g := range golds {
		best = max(best, TokenF1(pt, pystr.Fields(NormalizeSQuAD(g))))
	}
	return best
}

// Levenshtein is the edit distance between a and b, in code points.
func Levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// NormalizeANLS strips, lowercases (str.lower) and collapses whitespace.
func NormalizeANLS(s string) string {
	return pystr.JoinFields(pystr.Lower(s))
}

// ANLSThreshold is DocVQA's normalised-distance cut-off.
const ANLSThreshold = 0.5

// ANLS is the average normalised Levenshtein similarity of DocVQA for one
// question: per gold, both empty score 1, one empty 0, else with nd the
// edit distance over the longer length in code points, nd ≥ 0.5 scores 0
// and otherwise 1 − nd; the best over golds.
func ANLS(pred string, golds []string) float64 {
	p := NormalizeANLS(pred)
	best := 0.0
	for _, g := range golds {
		g = NormalizeANLS(g)
		var s float64
		switch {
		case p == "" && g == "":
			s = 1
		case p == "" || g == "":
			s = 0
		default:
			n := max(pystr.Len(p), pystr.Len(g))
			nd := float64(Levenshtein(p, g)) / float64(n)
			if nd < ANLSThreshold {
				s = 1 - nd
			}
		}
		best = max(best, s)
	}
	return best
}

// Choice is one labelled option of a multiple-choice question.
type Choice struct {
	Label string `json:"label"`
	Text  string `json:"text"`
}

// NormalizeLabel is LiveMath's label cleaning: strip, uppercase
// (str.upper) and drop trailing ".", ")" and ":".
func NormalizeLabel(s string) string {
	return strings.TrimRight(pystr.Upper(pystr.Strip(s)), ".):")
}

// ChoiceLabel maps an extracted answer to a choice label (the LiveMath
// rule): the normalised answer if it is a valid label; else the label of
// the choice whose text equals the answer (str.lower on both); else the
// normalised first token if it is a valid label; else ok is false.
func ChoiceLabel(answer string, choices []Choice) (label string, ok bool) {
	valid := map[string]bool{}
	for _, c := range choices {
		valid[NormalizeLabel(c.Label)] = true
	}
	if l := NormalizeLabel(answer); valid[l] {
		return l, true
	}
	a := pystr.Lower(pystr.Strip(answer))
	for _, c := range choices {
		if pystr.Lower(pystr.Strip(c.Text)) == a {
			return NormalizeLabel(c.Label), true
		}
	}
	if f := pystr.Fields(answer); len(f) > 0 {
		if l := NormalizeLabel(f[0]); valid[l] {
			return l, true
		}
	}
	return "", false
}
