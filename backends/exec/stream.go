package exec

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// eventStream reads the JSON-lines event stream of an agent CLI's print
// mode: every non-blank line is one JSON object whose event type is at
// typeKey. A line that is not such an object is an *OutputError (it says
// whether the stream was cut at max_output_bytes, ended inside an event,
// or held something else), except, with lenient, a line that does not
// start with "{" (a CLI that prints other text on stdout).
type eventStream struct {
	format  string
	typeKey string
	lenient bool

	events   int
	lastType string
	lastLine []byte
}

// each calls fn for every event, in order, with its type and its line.
func (s *eventStream) each(out []byte, cut bool, fn func(typ string, line []byte)) *OutputError {
	lines := bytes.Split(out, []byte("\n"))
	for i, line := range lines {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if s.lenient && line[0] != '{' {
			continue
		}
		var head map[string]json.RawMessage
		err := json.Unmarshal(line, &head)
		var typ string
		if err == nil {
			_ = json.Unmarshal(head[s.typeKey], &typ)
		}
		if err != nil || typ == "" {
			last := i == len(lines)-1 || len(bytes.TrimSpace(bytes.Join(lines[i+1:], nil))) == 0
			switch {
			case last && cut:
				return s.fail(i+1, line, "cut off inside an event at max_output_bytes (%d bytes kept)%s; raise option max_output_bytes", len(out), s.after())
			case last && line[0] == '{' && err != nil:
				return s.fail(i+1, line, "the output ends inside an event (the stream was truncated)%s", s.after())
			case err != nil:
				return s.fail(i+1, line, "not a JSON event: %v", err)
			default:
				return s.fail(i+1, line, "a JSON value without an event type (%q)", s.typeKey)
			}
		}
		s.events++
		s.lastType, s.lastLine = typ, line
		fn(typ, line)
	}
	return nil
}

// after names the last event read, for a message about what came next.
func (s *eventStream) after() string {
	if s.events == 0 {
		return ", before any event"
	}
	return fmt.Sprintf(" after %d events (last: %s)", s.events, s.lastType)
}

func (s *eventStream) fail(line int, text []byte, format string, a ...any) *OutputError {
	return &OutputError{Format: s.format, Line: line, Problem: fmt.Sprintf(format, a...), Excerpt: string(head(text, 300))}
}

// unfinished is the error of a stream that parsed but never reached its
// end event (named by want): no event at all, cut at max_output_bytes, or
// ended early (the CLI died or exited after partial output).
func (s *eventStream) unfinished(out []byte, cut bool, want string) *OutputError {
	switch {
	case s.events == 0 && cut:
		return s.fail(0, out, "cut off at max_output_bytes (%d bytes kept) before any JSON event; raise option max_output_bytes", len(out))
	case s.events == 0:
		return s.fail(0, out, "no JSON event")
	case cut:
		return s.fail(0, s.lastLine, "cut off at max_output_bytes (%d bytes kept) before the %s event (last event: %s); raise option max_output_bytes", len(out), want, s.lastType)
	default:
		return s.fail(0, s.lastLine, "%d events and no %s event (the stream ended early; last event: %s)", s.events, want, s.lastType)
	}
}
