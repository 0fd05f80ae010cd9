package nightly

import (
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"fmt"
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

// loadSQL creates the SQLite database path from a fixture script, in WAL
// mode when wal is set, and returns the open connection (closed at the end
// of the test).
func loadSQL(t *testing.T, path, script string, wal bool) *sql.DB {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("testdata", script))
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	if wal {
		// The log is never folded into the database while the test runs,
		// so what the harvest sees of it came from the -wal file.
		for _, p := range []string{"PRAGMA journal_mode=WAL", "PRAGMA wal_autocheckpoint=0"} {
			if _, err := db.Exec(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := db.Exec(string(b)); err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	return db
}

// dirState is every file of dir with its bytes and modification time.
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(p)
		out[e.Name()] = fmt.Sprint(len(b), st.ModTime().UnixNano(), sha256.Sum256(b))
	}
	return out
}

// TestHarvestCopilotCLI reads the Copilot CLI's store while the CLI holds
// it open mid-write: the harvest neither waits for nor disturbs the
// writer, sees what was committed to the write-ahead log and not what is
// uncommitted, and leaves the store's directory as it was, file for file.
func TestHarvestCopilotCLI(t *testing.T) {
	home := t.TempDir()
	o := HarvestOptions{Source: SourceCopilotCLI, Now: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC), Lookback: 72 * time.Hour,
		Projects: []string{"/home/dev/webapp"}}
	homesUnder(&o, home)
	store := filepath.Join(o.CopilotHome, "session-store.db")
	db := loadSQL(t, store, "copilot-cli.sql", true)
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`INSERT INTO sessions VALUES ('c6', '/home/dev/webapp', NULL, 'main', NULL, '2026-11-24 11:00:00', '2026-11-24 11:30:00', 'cli');
		INSERT INTO turns VALUES (9, 'c6', 0, 'UNCOMMITTED prompt of a live session', 'ok', '2026-11-24 11:00:00')`); err != nil {
		t.Fatal(err)
	}
	before := dirState(t, o.CopilotHome)
	if _, ok := before["session-store.db-wal"]; !ok {
		t.Fatalf("the fixture store has no write-ahead log: %v", before)
	}
	ds, sk, err := Harvest(o)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, dirState(t, o.CopilotHome)); diff != "" {
		t.Errorf("the store's directory changed (-before +after):\n%s", diff)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("the CLI's own write after the harvest: %v", err)
	}
	want := []Digest{{
		SessionID: "c1", Source: SourceCopilotCLI, Project: "/home/dev/webapp", GitBranch: "main",
		StartedAt: ts(t, "2026-11-20T08:00:00Z"), EndedAt: ts(t, "2026-11-24T09:00:00Z"),
		UserPrompts:     []string{"Bump the Go version in CI; the deploy key is [REDACTED:aws_key]", "still failing on arm64"},
		AssistantFinals: []string{"Updated .github/workflows/ci.yml.", "Pinned the arm64 runner image."},
		ToolsUsed:       []string{"edit", "view"},
		FilesTouched:    []string{"/home/dev/webapp/.github/workflows/ci.yml", "/home/dev/webapp/go.mod"},
		FeedbackSignals: []string{"neg:still failing"},
		NUserTurns:      2, NAssistantTurns: 2,
	}}
	if diff := cmp.Diff(want, ds, cmpopts.IgnoreFields(Digest{}, "RawPath"), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("copilot_cli digests (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Skipped{OtherProject: 1, Old: 1, Headless: 1, Unreadable: 1}, sk); diff != "" {
		t.Errorf("copilot_cli skipped (-want +got):\n%s", diff)
	}
	assertNoLeak(t, ds, "AKIAIOSFODNN7EXAMPLE", "UNCOMMITTED", "OTHER-PROJECT", "OLD-SESSION")

	// Committed now: the next harvest, after c1's cursor, has c6 only.
	o.Cursors = map[string]time.Time{"/home/dev/webapp": ts(t, "2026-11-24T09:00:00Z")}
	ds, _, err = Harvest(o)
	if err != nil || len(ds) != 1 || ds[0].SessionID != "c6" {
		t.Fatalf("after the commit = %+v, %v; want c6", ds, err)
	}
}

