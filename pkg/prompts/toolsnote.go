package prompts

import (
	"path"
	"slices"
	"strings"
)

// An agent CLI target (backends/exec with option note_tools) records the
// tool calls its stream showed in a line that leads the agent's reply:
// ToolsNote, then the calls in the order made, comma-separated (or
// "none"), then "]" and a blank line. A call is the tool's name, and for
// a shell command also the program it ran, as "Bash(git)". The line is
// always there when the option is on, so a judge reading it reads the
// backend's record, never a line the agent wrote itself.
const ToolsNote = "[agent tool calls:"

// ToolsNoteLine returns the note of calls (each as [ToolCallName] made it).
func ToolsNoteLine(calls []string) string {
	list := "none"
	if len(calls) > 0 {
		list = strings.Join(calls, ", ")
	}
	return ToolsNote + " " + list + "]\n\n"
}

// CutToolsNote returns text without a leading tools note, the calls it
// names, and whether text led with one.
func CutToolsNote(text string) (rest string, calls []string, ok bool) {
	after, found := strings.CutPrefix(text, ToolsNote)
	if !found {
		return text, nil, false
	}
	list, rest, found := strings.Cut(after, "]\n\n")
	if !found {
		if list, found = strings.CutSuffix(after, "]"); !found {
			return text, nil, false
		}
		rest = ""
	}
	if list = strings.TrimSpace(list); list != "none" {
		for _, c := range strings.Split(list, ",") {
			if c = strings.TrimSpace(c); c != "" {
				calls = append(calls, c)
			}
		}
	}
	return rest, calls, true
}

// ToolCallName is how the note names one call: the tool's name, and, when
// the call ran a shell command, the programs the command runs in
// parentheses, space-separated ("Bash(cd git)"): the first word of each
// command of a list or pipeline, through a "bash -c" or "sh -lc" wrapper
// and past leading VAR=value assignments and env, sudo, time or nohup,
// without its directory; at most maxPrograms, each once. Characters that
// could break the note's list (",", "(", ")", "[", "]", blanks) are
// dropped from the names.
func ToolCallName(tool, command string) string {
	name := noteSafe(tool)
	if name == "" {
		name = "tool"
	}
	var progs []string
	for _, p := range Programs(command) {
		if p = noteSafe(p); p != "" {
			progs = append(progs, p)
		}
	}
	if len(progs) == 0 {
		return name
	}
	return name + "(" + strings.Join(progs, " ") + ")"
}

// ToolCallMatches reports whether one call of a tools note is a call of
// tool: its name is tool, or ends in "__"+tool (an MCP tool's
// "mcp__server__tool" name), or one of the programs its shell command ran
// is tool. Case does not matter.
func ToolCallMatches(call, tool string) bool {
	tool = strings.TrimSpace(tool)
	if tool == "" {
		return false
	}
	name, progs, _ := strings.Cut(call, "(")
	name = strings.TrimSpace(name)
	if strings.EqualFold(name, tool) || len(name) > len(tool)+2 && strings.EqualFold(name[len(name)-len(tool)-2:], "__"+tool) {
		return true
	}
	for _, p := range strings.Fields(strings.TrimSuffix(progs, ")")) {
		if strings.EqualFold(p, tool) {
			return true
		}
	}
	return false
}

// maxPrograms bounds the programs named for one shell command.
const maxPrograms = 8

// Programs returns the programs a shell command runs (see ToolCallName).
func Programs(command string) []string {
	var out []string
	seen := map[string]bool{}
	var walk func(string, int)
	walk = func(command string, depth int) {
		for _, words := range shellCommands(command) {
			for len(words) > 0 && (strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "=") ||
				slices.Contains([]string{"env", "sudo", "time", "nohup", "exec"}, words[0])) {
				words = words[1:]
			}
			if len(words) == 0 {
				continue
			}
			prog := path.Base(words[0])
			if depth < 3 && slices.Contains([]string{"bash", "sh", "zsh", "dash"}, prog) {
				if i := slices.IndexFunc(words[1:], func(w string) bool { return strings.HasPrefix(w, "-") && strings.Contains(w, "c") }); i >= 0 && i+2 < len(words) {
					walk(words[i+2], depth+1)
					continue
				}
			}
			if !seen[prog] && len(out) < maxPrograms {
				seen[prog] = true
				out = append(out, prog)
			}
		}
	}
	walk(command, 0)
	return out
}

// shellCommands splits a command line into its simple commands' words,
// honouring single and double quotes and backslashes: a ";", "|", "&" or
// newline outside quotes ends a command. Enough to find each command's
// program and a -c argument; it is not a shell parser.
func shellCommands(s string) [][]string {
	var cmds [][]string
	var words []string
	var cur strings.Builder
	in, quote, esc := false, rune(0), false
	word := func() {
		if in {
			words = append(words, cur.String())
			cur.Reset()
			in = false
		}
	}
	for _, r := range s {
		switch {
		case esc:
			cur.WriteRune(r)
			esc, in = false, true
		case r == '\\' && quote != '\'':
			esc = true
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			word()
		case r == ';' || r == '|' || r == '&' || r == '\n' || r == '(' || r == ')':
			word()
			if len(words) > 0 {
				cmds = append(cmds, words)
				words = nil
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	word()
	if len(words) > 0 {
		cmds = append(cmds, words)
	}
	return cmds
}

func noteSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == ',' || r == '(' || r == ')' || r == '[' || r == ']' || r <= ' ' || r == 0x7f:
			return -1
		}
		return r
	}, s)
}
