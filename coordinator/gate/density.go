package gate

import (
	"strings"

	"github.com/skillfleet/skillfleet/pkg/skill"
)

// DefaultLeadingWords returns the built-in leading words of the semantic
// density bonus (evaluation.leading_words).
func DefaultLeadingWords() []string {
	return []string{"MUST", "ALWAYS", "NEVER", "ONLY", "CRITICAL", "IMPORTANT",
		"RESOLVE", "PREFER", "ENSURE", "STRICT", "VERIFY"}
}

// SemanticDensity returns the share of a skill's tokens that are leading
// words: the skill without its protected regions is lower-cased and cut
// into tokens, the maximal runs of ASCII letters and digits; density is
// (tokens in the leading-word set) / (tokens), 0 for a skill without
// tokens. Leading words are compared lower-cased; nil or empty words
// means [DefaultLeadingWords].
func SemanticDensity(text string, leadingWords []string) float64 {
	if len(leadingWords) == 0 {
		leadingWords = DefaultLeadingWords()
	}
	set := make(map[string]bool, len(leadingWords))
	for _, w := range leadingWords {
		set[strings.ToLower(strings.TrimSpace(w))] = true
	}
	lower := strings.ToLower(skill.StripProtected(text))
	total, hits := 0, 0
	for i := 0; i < len(lower); {
		if !isAlnum(lower[i]) {
			i++
			continue
		}
		j := i + 1
		for j < len(lower) && isAlnum(lower[j]) {
			j++
		}
		total++
		if set[lower[i:j]] {
			hits++
		}
		i = j
	}
	if total == 0 {
		return 0
	}
	return float64(hits) / float64(total)
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
}

// DensityBonus returns weight * SemanticDensity(text, leadingWords), the
// amount use_semantic_density adds to a skill's gate score.
func DensityBonus(text string, leadingWords []string, weight float64) float64 {
	return weight * SemanticDensity(text, leadingWords)
}
