// Package score holds the answer extraction, normalisation and scoring
// rules the benchmarks share, each written from SkillOpt's published rules
// so that the same answer gets the same score.
package score

import (
	"regexp"
	"strings"
	"unicode"
)

// lastNonEmptyLine returns the last line of s with text, trimmed.
func lastNonEmptyLine(s string) (string, bool) {
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l, true
		}
	}
	return "", false
}

var answerTag = regexp.MustCompile(`(?is)<answer>(.*?)</answer>`)

// ExtractAnswer is the SearchQA / LiveMath rule: the text of the last
// complete <answer>…</answer> pair (case-insensitive, across lines),
// else the last non-empty line, else the whole text; trimmed.
func ExtractAnswer(text string) string {
	if m := answerTag.FindAllStringSubmatch(text, -1); len(m) > 0 {
		return strings.TrimSpace(m[len(m)-1][1])
	}
	if l, ok := lastNonEmptyLine(text); ok {
		return l
	}
	return strings.TrimSpace(text)
}

// ExtractFirstAnswer is the OfficeQA rule: the first complete
// <answer>…</answer> pair, else the last non-empty line; trimmed.
func ExtractFirstAnswer(text string) string {
	if m := answerTag.FindStringSubmatch(text); m != nil {
		return strings.TrimSpace(m[1])
	}
	l, _ := lastNonEmptyLine(text)
	return l
}

// ExtractAnswerRfind is the DocVQA rule: from the last "<answer>" to the
// last "</answer>" after it (case-insensitive), else the last non-empty
// line; trimmed. Unlike [ExtractAnswer], text between the last opening
// tag and a later closing tag is taken even if another pair sits between.
func ExtractAnswerRfind(text string) string {
	lower := strings.ToLower(text)
	if start := strings.LastIndex(lower, "<answer>"); start >= 0 {
		rest := lower[start+len("<answer>"):]
		if end := strings.LastIndex(rest, "</answer>"); end >= 0 {
			from := start + len("<answer>")
			return strings.TrimSpace(text[from : from+end])
		}
	}
	l, _ := lastNonEmptyLine(text)
	return l
}

// asciiPunct is Python's string.punctuation.
const asciiPunct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

var articles = regexp.MustCompile(`\b(a|an|the)\b`)

// NormalizeSQuAD is the SQuAD answer normalisation: lowercase, delete ASCII
// punctuation, replace the whole words a, an and the with a space, and
// collapse whitespace.
func NormalizeSQuAD(s string) string {
	s = strings.ToLower(s)
	s = strings.Map(func(r rune) rune {
		if r < 128 && strings.ContainsRune(asciiPunct, r) {
			return -1
		}
		return r
	}, s)
	s = articles.ReplaceAllString(s, " ")
	return strings.Join(strings.Fields(s), " ")
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
	pt := strings.Fields(NormalizeSQuAD(pred))
	best := 0.0
	for _, g := range golds {
		best = max(best, TokenF1(pt, strings.Fields(NormalizeSQuAD(g))))
	}
	return best
}

// Levenshtein is the edit distance between a and b, in runes.
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

// normalizeANLS strips, lowercases and collapses whitespace.
func normalizeANLS(s string) string {
	return strings.Join(strings.Fields(strings.ToLower(s)), " ")
}

// ANLS is the average normalised Levenshtein similarity of DocVQA for one
// question: per gold, both empty score 1, one empty 0, else with nd the
// edit distance over the longer length, nd ≥ 0.5 scores 0 and otherwise
// 1 − nd; the best over golds.
func ANLS(pred string, golds []string) float64 {
	p := normalizeANLS(pred)
	best := 0.0
	for _, g := range golds {
		g = normalizeANLS(g)
		var s float64
		switch {
		case p == "" && g == "":
			s = 1
		case p == "" || g == "":
			s = 0
		default:
			n := max(len([]rune(p)), len([]rune(g)))
			nd := float64(Levenshtein(p, g)) / float64(n)
			if nd < 0.5 {
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

// cleanLabel strips, uppercases and drops trailing ".", ")" and ":".
func cleanLabel(s string) string {
	return strings.TrimRight(strings.ToUpper(strings.TrimSpace(s)), ".):")
}

// ChoiceLabel maps an extracted answer to a choice label (the LiveMath
// rule): the cleaned answer if it is a valid label; else the label of the
// choice whose text equals the answer (case-insensitive); else the cleaned
// first token if it is a valid label; else ok is false.
func ChoiceLabel(answer string, choices []Choice) (label string, ok bool) {
	valid := map[string]bool{}
	for _, c := range choices {
		valid[cleanLabel(c.Label)] = true
	}
	if l := cleanLabel(answer); valid[l] {
		return l, true
	}
	a := strings.TrimSpace(answer)
	for _, c := range choices {
		if strings.EqualFold(strings.TrimSpace(c.Text), a) && a != "" {
			return cleanLabel(c.Label), true
		}
	}
	if f := strings.FieldsFunc(a, unicode.IsSpace); len(f) > 0 {
		if l := cleanLabel(f[0]); valid[l] {
			return l, true
		}
	}
	return "", false
}
