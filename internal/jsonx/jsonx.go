// Package jsonx extracts a JSON object from an LLM reply and reads
// untrusted numeric fields defensively (fix B9).
//
// [Extract] first tries SkillOpt's two parses (spec §10.2): the first
// ```json fence, then the text from the first '{' to the last '}'. Only if
// both fail does it go further: any fenced block, then a string-aware
// repair of the first object (trailing commas dropped, raw control
// characters in strings escaped, and an object cut off by truncated output
// closed after its last complete value).
package jsonx

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
)

// ErrNoObject is returned when no JSON object can be read from the text.
var ErrNoObject = errors.New("no JSON object in reply")

const fence = "```"

// Extract returns the first JSON object in text. repaired is false when
// one of SkillOpt's own parses found it (the first ```json fence, or the
// greedy first '{' to last '}'), and true when it took this package's
// tolerance: another fenced block (with another tag or none), or a repair.
// The raw message is always a valid JSON object.
func Extract(text string) (raw json.RawMessage, repaired bool, err error) {
	// 1. The first ```json fence.
	if body, ok := taggedFence(text); ok {
		if obj, ok := asObject(body); ok {
			return obj, false, nil
		}
	}
	// 2. Greedy: first '{' to last '}'.
	lo, hi := strings.IndexByte(text, '{'), strings.LastIndexByte(text, '}')
	if lo >= 0 && hi > lo {
		if obj, ok := asObject(text[lo : hi+1]); ok {
			return obj, false, nil
		}
	}
	// 3. Any fenced block, tagged or not, in order.
	for rest := text; ; {
		body, after, ok := nextFence(rest)
		if !ok {
			break
		}
		if obj, ok := asObject(body); ok {
			return obj, true, nil
		}
		rest = after
	}
	// 4. Repair: the first fence's body (even if the fence is never
	// closed), then the text from its first '{'.
	var candidates []string
	if i := strings.Index(text, fence); i >= 0 {
		body := text[i+len(fence):]
		if nl := strings.IndexByte(body, '\n'); nl >= 0 {
			body = body[nl+1:]
		}
		if j := strings.Index(body, fence); j >= 0 {
			body = body[:j]
		}
		candidates = append(candidates, body)
	}
	candidates = append(candidates, text)
	for _, c := range candidates {
		lo := strings.IndexByte(c, '{')
		if lo < 0 {
			continue
		}
		if fixed, ok := repair(c[lo:]); ok {
			if obj, ok := asObject(fixed); ok {
				return obj, true, nil
			}
		}
	}
	return nil, false, ErrNoObject
}

// taggedFence returns the body of the first ```json fence (tag matched
// case-insensitively), up to the next ```.
func taggedFence(text string) (string, bool) {
	for i := 0; ; {
		j := strings.Index(text[i:], fence)
		if j < 0 {
			return "", false
		}
		start := i + j + len(fence)
		if len(text)-start >= 4 && strings.EqualFold(text[start:start+4], "json") {
			body := text[start+4:]
			end := strings.Index(body, fence)
			if end < 0 {
				return "", false
			}
			return body[:end], true
		}
		i = start
	}
}

// nextFence returns the body of the next complete fenced block (the rest
// of the opening line, a language tag, is skipped) and the text after it.
func nextFence(text string) (body, after string, ok bool) {
	i := strings.Index(text, fence)
	if i < 0 {
		return "", "", false
	}
	rest := text[i+len(fence):]
	if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
		// A one-line fence (```{...}```) has no tag line.
		if end := strings.Index(rest[:nl], fence); end < 0 {
			rest = rest[nl+1:]
		}
	}
	end := strings.Index(rest, fence)
	if end < 0 {
		return "", "", false
	}
	return rest[:end], rest[end+len(fence):], true
}

// asObject returns s trimmed if it is one valid JSON object.
func asObject(s string) (json.RawMessage, bool) {
	b := bytes.TrimSpace([]byte(s))
	if len(b) == 0 || b[0] != '{' || !json.Valid(b) {
		return nil, false
	}
	return b, true
}

// Container states in repair.
const (
	wantKey   = iota // object: a key or '}'
	wantColon        // object: ':'
	wantValue        // a value (or ']' in an empty array)
	afterVal         // ',' or the closer
)

type frame struct {
	obj   bool
	state int
}

