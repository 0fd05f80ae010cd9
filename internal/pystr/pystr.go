// Package pystr reproduces the parts of CPython 3.11's string semantics
// that SkillOpt's answer scorers rely on, so that skillfleet scores a reply
// exactly as SkillOpt does (issue 23):
//
//   - the whitespace of str.split() and str.strip() (which includes
//     U+001C–U+001F) and the line breaks of str.splitlines() (which include
//     a lone \r, \v, \f, U+001C–U+001E, U+0085, U+2028 and U+2029);
//   - the word characters of the re module's \w and \b on str patterns,
//     which know every Unicode letter and number;
//   - str.lower() and str.upper() with their full mappings (İ lowers to
//     "i̇", ß uppers to "SS") and the final-sigma rule;
//   - code point indexing, for code that finds a position in one string
//     and cuts another at it;
//   - ast.literal_eval for the literals DocVQA's answer cells hold
//     (see [LiteralEval]).
//
// Character properties come from Go's unicode package, corrected to
// Python 3.11's Unicode 14.0.0 by the generated tables.go: code points
// Unicode 14 did not assign are neither letters, numbers, spaces nor
// cased, as in Python. Character names for \N{…} come from
// golang.org/x/text/unicode/runenames. The literal reader is our own:
// the Go ports of Python (gpython, a Python 3.4 interpreter) and
// Starlark do not read today's Python literals (underscores in numbers,
// for one) nor apply literal_eval's rules.
//
// Tests check every code point against CPython's answers
// (testdata/py311_props.txt.gz) and the literal reader against 6,000
// sources CPython evaluated (testdata/py311_literals.jsonl.gz); the
// Python scripts that wrote both are in internal/gen.
package pystr

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// UnicodeVersion is the Unicode version whose properties this package
// reproduces (CPython 3.11's).
const UnicodeVersion = unicodeVersion

// assigned reports whether Python 3.11 knows r.
func assigned(r rune) bool { return r < 0x378 || !unicode.Is(unassigned, r) }

// IsSpace reports whether r is whitespace to str.isspace(), str.split()
// and str.strip(): Unicode White_Space plus U+001C–U+001F (bidi class B
// or S).
func IsSpace(r rune) bool {
	if r >= 0x1c && r <= 0x1f {
		return true
	}
	return unicode.IsSpace(r)
}

// IsLineBreak reports whether str.splitlines() ends a line at r.
func IsLineBreak(r rune) bool {
	switch r {
	case '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
		return true
	}
	return false
}

// IsAlnum reports whether str.isalnum() holds for r: a letter (Lu, Ll,
// Lt, Lm, Lo) or a number (Nd, Nl, No) of Unicode 14.
func IsAlnum(r rune) bool {
	return (unicode.IsLetter(r) || unicode.IsNumber(r)) && assigned(r)
}

// IsWord reports whether r matches \w in a Python str pattern: an
// alphanumeric character or the underscore.
func IsWord(r rune) bool { return r == '_' || IsAlnum(r) }

// Fields is str.split() with no arguments: the runs of non-whitespace.
func Fields(s string) []string { return strings.FieldsFunc(s, IsSpace) }

// Strip is str.strip() with no arguments.
func Strip(s string) string { return strings.TrimFunc(s, IsSpace) }

// LStrip is str.lstrip() with no arguments.
func LStrip(s string) string { return strings.TrimLeftFunc(s, IsSpace) }

// RStrip is str.rstrip() with no arguments.
func RStrip(s string) string { return strings.TrimRightFunc(s, IsSpace) }

// JoinFields is " ".join(s.split()): whitespace runs collapsed to one
// space, none at either end.
func JoinFields(s string) string { return strings.Join(Fields(s), " ") }

// SplitLines is str.splitlines() without keepends: "\r\n" is one break,
// every other [IsLineBreak] rune is one; a break at the very end starts no
// further line, and "" has no lines.
func SplitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !IsLineBreak(r) {
			i += n
			continue
		}
		out = append(out, s[start:i])
		i += n
		if r == '\r' && i < len(s) && s[i] == '\n' {
			i++
		}
		start = i
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// IsCased reports whether r has the Unicode property Cased (Lowercase,
// Uppercase or a titlecase letter).
func IsCased(r rune) bool {
	if !assigned(r) {
		return false
	}
	return unicode.IsLower(r) || unicode.IsUpper(r) || unicode.IsTitle(r) ||
		unicode.Is(unicode.Other_Lowercase, r) || unicode.Is(unicode.Other_Uppercase, r)
}

