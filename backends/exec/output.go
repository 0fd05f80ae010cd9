package exec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// result is what an agent's output says: the reply, its usage, whether
// the agent reported a failure, and what its tools were given.
type result struct {
	content string
	model   string
	usage   *llm.Usage
	failed  bool
	// used are the shell commands and file paths the agent's tool calls
	// named, in order (the JSON formats only); noteOpenedFiles maps them to
	// the files of a skill package.
	used []string
	// tools counts the agent's tool calls and toolErrors holds what its
	// failed ones said (the JSON formats that report them), for the trace
	// summary (trace.go).
	tools      int
	toolErrors []string
	// calls name the agent's tool calls in order, as prompts.ToolCallName
	// makes them (the tool, and the programs of a shell command), for the
	// tools note (Config.NoteTools).
	calls []string
}

// OutputError is agent output that does not read in the format its
// Output names: which line (1-based; 0 for the output as a whole), what
// was wrong, and the text in question (the line, the last event, the
// output's head; at most 300 bytes, with the call's secrets redacted
// before the error leaves the backend).
type OutputError struct {
	Format  string
	Line    int
	Problem string
	Excerpt string
	// empty: the stream was whole but its reply held no text (option
	// empty_retries reruns such a call).
	empty bool
}

func (e *OutputError) Error() string {
	s := e.Format + " output"
	if e.Line > 0 {
		s += fmt.Sprintf(", line %d", e.Line)
	}
	s += ": " + e.Problem
	if e.Excerpt != "" {
		s += "; it reads: " + e.Excerpt
	}
	return s
}

// parse reads the agent's stdout in the configured format; cut says the
// output passed Config.MaxOutput and was cut there.
func (c *Client) parse(out []byte, cut bool) (result, *OutputError) {
	switch c.output {
	case OutputClaudeJSON:
		return parseClaude(out, cut, c.skillDir())
	case OutputCodexJSON:
		return parseCodex(out, cut)
	case OutputCursorJSON:
		return parseCursor(out, cut)
	case OutputCopilotJSON:
		return parseCopilot(out, cut)
	case OutputPiJSON:
		return parsePi(out, cut)
	case OutputOpencodeJSON:
		return parseOpencode(out, cut)
	default:
		return result{content: strings.TrimRight(string(out), "\r\n")}, nil
	}
}

// skillDir is the skill's directory relative to the work directory, with
// forward slashes.
func (c *Client) skillDir() string { return path.Dir(filepath.ToSlash(c.skillPath)) }