// A store of another schema is unreadable, with the missing column named.
func TestHarvestCopilotCLISchema(t *testing.T) {
	home := t.TempDir()
	db, err := sql.Open("sqlite", filepath.Join(home, "session-store.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE sessions (id TEXT, cwd TEXT, created_at TEXT, updated_at TEXT); CREATE TABLE turns (session_id TEXT, turn_index INT, user_message TEXT)`); err != nil {
		t.Fatal(err)
	}
	o := HarvestOptions{Source: SourceCopilotCLI, CopilotHome: home}
	if _, _, err := readCopilotCLI(&o); err == nil || !strings.Contains(err.Error(), "table turns has no column assistant_response") {
		t.Fatalf("readCopilotCLI error = %v, want the missing column named", err)
	}
	if _, sk, err := Harvest(o); err != nil || sk.Unreadable != 1 {
		t.Fatalf("Harvest = %+v, %v; want the store counted unreadable", sk, err)
	}
}

// TestHarvestOpencode: root sessions only, synthetic and ignored parts,
// reasoning and tool input and output left out; a session with a message
// that is not JSON is left out whole.
func TestHarvestOpencode(t *testing.T) {
	home := t.TempDir()
	o := HarvestOptions{Source: SourceOpencode, Now: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC), Lookback: 72 * time.Hour,
		Projects: []string{"/home/dev/webapp"}}
	homesUnder(&o, home)
	loadSQL(t, o.OpencodeDB, "opencode.sql", false)
	before := dirState(t, filepath.Dir(o.OpencodeDB))
	ds, sk, err := Harvest(o)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, dirState(t, filepath.Dir(o.OpencodeDB))); diff != "" {
		t.Errorf("the database's directory changed (-before +after):\n%s", diff)
	}
	want := []Digest{{
		SessionID: "o1", Source: SourceOpencode, Project: "/home/dev/webapp", GitBranch: "perf",
		StartedAt: ts(t, "2026-11-20T09:00:00Z"), EndedAt: ts(t, "2026-11-24T10:00:00Z"),
		UserPrompts:     []string{"Speed up the image resize; my OpenAI key is [REDACTED:api_key]", "thanks, perfect"},
		AssistantFinals: []string{"Switched to a worker pool.", "Done."},
		ToolsUsed:       []string{"bash"},
		FeedbackSignals: []string{"pos:thanks", "pos:perfect"},
		NUserTurns:      2, NAssistantTurns: 2,
	}}
	if diff := cmp.Diff(want, ds, cmpopts.IgnoreFields(Digest{}, "RawPath"), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("opencode digests (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Skipped{SubAgent: 1, OtherProject: 1, Unreadable: 1, MalformedLines: 1}, sk); diff != "" {
		t.Errorf("opencode skipped (-want +got):\n%s", diff)
	}
	assertNoLeak(t, ds, "sk-proj-AbCd", "SYNTHETIC-CONTEXT", "IGNORED-PART", "REASONING-TEXT", "TOOL-ARGUMENT", "TOOL-RESULT", "SUBAGENT-PROMPT", "DAMAGED-SESSION")
}

func TestDefaultOpencodeDB(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", "/data")
	t.Setenv("OPENCODE_DB", "")
	if got := defaultOpencodeDB("/home/u"); got != "/data/opencode/opencode.db" {
		t.Errorf("with XDG_DATA_HOME: %s", got)
	}
	t.Setenv("OPENCODE_DB", "alt.db")
	if got := defaultOpencodeDB("/home/u"); got != "/data/opencode/alt.db" {
		t.Errorf("relative OPENCODE_DB: %s", got)
	}
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("OPENCODE_DB", "/elsewhere/o.db")
	if got := defaultOpencodeDB("/home/u"); got != "/elsewhere/o.db" {
		t.Errorf("absolute OPENCODE_DB: %s", got)
	}
}
