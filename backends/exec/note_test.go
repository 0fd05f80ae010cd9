package exec_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/backends/exec"
)

// TestNoteOpenedAlwaysNotesAPlainSkill: with option note_opened=always a
// plain skill's SKILL.md, opened by the agent's shell command, leads the
// reply as a one-file package's would; package (the default) leaves a
// plain skill's reply alone; another value is refused.
func TestNoteOpenedAlwaysNotesAPlainSkill(t *testing.T) {
	t.Parallel()
	events, err := filepath.Abs(filepath.Join("testdata", "codex-package-events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ opt, want string }{
		{"always", exec.OpenedFilesNote + " SKILL.md]\n\n"},
		{"", ""},
	} {
		cfg, err := exec.ConfigFromOptions("sim-target", map[string]string{"agent": "codex", "command": `["cat","` + events + `"]`,
			"output": "codex-json", "sandbox": "none", "note_opened": tc.opt})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Sandbox.Logf = func(string, ...any) {}
		resp, err := exec.New(cfg).Chat(t.Context(), simRequest("# Plain skill\n", "q"))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.HasPrefix(resp.Content, exec.OpenedFilesNote); got != (tc.want != "") || !strings.HasPrefix(resp.Content, tc.want) {
			t.Errorf("note_opened=%q: reply %q, want it to start %q", tc.opt, resp.Content, tc.want)
		}
	}
	if _, err := exec.ConfigFromOptions("m", map[string]string{"agent": "codex", "note_opened": "sometimes"}); err == nil || !strings.Contains(err.Error(), "note_opened") {
		t.Errorf("note_opened=sometimes: %v, want it refused", err)
	}
}