// repair reads the object that s starts with, tolerating trailing commas,
// raw control characters in strings, mismatched closers and truncation. On
// truncation the output is cut after the last complete value and the
// containers open there are closed. A number at the very end counts as cut
// short; a container inside an array counts only once it closes, so a
// truncated reply keeps its complete edits and loses the partial one
// whole, while an object's partial member object keeps its complete
// fields. It returns false when s is not shaped like JSON.
func repair(s string) (string, bool) {
	out := make([]byte, 0, len(s)+8)
	var stack []frame
	safeLen, safeDepth := -1, 0
	comma := -1 // output index of a comma not yet followed by a value
	// markSafe records a point where closing the open containers gives
	// valid JSON worth keeping: not inside a container that is itself an
	// element of an array (a partial list item is dropped whole).
	markSafe := func() {
		for k := 0; k < len(stack)-1; k++ {
			if !stack[k].obj {
				return
			}
		}
		safeLen, safeDepth = len(out), len(stack)
	}
	// closeTop pops the top frame and completes the value it was;
	// it reports whether the outermost object is complete.
	closeTop := func() bool {
		if comma >= 0 {
			out = append(out[:comma], out[comma+1:]...)
			comma = -1
		}
		if stack[len(stack)-1].obj {
			out = append(out, '}')
		} else {
			out = append(out, ']')
		}
		stack = stack[:len(stack)-1]
		if len(stack) == 0 {
			return true
		}
		stack[len(stack)-1].state = afterVal
		markSafe()
		return false
	}
	open := func(obj bool) {
		if obj {
			out = append(out, '{')
			stack = append(stack, frame{obj: true, state: wantKey})
		} else {
			out = append(out, '[')
			stack = append(stack, frame{obj: false, state: wantValue})
		}
		if len(stack) == 1 {
			markSafe() // "{" closes to "{}"; inner containers need a value
		}
	}

	i := 0
	for i < len(s) {
		c := s[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			out = append(out, c)
			i++
			continue
		}
		if len(stack) == 0 {
			if c != '{' {
				return "", false
			}
			open(true)
			i++
			continue
		}
		top := &stack[len(stack)-1]
		switch top.state {
		case wantKey:
			switch c {
			case '"':
				n, ok := scanString(s[i:], &out)
				if !ok {
					return truncate(out, stack, safeLen, safeDepth)
				}
				comma = -1
				i += n
				top.state = wantColon
				continue
			case '}':
				i++
				if closeTop() {
					return string(out), true
				}
				continue
			}
			return "", false
		case wantColon:
			if c != ':' {
				return "", false
			}
			out = append(out, c)
			i++
			top.state = wantValue
			continue
		case wantValue:
			switch {
			case c == '{' || c == '[':
				comma = -1
				top.state = afterVal // once the child closes
				open(c == '{')
				i++
				continue
			case c == ']' && !top.obj:
				i++
				if closeTop() {
					return string(out), true
				}
				continue
			case c == '"':
				n, ok := scanString(s[i:], &out)
				if !ok {
					return truncate(out, stack, safeLen, safeDepth)
				}
				i += n
			case c == 't' || c == 'f' || c == 'n':
				lit := "null"
				switch c {
				case 't':
					lit = "true"
				case 'f':
					lit = "false"
				}
				rest := s[i:]
				if len(rest) < len(lit) {
					if strings.HasPrefix(lit, rest) {
						return truncate(out, stack, safeLen, safeDepth)
					}
					return "", false
				}
				if rest[:len(lit)] != lit {
					return "", false
				}
				out = append(out, lit...)
				i += len(lit)
			case c == '-' || (c >= '0' && c <= '9'):
				j := i
				for j < len(s) && strings.IndexByte("+-0123456789.eE", s[j]) >= 0 {
					j++
				}
				if j == len(s) {
					// A number at the very end may be cut short.
					return truncate(out, stack, safeLen, safeDepth)
				}
				out = append(out, s[i:j]...)
				i = j
			default:
				return "", false
			}
			comma = -1
			top.state = afterVal
			markSafe()
			continue
		case afterVal:
			switch c {
			case ',':
				comma = len(out)
				out = append(out, c)
				i++
				if top.obj {
					top.state = wantKey
				} else {
					top.state = wantValue
				}
				continue
			case '}', ']':
				want := c == '}'
				// Close inner containers a mismatched closer skips over.
				k := len(stack) - 1
				for k >= 0 && stack[k].obj != want {
					k--
				}
				if k < 0 {
					return "", false
				}
				for len(stack)-1 > k {
					closeTop()
				}
				i++
				if closeTop() {
					return string(out), true
				}
				continue
			}
			return "", false
		}
	}
	return truncate(out, stack, safeLen, safeDepth)
}

// truncate cuts out at the last safe point and closes the containers open
// there.
func truncate(out []byte, stack []frame, safeLen, safeDepth int) (string, bool) {
	if safeLen < 0 {
		return "", false
	}
	out = out[:safeLen]
	for k := safeDepth - 1; k >= 0; k-- {
		if stack[k].obj {
			out = append(out, '}')
		} else {
			out = append(out, ']')
		}
	}
	return string(out), true
}

// scanString copies the JSON string at the start of s (s[0] == '"') to
// out, escaping raw control characters, and returns the bytes consumed. It
// reports false if the string is not closed before the end of s.
func scanString(s string, out *[]byte) (int, bool) {
	buf := append(*out, '"')
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			*out = append(buf, '"')
			return i + 1, true
		case c == '\\':
			if i+1 >= len(s) {
				return 0, false
			}
			buf = append(buf, c, s[i+1])
			i++
		case c < 0x20:
			switch c {
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
			}
		default:
			buf = append(buf, c)
		}
	}
	return 0, false
}

// Int reads an integer from an untrusted JSON field: a number with an
// integral value (8, 8.0, 8e0) or a string holding one after trimming
// spaces ("8", " 8 ", "8.0"). Anything else (a non-integral or out-of-range
// number, "eight", true, null, an object, an array, a missing field) is
// rejected.
func Int(raw json.RawMessage) (int, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return 0, false
	}
	var s string
	switch raw[0] {
	case '"':
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, false
		}
		s = strings.TrimSpace(s)
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		var n json.Number
		if err := json.Unmarshal(raw, &n); err != nil {
			return 0, false
		}
		s = n.String()
	default:
		return 0, false
	}
	if v, err := strconv.Atoi(s); err == nil {
		return v, true
	}
	// Decimal notation only: ParseFloat would also take "0x10", "Inf".
	if s == "" || strings.Trim(s, "+-0123456789.eE") != "" {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	// -MinInt is 2^63 (2^31 on 32-bit platforms), exact as a float64.
	if err != nil || f != math.Trunc(f) || f < math.MinInt || f >= -float64(math.MinInt) {
		return 0, false
	}
	return int(f), true
}
