package agentinstall

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAgentArg(t *testing.T) {
	if a, rest, err := AgentArg("install", []string{"codex", "--home", "h"}); err != nil || a != Codex || len(rest) != 2 {
		t.Errorf("codex: %q %v %v", a, rest, err)
	}
	if a, rest, err := AgentArg("install", []string{"--help"}); err != nil || a != "" || len(rest) != 1 {
		t.Errorf("--help: %q %v %v", a, rest, err)
	}
	for _, args := range [][]string{nil, {"--home", "h"}, {"vscode"}} {
		var ue UsageError
		if _, _, err := AgentArg("install", args); !errors.As(err, &ue) || !strings.Contains(err.Error(), "claude-code or codex or cursor or copilot or pi or opencode") {
			t.Errorf("%v: %v, want a usage error naming the agents", args, err)
		}
	}
}

// TestRecordKeepsIDsNotText: the session-end hook's record keeps the
// session's id, transcript path and project, redacted, one line each.
func TestRecordKeepsIDsNotText(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	in := `{"session_id":"s-1","transcript_path":"/h/.claude/projects/p/s-1.jsonl","cwd":"/w/p?token=sk-ant-api03-abcdefghijklmnopqrstuv","reason":"exit","prompt":"secret text"}`
	for range 2 {
		if err := Record(ClaudeCode, state, strings.NewReader(in)); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(state, RecordFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var r RecordedSession
	if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &r) != nil || r.SessionID != "s-1" || r.Agent != ClaudeCode || r.Reason != "exit" {
		t.Fatalf("record %q", b)
	}
	if strings.Contains(string(b), "sk-ant-api03") || strings.Contains(string(b), "secret text") {
		t.Fatalf("record keeps a secret or the session's text: %q", b)
	}
	var ue UsageError
	if err := Record(ClaudeCode, state, strings.NewReader("{}")); !errors.As(err, &ue) {
		t.Errorf("no session_id: %v, want a usage error", err)
	}
}
