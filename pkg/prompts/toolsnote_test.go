package prompts

import (
	"slices"
	"testing"
)

func TestToolCallNameNamesTheProgramsAShellCallRan(t *testing.T) {
	for _, tc := range []struct{ tool, command, want string }{
		{"Read", "", "Read"},
		{"Bash", "git log --oneline -3", "Bash(git)"},
		{"shell", `/bin/bash -lc 'cd /work && GIT_PAGER=cat git diff | head -5'`, "shell(cd git head)"},
		{"shell", `bash -c "echo 'a;b' ; sudo /usr/bin/make test"`, "shell(echo make)"},
		{"Bash", "FOO=1 env BAR=2 go test ./...", "Bash(go)"},
		{"mcp__github__create_issue", "", "mcp__github__create_issue"},
		{"we(ird), [tool]", "p,r[o]g x", "weirdtool(prog)"},
		{"", "", "tool"},
	} {
		if got := ToolCallName(tc.tool, tc.command); got != tc.want {
			t.Errorf("ToolCallName(%q, %q) = %q, want %q", tc.tool, tc.command, got, tc.want)
		}
	}
}

func TestToolsNoteRoundTripAndMatching(t *testing.T) {
	calls := []string{ToolCallName("Skill", ""), ToolCallName("Bash", "cd x && git status"), ToolCallName("mcp__github__create_issue", "")}
	text := ToolsNoteLine(calls) + "[agent trace: x]\nthe answer"
	rest, got, ok := CutToolsNote(text)
	if !ok || !slices.Equal(got, calls) || rest != "[agent trace: x]\nthe answer" {
		t.Fatalf("CutToolsNote = %q, %q, %v; want %q and the text after the note", rest, got, ok, calls)
	}
	rest, got, ok = CutToolsNote(ToolsNoteLine(nil) + "plain")
	if !ok || got != nil || rest != "plain" {
		t.Fatalf("empty note: %q, %q, %v", rest, got, ok)
	}
	if rest, got, ok := CutToolsNote("no note [agent tool calls: Bash]\n\nx"); ok || got != nil || rest != "no note [agent tool calls: Bash]\n\nx" {
		t.Fatalf("a note not leading the text was read: %q, %q, %v", rest, got, ok)
	}
	for _, tc := range []struct {
		call, tool string
		want       bool
	}{
		{"Bash(cd git)", "git", true},
		{"Bash(cd git)", "bash", true},
		{"Bash(cd git)", "make", false},
		{"mcp__github__create_issue", "create_issue", true},
		{"mcp__github__create_issue", "issue", false},
		{"Skill", "skill", true},
		{"Read", "", false},
		{"WebFetch", "Web", false},
	} {
		if got := ToolCallMatches(tc.call, tc.tool); got != tc.want {
			t.Errorf("ToolCallMatches(%q, %q) = %v, want %v", tc.call, tc.tool, got, tc.want)
		}
	}
}