// IsCaseIgnorable reports whether r has the Unicode property
// Case_Ignorable: categories Mn, Me, Cf, Lm, Sk, or Word_Break MidLetter,
// MidNumLet or Single_Quote.
func IsCaseIgnorable(r rune) bool {
	switch r {
	case '\'', '.', ':', 0xb7, 0x387, 0x55f, 0x5f4, 0x2018, 0x2019, 0x2024, 0x2027,
		0xfe13, 0xfe52, 0xfe55, 0xff07, 0xff0e, 0xff1a:
		return true
	}
	if !assigned(r) {
		return false
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}

// Lower is str.lower(): the full lowercase mapping (İ becomes "i̇") and a
// capital sigma that ends a word becomes the final ς.
func Lower(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i, r := range s {
		switch r {
		case 0x130:
			b.WriteString("i\u0307")
		case 0x3a3:
			if finalSigma(s, i) {
				b.WriteRune(0x3c2)
			} else {
				b.WriteRune(0x3c3)
			}
		default:
			if r == utf8.RuneError {
				// Keep the bytes of invalid UTF-8 as they are.
				_, n := utf8.DecodeRuneInString(s[i:])
				b.WriteString(s[i : i+n])
				continue
			}
			if assigned(r) {
				r = unicode.ToLower(r)
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}

// finalSigma is the Final_Sigma condition for the Σ at byte i of s: a
// cased letter before it and none after it, skipping case-ignorable
// characters on both sides.
func finalSigma(s string, i int) bool {
	before := s[:i]
	var c rune
	found := false
	for len(before) > 0 {
		r, n := utf8.DecodeLastRuneInString(before)
		before = before[:len(before)-n]
		if !IsCaseIgnorable(r) {
			c, found = r, true
			break
		}
	}
	if !found || !IsCased(c) {
		return false
	}
	for _, r := range s[i+len("Σ"):] {
		if !IsCaseIgnorable(r) {
			return !IsCased(r)
		}
	}
	return true
}

// Upper is str.upper(): the full uppercase mapping (ß becomes "SS").
func Upper(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i, r := range s {
		if u, ok := upperSpecial[r]; ok {
			b.WriteString(u)
			continue
		}
		if r == utf8.RuneError {
			_, n := utf8.DecodeRuneInString(s[i:])
			b.WriteString(s[i : i+n])
			continue
		}
		if assigned(r) {
			r = unicode.ToUpper(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Len is len() of a str: the number of code points.
func Len(s string) int { return utf8.RuneCountInString(s) }

// RFind is str.rfind(sub) in code points: the index of the last
// occurrence of sub in s, or -1.
func RFind(s, sub string) int {
	i := strings.LastIndex(s, sub)
	if i < 0 {
		return -1
	}
	return utf8.RuneCountInString(s[:i])
}

// Find is str.find(sub) in code points: the index of the first occurrence
// of sub in s, or -1.
func Find(s, sub string) int {
	i := strings.Index(s, sub)
	if i < 0 {
		return -1
	}
	return utf8.RuneCountInString(s[:i])
}

// Slice is s[from:to] on code points, with Python's clamping: negative
// indices count from the end, out-of-range ones are clamped, and an empty
// range gives "".
func Slice(s string, from, to int) string {
	rs := []rune(s)
	n := len(rs)
	clamp := func(i int) int {
		if i < 0 {
			i += n
			if i < 0 {
				i = 0
			}
		}
		return min(i, n)
	}
	from, to = clamp(from), clamp(to)
	if from >= to {
		return ""
	}
	return string(rs[from:to])
}

// IsBoundary reports whether \b matches at byte offset i of s: exactly one
// of the runes before and after i is a word character ([IsWord]).
func IsBoundary(s string, i int) bool {
	before, after := false, false
	if i > 0 {
		r, _ := utf8.DecodeLastRuneInString(s[:i])
		before = IsWord(r)
	}
	if i < len(s) {
		r, _ := utf8.DecodeRuneInString(s[i:])
		after = IsWord(r)
	}
	return before != after
}

// ReplaceWords is re.sub(r"\b(w1|w2|…)\b", repl, s) for literal words:
// scanning left to right, at each word boundary the first of words (in
// order, as the alternation tries them) that is followed by a boundary is
// replaced; the scan goes on after it. List longer forms first where the
// pattern has an optional suffix ("millions?" is "millions", "million").
func ReplaceWords(s string, words []string, repl string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		if IsBoundary(s, i) {
			matched := ""
			for _, w := range words {
				if w != "" && strings.HasPrefix(s[i:], w) && IsBoundary(s, i+len(w)) {
					matched = w
					break
				}
			}
			if matched != "" {
				b.WriteString(s[last:i])
				b.WriteString(repl)
				i += len(matched)
				last = i
				continue
			}
		}
		_, n := utf8.DecodeRuneInString(s[i:])
		i += n
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}
