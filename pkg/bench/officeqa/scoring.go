package officeqa

import (
	"strings"

	"github.com/skillfleet/skillfleet/internal/pystr"
	"github.com/skillfleet/skillfleet/pkg/bench/score"
)

// ScoreOptions are the named deviations from SkillOpt's OfficeQA scoring;
// the zero value scores exactly as SkillOpt does.
type ScoreOptions struct {
	// RequireAnswerTag scores a final reply without a complete
	// <answer>…</answer> pair as 0, where SkillOpt scores its last
	// non-empty line.
	RequireAnswerTag bool
}

// ExtractAnswer is SkillOpt's OfficeQA extraction: the first
// <answer>…</answer> pair's text, else the last non-empty line, stripped.
func ExtractAnswer(text string) string { return score.ExtractFirstAnswer(text) }

// officePunct is Python's string.punctuation without ".", "-" and "%",
// the characters OfficeQA's normalisation deletes (commas go first).
const officePunct = "!\"#$&'()*+,/:;<=>?@[\\]^_`{|}~"

// dropWords are the whole words the normalisation blanks, longer forms
// first as the regular expression's optional "s" tries them.
var dropWords = []string{"millions", "million", "billions", "billion", "dollars", "dollar", "nominal"}

// Normalise is OfficeQA's answer normalisation: lowercase (str.lower) and
// strip, delete commas and the ASCII punctuation other than ".", "-" and
// "%" (other characters, "−" and "€" included, stay), blank the whole
// words million(s), billion(s), dollar(s) and nominal (Python's Unicode
// word boundaries), and collapse whitespace.
func Normalise(s string) string {
	s = pystr.Strip(pystr.Lower(s))
	s = strings.Map(func(r rune) rune {
		if r < 128 && strings.ContainsRune(officePunct, r) {
			return -1
		}
		return r
	}, s)
	s = pystr.ReplaceWords(s, dropWords, " ")
	return pystr.JoinFields(s)
}

// Score returns the hard (exact normalised) and soft (token F1) scores of
// an extracted answer.
func Score(pred, gold string) (hard, soft float64) {
	p, g := Normalise(pred), Normalise(gold)
	if p == g {
		hard = 1
	}
	return hard, score.TokenF1(pystr.Fields(p), pystr.Fields(g))
}

// Evaluate scores a final reply as SkillOpt's rollout does: the answer is
// [ExtractAnswer]'s; an empty answer scores 0 and 0, whatever the gold;
// else [Score]. With opt.RequireAnswerTag a reply without a complete
// answer pair has an empty answer.
func Evaluate(reply, gold string, opt ScoreOptions) (answer string, hard, soft float64) {
	if opt.RequireAnswerTag && !score.AnswerTag.MatchString(reply) {
		return "", 0, 0
	}
	answer = ExtractAnswer(reply)
	if answer == "" {
		return "", 0, 0
	}
	hard, soft = Score(answer, gold)
	return answer, hard, soft
}
