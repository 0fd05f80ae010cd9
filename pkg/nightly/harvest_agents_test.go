package nightly

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// agentsOptions harvests testdata/agents, a home holding one session file
// per further source, as of noon on 2026-11-24 with a 72-hour lookback.
func agentsOptions(t *testing.T, source string) HarvestOptions {
	t.Helper()
	home, err := filepath.Abs(filepath.Join("testdata", "agents"))
	if err != nil {
		t.Fatal(err)
	}
	o := HarvestOptions{Source: source, Now: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC), Lookback: 72 * time.Hour,
		Projects: []string{"/home/dev/webapp"}}
	homesUnder(&o, home)
	return o
}

func ts(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// assertNoLeak fails when a digest holds a planted secret or text the
// harvest must never read (reasoning, tool arguments and output, turns of
// an abandoned branch, other participants').
func assertNoLeak(t *testing.T, ds []Digest, planted ...string) {
	t.Helper()
	b, _ := json.Marshal(ds)
	for _, p := range planted {
		if strings.Contains(string(b), p) {
			t.Errorf("digests hold %q", p)
		}
	}
}

// TestHarvestPi: a tree session (version 3) gives its active branch only;
// it began before the lookback and was resumed inside it, so it is kept;
// another project's linear session is counted, and a tree whose parent
// link points forward is refused whole.
func TestHarvestPi(t *testing.T) {
	ds, sk, err := Harvest(agentsOptions(t, SourcePi))
	if err != nil {
		t.Fatal(err)
	}
	want := []Digest{{
		SessionID: "p1", Source: SourcePi, Project: "/home/dev/webapp",
		StartedAt: ts(t, "2026-11-20T09:00:00Z"), EndedAt: ts(t, "2026-11-24T10:01:30Z"),
		UserPrompts: []string{
			"Make the CSV export stream rows instead of buffering; my token is [REDACTED:github_token]",
			"no, that's wrong: keep the header row",
		},
		AssistantFinals: []string{"I'll change export.go.", "Kept the header row; export streams now."},
		ToolsUsed:       []string{"edit"},
		FeedbackSignals: []string{"neg:that's wrong", "neg:no"},
		NUserTurns:      2, NAssistantTurns: 2,
	}}
	if diff := cmp.Diff(want, ds, cmpopts.IgnoreFields(Digest{}, "RawPath"), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("pi digests (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Skipped{OtherProject: 1, Unreadable: 1}, sk); diff != "" {
		t.Errorf("pi skipped (-want +got):\n%s", diff)
	}
	assertNoLeak(t, ds, "ghp_abcdef", "PRIVATE-THOUGHT", "TOOL-ARGUMENT", "TOOL-OUTPUT", "ABANDONED", "BROKEN-TREE")

	// The other project's session is a version 1 (linear) one.
	o := agentsOptions(t, SourcePi)
	o.Projects = []string{"/home/dev/other"}
	ds, _, err = Harvest(o)
	if err != nil || len(ds) != 1 || ds[0].SessionID != "p2" || ds[0].NUserTurns != 1 {
		t.Fatalf("pi linear session = %+v, %v; want p2 with its one prompt", ds, err)
	}
}

func TestPiActiveBranchErrors(t *testing.T) {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	cases := map[string][]piEntry{
		"appears twice":        {{ID: "a", ParentID: raw("null")}, {ID: "a", ParentID: raw(`"a"`)}},
		"no parentId":          {{ID: "a"}},
		"not an earlier entry": {{ID: "a", ParentID: raw(`"b"`)}, {ID: "b", ParentID: raw("null")}},
		"has no id":            {{ParentID: raw("null")}},
	}
	for want, entries := range cases {
		if _, err := piActiveBranch(entries); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("piActiveBranch(%s) error = %v", want, err)
		}
	}
	// Two roots: the branch of the last entry starts at its own root.
	got, err := piActiveBranch([]piEntry{{ID: "a", ParentID: raw("null")}, {ID: "b", ParentID: raw(`"a"`)}, {ID: "c", ParentID: raw("null")}, {ID: "d", ParentID: raw(`"c"`)}})
	if err != nil || len(got) != 2 || got[0].ID != "c" || got[1].ID != "d" {
		t.Fatalf("piActiveBranch(two roots) = %+v, %v; want c, d", got, err)
	}
}

// TestHarvestCopilotVSCode replays a chat operation log: requests pushed,
// a response appended to and then cut and rewritten, a key set; requests
// to another extension's participant and those VS Code started itself are
// left out, and so are thinking parts and tool inputs.
func TestHarvestCopilotVSCode(t *testing.T) {
	ds, sk, err := Harvest(agentsOptions(t, SourceCopilot))
	if err != nil {
		t.Fatal(err)
	}
	want := []Digest{{
		SessionID: "v1", Source: SourceCopilot, Project: "/home/dev/webapp",
		StartedAt: ts(t, "2026-11-20T10:00:00Z"), EndedAt: ts(t, "2026-11-24T09:30:00Z"),
		UserPrompts:     []string{"Add retries to the upload client; AWS key [REDACTED:aws_key]", "thanks, that works now"},
		AssistantFinals: []string{"Added a retry loop with backoff.", "Glad it works!"},
		ToolsUsed:       []string{"copilot_editFile"},
		FeedbackSignals: []string{"pos:thanks", "pos:works now"},
		NUserTurns:      2, NAssistantTurns: 2,
	}}
	if diff := cmp.Diff(want, ds, cmpopts.IgnoreFields(Digest{}, "RawPath"), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("copilot digests (-want +got):\n%s", diff)
	}
	// The line that is not JSON and the set at a request that does not exist.
	if diff := cmp.Diff(Skipped{MalformedLines: 2}, sk); diff != "" {
		t.Errorf("copilot skipped (-want +got):\n%s", diff)
	}
	assertNoLeak(t, ds, "AKIAIOSFODNN7EXAMPLE", "HIDDEN-REASONING", "TOOL-INPUT", "OTHER-PARTICIPANT", "SYSTEM-INITIATED")

	// A cursor after the last request leaves nothing new.
	o := agentsOptions(t, SourceCopilot)
	o.Cursors = map[string]time.Time{"/home/dev/webapp": ts(t, "2026-11-24T09:30:00Z")}
	if ds, sk, _ := Harvest(o); len(ds) != 0 || sk.Old != 1 {
		t.Fatalf("after the cursor: %d digests, %d old; want none and one", len(ds), sk.Old)
	}
}

// An older VS Code wrote a session as one JSON object (.json), and a
// workspace opened from a .code-workspace file names that file.
func TestHarvestCopilotVSCodeWholeFile(t *testing.T) {
	root := t.TempDir()
	ws := filepath.Join(root, "w1")
	if err := os.MkdirAll(filepath.Join(ws, "chatSessions"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(ws, "workspace.json"), `{"workspace":"file:///home/dev/mono/mono.code-workspace"}`)
	write(filepath.Join(ws, "chatSessions", "old.json"), `{"sessionId":"old","creationDate":1795600000000,"requests":[
		{"message":{"text":"Explain the build graph"},"timestamp":1795600000000,"response":[{"value":"It has three stages."}]},
		{"message":{"text":"and the cache?"},"timestamp":1795600100000,"response":[{"value":"Keyed by inputs."}]}]}`)
	o := HarvestOptions{Source: SourceCopilot, VSCodeStorage: []string{root}, Now: time.UnixMilli(1795600200000)}
	ds, _, err := Harvest(o)
	if err != nil || len(ds) != 1 {
		t.Fatalf("Harvest = %+v, %v; want one session", ds, err)
	}
	if d := ds[0]; d.Project != "/home/dev/mono" || d.NUserTurns != 2 || d.AssistantFinals[1] != "Keyed by inputs." || !d.EndedAt.Equal(time.UnixMilli(1795600100000)) {
		t.Fatalf("digest = %+v", d)
	}
}
