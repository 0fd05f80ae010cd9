package exec

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/skillfleet/skillfleet/backends/internal/httpx"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// Bounds of a trace summary: the commands and paths listed, each one's
// length, the tool errors listed.
const (
	traceMaxUsed   = 12
	traceMaxLine   = 160
	traceMaxErrors = 3
)

// traceSummary is what the agent did, for the optimizer (SkillOpt's
// codex_trace_to_optimizer): how many tool calls, the commands and paths
// they named (at most traceMaxUsed, each cut at traceMaxLine bytes),
// whether it read task.md and the skill's SKILL.md, the errors of its
// failed tool calls, and the shape of its final answer (length, answer
// tags). It holds no tool output, so no file content reaches the
// optimizer through it, and the call's secrets are redacted. It leads the
// reply as one bracketed block (prompts.TraceNote) that the analyst's
// prompt renders apart from the conversation.
func (c *Client) traceSummary(r result, red httpx.Redactor) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s]\n", prompts.TraceNote, c.cfg.Agent)
	fmt.Fprintf(&b, "- tool calls: %d\n", max(r.tools, len(r.used)))
	skillRead, taskRead := "no", "no"
	skillFile := filepath.ToSlash(c.skillPath)
	for _, u := range r.used {
		// A path to the SKILL.md, or a skill tool given the skill's name.
		if strings.Contains(u, skillFile) || strings.Contains(u, filepath.Dir(skillFile)+"/SKILL.md") || u == c.cfg.SkillName {
			skillRead = "yes"
		}
		if strings.Contains(u, "task.md") {
			taskRead = "yes"
		}
	}
	fmt.Fprintf(&b, "- read SKILL.md: %s\n- read task.md: %s\n", skillRead, taskRead)
	for i, u := range r.used {
		if i == traceMaxUsed {
			fmt.Fprintf(&b, "- ... %d more\n", len(r.used)-traceMaxUsed)
			break
		}
		u = strings.Join(strings.Fields(red.String(u)), " ")
		fmt.Fprintf(&b, "- ran: %s\n", head([]byte(u), traceMaxLine))
	}
	if len(r.toolErrors) == 0 {
		b.WriteString("- tool errors: none\n")
	}
	for i, e := range r.toolErrors {
		if i == traceMaxErrors {
			fmt.Fprintf(&b, "- ... %d more tool errors\n", len(r.toolErrors)-traceMaxErrors)
			break
		}
		fmt.Fprintf(&b, "- tool error: %s\n", head([]byte(red.String(e)), traceMaxLine))
	}
	format := "plain text"
	switch low := strings.ToLower(r.content); {
	case strings.TrimSpace(r.content) == "":
		format = "empty"
	case strings.Contains(low, "<answer>") && strings.Contains(low, "</answer>"):
		format = "answer tags"
	}
	fmt.Fprintf(&b, "- final answer: %d chars, %s\n", len(r.content), format)
	b.WriteString(prompts.TraceEnd + "\n\n")
	return b.String()
}
