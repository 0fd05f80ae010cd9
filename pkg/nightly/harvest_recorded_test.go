package nightly

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The recordings in testdata/recorded are what the pinned real CLIs wrote
// when driven non-interactively against sim-llm in a temporary home
// (Copilot CLI 1.0.102: `copilot -p`, then `copilot --resume=<id> -p`; pi
// 0.73.1: `pi -p`, then `pi -p -c`; opencode 1.18.33: `opencode run`,
// then `opencode run -c`): one session in the project /tmp/h3-*-home/proj
// whose first prompt holds a planted key and asks for task.md, which the
// agent read with its shell tool (the tool output holds a planted token),
// then resumed with a second prompt. The databases are sqlite3 .dump
// scripts of the CLIs' own stores; pi's session file and the Copilot
// CLI's event log are as written. TestHarvestRealMoreAgentSessions in
// cmd/skillfleet drives the CLIs live.
const (
	recordedKey   = "sk-proj-PlantedPromptKey0123456789abcdef"
	recordedToken = "ghp_PlantedToolOutput0123456789abcdefABCDEF"
	recordedAsk   = "Note the serial code. Record value: 77. Answer inside <answer></answer>."
)

// TestHarvestRecordedRealSessions harvests each recording: one session,
// both prompts in order (the resumed one included) with the key
// redacted, the shell tool seen, the last answer kept, and neither
// planted secret in the digest, though the recording holds both.
func TestHarvestRecordedRealSessions(t *testing.T) {
	first := "The task is in task.md; my key is [REDACTED:api_key]"
	for _, tc := range []struct {
		source, project string
		setup           func(t *testing.T, home string) HarvestOptions
		prompts         []string
		final           string
	}{
		{
			source: SourceCopilotCLI, project: "/tmp/h3-cp-home/proj",
			setup: func(t *testing.T, home string) HarvestOptions {
				dir := filepath.Join(home, ".copilot")
				loadSQL(t, filepath.Join(dir, "session-store.db"), "recorded/copilot/session-store.sql", false)
				copyFiles(t, filepath.Join("testdata", "recorded", "copilot", "session-state"), filepath.Join(dir, "session-state"))
				return HarvestOptions{CopilotHome: dir}
			},
			prompts: []string{first, recordedAsk}, final: "<answer>77</answer>",
		},
		{
			source: SourcePi, project: "/tmp/h3-pi-home/proj",
			setup: func(t *testing.T, home string) HarvestOptions {
				return HarvestOptions{PiHome: filepath.Join("testdata", "recorded", "pi")}
			},
			prompts: []string{first, recordedAsk}, final: "<answer>77</answer>",
		},
		{
			source: SourceOpencode, project: "/tmp/h3-oc-home/proj",
			setup: func(t *testing.T, home string) HarvestOptions {
				db := filepath.Join(home, "opencode.db")
				loadSQL(t, db, "recorded/opencode.sql", false)
				return HarvestOptions{OpencodeDB: db}
			},
			// `opencode run` quotes each argument that holds a space
			// when it joins them into the message it stores.
			prompts: []string{`"` + first + `"`, `"` + recordedAsk + `"`}, final: "<answer>77</answer>",
		},
	} {
		t.Run(tc.source, func(t *testing.T) {
			o := tc.setup(t, t.TempDir())
			o.Source, o.Projects = tc.source, []string{tc.project}
			o.Now, o.Lookback = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC), 24*time.Hour
			ds, sk, err := Harvest(o)
			if err != nil {
				t.Fatal(err)
			}
			if len(ds) != 1 || sk.Unreadable != 0 || sk.MalformedLines != 0 {
				t.Fatalf("%d sessions (skipped %+v), want the recorded one: %+v", len(ds), sk, ds)
			}
			d := ds[0]
			if !slices.Equal(d.UserPrompts, tc.prompts) {
				t.Errorf("prompts\n%q\nwant\n%q", d.UserPrompts, tc.prompts)
			}
			if !slices.Contains(d.ToolsUsed, "bash") {
				t.Errorf("tools used %v, want the shell tool (bash)", d.ToolsUsed)
			}
			if d.NAssistantTurns == 0 || len(d.AssistantFinals) == 0 || !strings.Contains(d.AssistantFinals[len(d.AssistantFinals)-1], tc.final) {
				t.Errorf("assistant turns %d, finals %q: want the resumed turn's answer last", d.NAssistantTurns, d.AssistantFinals)
			}
			b, _ := json.Marshal(ds)
			for _, s := range []string{recordedKey, recordedToken} {
				if strings.Contains(string(b), s) {
					t.Errorf("the digest holds the planted %q", s)
				}
			}
		})
	}
	// The recordings hold both secrets: they were planted for real.
	for _, f := range []string{"recorded/copilot/session-store.sql", "recorded/opencode.sql"} {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil || !strings.Contains(string(b), recordedKey) {
			t.Errorf("%s does not hold the planted key (%v)", f, err)
		}
	}
}

// copyFiles copies the regular files under src to dst.
func copyFiles(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