// claudeEvent is one line of Claude Code's print-mode output: with
// --output-format stream-json an event a line (system, assistant, user,
// ..., the result last), with json the result alone.
type claudeEvent struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
	// The result event.
	IsError bool   `json:"is_error"`
	Result  string `json:"result"`
	Usage   *struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	} `json:"usage"`
	// ModelUsage is per model, side calls to other models included.
	ModelUsage map[string]struct {
		InputTokens              int64 `json:"inputTokens"`
		OutputTokens             int64 `json:"outputTokens"`
		CacheReadInputTokens     int64 `json:"cacheReadInputTokens"`
		CacheCreationInputTokens int64 `json:"cacheCreationInputTokens"`
	} `json:"modelUsage"`
	// An assistant event: one model message, whose tool_use blocks are
	// the agent's tool calls.
	Message *struct {
		Content []struct {
			Type  string          `json:"type"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		} `json:"content"`
	} `json:"message"`
}

// parseClaude reads Claude Code's print-mode output (`claude -p
// --output-format stream-json --verbose`, or `--output-format json`):
// every line is a JSON event; the result event gives the reply, the
// failure flag and the usage, and the assistant events' tool_use blocks
// give what the agent's tools were given (see claudeToolUse). skillDir is
// the skill's directory relative to the work directory. A line that is
// not a JSON event, or an output without a result event (the stream was
// cut, or the CLI died before the end), is an *OutputError saying which.
func parseClaude(out []byte, cut bool, skillDir string) (result, *OutputError) {
	var r result
	fail := func(line int, text []byte, format string, a ...any) (result, *OutputError) {
		return r, &OutputError{Format: OutputClaudeJSON, Line: line, Problem: fmt.Sprintf(format, a...), Excerpt: string(head(text, 300))}
	}
	lines := bytes.Split(out, []byte("\n"))
	var final *claudeEvent
	var lastLine []byte
	events := 0
	for i, line := range lines {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		lastLine = line
		var ev claudeEvent
		if err := json.Unmarshal(line, &ev); err != nil || ev.Type == "" {
			last := i == len(lines)-1
			switch {
			case last && cut:
				return fail(i+1, line, "cut off inside an event at max_output_bytes (%d bytes kept) before the result event; raise option max_output_bytes", len(out))
			case last && line[0] == '{':
				return fail(i+1, line, "the output ends inside an event (the stream was truncated) before the result event")
			case err != nil:
				return fail(i+1, line, "not a JSON event: %v", err)
			default:
				return fail(i+1, line, "a JSON value without an event type")
			}
		}
		events++
		switch ev.Type {
		case "assistant":
			if ev.Message == nil {
				continue
			}
			for _, b := range ev.Message.Content {
				if b.Type == "tool_use" {
					r.used = append(r.used, claudeToolUse(b.Name, b.Input, skillDir)...)
					r.calls = append(r.calls, prompts.ToolCallName(b.Name, inputCommand(b.Input)))
				}
			}
		case "result":
			final = &ev
		}
	}
	if final == nil {
		switch {
		case events == 0:
			return fail(0, out, "no JSON event")
		case cut:
			return fail(0, lastLine, "cut off at max_output_bytes (%d bytes kept) before the result event; raise option max_output_bytes", len(out))
		default:
			return fail(0, lastLine, "%d events and no result event (the stream ended early)", events)
		}
	}
	r.content, r.failed = final.Result, final.IsError
	if final.IsError && r.content == "" {
		r.content = final.Subtype
	}
	if u := final.Usage; u != nil {
		r.usage = &llm.Usage{
			InputTokens:  u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens,
			OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadInputTokens, CacheWriteTokens: u.CacheCreationInputTokens,
		}
	}
	if len(final.ModelUsage) > 0 {
		// The per-model counts include calls to other models (a smaller
		// model for side tasks) that "usage" leaves out.
		var u llm.Usage
		for _, m := range final.ModelUsage {
			u.Add(llm.Usage{InputTokens: m.InputTokens + m.CacheReadInputTokens + m.CacheCreationInputTokens, OutputTokens: m.OutputTokens,
				CacheReadTokens: m.CacheReadInputTokens, CacheWriteTokens: m.CacheCreationInputTokens})
		}
		r.usage = &u
	}
	return r, nil
}

// claudeToolUse returns what one Claude Code tool call names that can open
// a file: a Bash command, the file_path of Read, the path Grep searches
// (a file it searches is opened; a directory is not), and, for the Skill
// tool loading the skill in skillDir, that skill's SKILL.md. Glob is a
// listing: it opens nothing, like a find in a shell.
func claudeToolUse(name string, input json.RawMessage, skillDir string) []string {
	var in struct {
		Command  string `json:"command"`
		FilePath string `json:"file_path"`
		Path     string `json:"path"`
		Skill    string `json:"skill"`
	}
	if json.Unmarshal(input, &in) != nil {
		return nil
	}
	var s string
	switch name {
	case "Bash":
		s = in.Command
	case "Read":
		s = in.FilePath
	case "Grep":
		s = in.Path
	case "Skill":
		if in.Skill != "" && in.Skill == path.Base(skillDir) {
			s = "/" + skillDir + "/SKILL.md"
		}
	}
	if s == "" {
		return nil
	}
	return []string{s}
}

// inputCommand is the shell command a tool call's input gives ("command"
// or "cmd", a string or an argv; "" when there is none).
func inputCommand(input json.RawMessage) string {
	var in map[string]any
	if json.Unmarshal(input, &in) != nil {
		return ""
	}
	return argCommand(in)
}

// argCommand is inputCommand on decoded arguments.
func argCommand(args map[string]any) string {
	for _, k := range []string{"command", "cmd"} {
		switch v := args[k].(type) {
		case string:
			return v
		case []any:
			var words []string
			for _, w := range v {
				if s, ok := w.(string); ok {
					words = append(words, "'"+strings.ReplaceAll(s, "'", `'\''`)+"'")
				}
			}
			return strings.Join(words, " ")
		}
	}
	return ""
}

// parseCodex reads `codex exec --json` events: the last agent_message is
// the reply, the turn.completed usages add up, a turn.failed or error
// event is the agent's failure, and the completed command_execution items
// are the shell commands the agent ran. Lines that are not JSON are
// skipped (the CLI may print other text), but the stream must end the
// turn: an output with no JSON event, or whose events stop before a
// turn.completed, turn.failed or error event (the CLI exited after partial
// output, died, or was cut at max_output_bytes), is an *OutputError naming
// the last event seen, never an empty or partial reply.
func parseCodex(out []byte, cut bool) (result, *OutputError) {
	var r result
	fail := func(text []byte, format string, a ...any) (result, *OutputError) {
		return r, &OutputError{Format: OutputCodexJSON, Problem: fmt.Sprintf(format, a...), Excerpt: string(head(text, 300))}
	}
	var lastType string
	var lastEvent, lastLine []byte
	events, ended := 0, false
	for _, line := range bytes.Split(out, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		lastLine = line
		if line[0] != '{' {
			continue
		}
		var ev struct {
			Type string `json:"type"`
			Item *struct {
				Type    string `json:"type"`
				Text    string `json:"text"`
				Command string `json:"command"`
				Tool    string `json:"tool"`
			} `json:"item"`
			Usage *struct {
				InputTokens       int64 `json:"input_tokens"`
				CachedInputTokens int64 `json:"cached_input_tokens"`
				OutputTokens      int64 `json:"output_tokens"`
				ReasoningTokens   int64 `json:"reasoning_output_tokens"`
			} `json:"usage"`
			Message string `json:"message"`
			Error   *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(line, &ev) != nil {
			continue
		}
		events++
		lastType, lastEvent = cmpOr(ev.Type, "(no type)"), line
		switch ev.Type {
		case "item.completed":
			switch {
			case ev.Item == nil:
			case ev.Item.Type == "agent_message":
				r.content = ev.Item.Text
			case ev.Item.Type == "command_execution":
				r.used = append(r.used, ev.Item.Command)
				r.calls = append(r.calls, prompts.ToolCallName("shell", ev.Item.Command))
			case ev.Item.Type == "mcp_tool_call":
				r.calls = append(r.calls, prompts.ToolCallName(cmpOr(ev.Item.Tool, "mcp_tool_call"), ""))
			case ev.Item.Type == "web_search" || ev.Item.Type == "file_change":
				r.calls = append(r.calls, ev.Item.Type)
			}
		case "turn.completed":
			ended = true
			if u := ev.Usage; u != nil {
				if r.usage == nil {
					r.usage = &llm.Usage{}
				}
				r.usage.Add(llm.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CachedInputTokens, ReasoningTokens: u.ReasoningTokens})
			}
		case "turn.failed", "error":
			ended = true
			r.failed = true
			if ev.Error != nil {
				r.content = ev.Error.Message
			} else if ev.Message != "" {
				r.content = ev.Message
			}
		}
	}
	switch {
	case r.failed:
		// The agent's own report of its failure stands, whatever followed.
		return r, nil
	case events == 0 && cut:
		return fail(out, "cut off at max_output_bytes (%d bytes kept) before any JSON event; raise option max_output_bytes", len(out))
	case events == 0:
		return fail(out, "no JSON event")
	case ended:
		return r, nil
	case cut:
		return fail(lastLine, "cut off at max_output_bytes (%d bytes kept) before the turn ended (last event: %s); raise option max_output_bytes", len(out), lastType)
	case len(lastLine) > 0 && lastLine[0] == '{' && !bytes.Equal(lastLine, lastEvent):
		return fail(lastLine, "the output ends inside an event (the stream was truncated) before turn.completed (last event: %s)", lastType)
	default:
		return fail(lastEvent, "output ended without turn.completed (last event: %s)", lastType)
	}
}
