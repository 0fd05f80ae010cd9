package nightly

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// copyTree copies testdata/home into a temp dir (so a huge line can be
// appended and mtimes set) and returns the copy.
func copyTree(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	src := filepath.Join("testdata", "home")
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	// A 2 MiB line in the middle of the Claude session.
	s1 := filepath.Join(dst, ".claude/projects/-home-dev-webapp/s1.jsonl")
	b, _ := os.ReadFile(s1)
	lines := strings.SplitAfter(string(b), "\n")
	huge := `{"type":"user","message":{"role":"user","content":"` + strings.Repeat("x", 2<<20) + `"}}` + "\n"
	out := strings.Join(lines[:3], "") + huge + strings.Join(lines[3:], "")
	if err := os.WriteFile(s1, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	cur := filepath.Join(dst, ".cursor/projects/home-dev-webapp/agent-transcripts/c1/c1.jsonl")
	ts := time.Date(2026, 11, 24, 11, 0, 0, 0, time.UTC)
	if err := os.Chtimes(cur, ts, ts); err != nil {
		t.Fatal(err)
	}
	return dst
}

func fixtureOptions(home string) HarvestOptions {
	o := HarvestOptions{
		Now: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC), Lookback: 72 * time.Hour, MaxLineBytes: 1 << 20,
		Projects: []string{"/home/dev/webapp"},
	}
	homesUnder(&o, home)
	return o
}

// homesUnder points every source at its default place below home, so a
// test never reads the real user's sessions.
func homesUnder(o *HarvestOptions, home string) {
	o.ClaudeHome, o.CodexHome, o.CursorHome = filepath.Join(home, ".claude"), filepath.Join(home, ".codex"), filepath.Join(home, ".cursor")
	o.CopilotHome, o.PiHome = filepath.Join(home, ".copilot"), filepath.Join(home, ".pi", "agent")
	o.VSCodeStorage = []string{filepath.Join(home, ".config", "Code", "User", "workspaceStorage")}
	o.OpencodeDB = filepath.Join(home, ".local", "share", "opencode", "opencode.db")
}

func TestHarvestFixtures(t *testing.T) {
	home := copyTree(t)
	ds, sk, err := Harvest(fixtureOptions(home))
	if err != nil {
		t.Fatal(err)
	}
	ts := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	cursorTime := time.Date(2026, 11, 24, 11, 0, 0, 0, time.UTC)
	want := []Digest{
		{
			SessionID: "c1", Source: SourceCursor, Project: "/home/dev/webapp", StartedAt: cursorTime, EndedAt: cursorTime,
			UserPrompts:     []string{"Add a dark mode toggle to the settings page", "looks good"},
			AssistantFinals: []string{"Added a toggle in settings.tsx."},
			FeedbackSignals: []string{"pos:looks good"}, NUserTurns: 2, NAssistantTurns: 1,
		},
		{
			SessionID: "s1", Source: SourceClaude, Project: "/home/dev/webapp", GitBranch: "main",
			StartedAt: ts("2026-11-24T09:00:00Z"), EndedAt: ts("2026-11-24T09:05:00Z"),
			UserPrompts: []string{
				"Fix the login test; the API key is [REDACTED:api_key] and the db password=[REDACTED:secret]",
				"no, that's wrong: run go test ./... before you say it passes",
				"thanks, perfect",
			},
			AssistantFinals: []string{"I'll look at the test.", "Ran go test ./...: all tests pass now."},
			ToolsUsed:       []string{"Edit", "Skill"}, SkillsUsed: []string{"webapp-testing"},
			FilesTouched:    []string{"/home/dev/webapp/auth.go", "/home/dev/webapp/login_test.go"},
			FeedbackSignals: []string{"neg:that's wrong", "neg:no", "pos:thanks", "pos:perfect"},
			NUserTurns:      3, NAssistantTurns: 2,
		},
		{
			SessionID: "x1", Source: SourceCodex, Project: "/home/dev/webapp", GitBranch: "feat",
			StartedAt: ts("2026-11-24T08:00:00Z"), EndedAt: ts("2026-11-24T08:03:04Z"),
			UserPrompts: []string{
				"Write a changelog entry for the login fix; export GITHUB_TOKEN=[REDACTED:github_token] first",
				"you forgot the issue number, try again",
			},
			AssistantFinals: []string{"Added CHANGELOG entry under Unreleased.", "Added (#123) to the entry."},
			ToolsUsed:       []string{"shell"},
			FeedbackSignals: []string{"neg:you forgot", "neg:try again"},
			NUserTurns:      2, NAssistantTurns: 2,
		},
	}
	if diff := cmp.Diff(want, ds, cmpopts.IgnoreFields(Digest{}, "RawPath"), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Harvest digests (-want +got):\n%s", diff)
	}
	wantSk := Skipped{MalformedLines: 3, HugeLines: 1, SubAgent: 1, Headless: 2, Old: 1}
	if diff := cmp.Diff(wantSk, sk); diff != "" {
		t.Errorf("Harvest skipped (-want +got):\n%s", diff)
	}
	b, _ := json.Marshal(ds)
	for _, secret := range []string{"sk-proj-AbCdEfGhIjKlMnOpQrStUvWx123456", "hunter2secret", "ghp_abcdefghijklmnopqrstuvwxyz0123456789AB", "SIDECHAIN"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("digests hold %q", secret)
		}
	}
}

func TestHarvestCursorsAndSources(t *testing.T) {
	home := copyTree(t)
	o := fixtureOptions(home)
	o.Source = SourceCodex
	ds, _, err := Harvest(o)
	if err != nil || len(ds) != 1 || ds[0].SessionID != "x1" {
		t.Fatalf("Harvest(codex) = %d digests, %v; want x1", len(ds), err)
	}
	// A project cursor after the sessions leaves nothing new.
	o.Source = "all"
	o.Cursors = map[string]time.Time{"/home/dev/webapp": time.Date(2026, 11, 24, 11, 30, 0, 0, time.UTC)}
	ds, sk, err := Harvest(o)
	if err != nil || len(ds) != 0 || sk.Old != 4 {
		t.Fatalf("Harvest(after cursor) = %d digests, old %d, %v; want 0 and 4 old", len(ds), sk.Old, err)
	}
	// Another project's filter keeps nothing.
	o.Cursors, o.Projects = nil, []string{"/elsewhere"}
	if ds, _, _ := Harvest(o); len(ds) != 0 {
		t.Fatalf("Harvest(other project) = %d digests, want 0", len(ds))
	}
	o.Source = "vscode"
	if _, _, err := Harvest(o); err == nil || !strings.Contains(err.Error(), `"vscode"`) || !strings.Contains(err.Error(), "copilot") {
		t.Fatalf("Harvest(source vscode) error = %v, want one naming it and the sources there are", err)
	}
	// Harvest never writes: the fixture files are unchanged.
	before, _ := os.ReadFile(filepath.Join(home, ".codex/archived_sessions/rollout-2026-11-24-x1.jsonl"))
	orig, _ := os.ReadFile("testdata/home/.codex/archived_sessions/rollout-2026-11-24-x1.jsonl")
	if string(before) != string(orig) {
		t.Fatal("a transcript changed")
	}
}

func TestRedact(t *testing.T) {
	cases := []struct{ in, want string }{
		{"key sk-ant-api03-abcdefghijklmnopqrstuv", "key [REDACTED:api_key]"},
		{"AWS AKIAIOSFODNN7EXAMPLE here", "AWS [REDACTED:aws_key] here"},
		{"Authorization: Bearer abcdefghijklmnop.qrs", "Authorization: Bearer [REDACTED:bearer]"},
		{"postgres://admin:s3cr3tpw@db:5432/x", "postgres://admin:[REDACTED:url_credentials]@db:5432/x"},
		{"my password is CorrectHorse9", "my password is [REDACTED:secret]"},
		{`"api_key": "abcd1234efgh"`, `"api_key": "[REDACTED:secret]"`},
		{"the token budget is 40k", "the token budget is 40k"},
		{"reset the password for bob", "reset the password for bob"},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----", "[REDACTED:private_key]"},
		{"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4+/Q==;EndpointSuffix=core.windows.net",
			"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=[REDACTED:azure_key];EndpointSuffix=core.windows.net"},
		{"Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG=",
			"Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=[REDACTED:azure_key]"},
		{"curl 'https://acct.blob.core.windows.net/c/b.txt?sv=2022-11-02&se=2026-12-01&sp=r&sig=AbCdEf0123456789%2BxyZ%3D'",
			"curl 'https://acct.blob.core.windows.net/c/b.txt?sv=2022-11-02&se=2026-12-01&sp=r&sig=[REDACTED:azure_sas]'"},
		{"the sig= field is empty", "the sig= field is empty"},
	}
	for _, c := range cases {
		if got := Redact(c.in); got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestMineHeuristicFixtures(t *testing.T) {
	home := copyTree(t)
	ds, _, err := Harvest(fixtureOptions(home))
	if err != nil {
		t.Fatal(err)
	}
	tasks := MineHeuristic(ds)
	type row struct{ ID, Intent, Outcome, Kind, Hint string }
	var got []row
	for _, tk := range tasks {
		if err := tk.Validate(); err != nil {
			t.Errorf("task %s: %v", tk.ID, err)
		}
		got = append(got, row{tk.ID, tk.Intent, tk.Outcome, tk.Judge.Kind, tk.SkillHint})
	}
	p := "/home/dev/webapp"
	want := []row{
		{TaskID("task_", p, "Add a dark mode toggle to the settings page"), "Add a dark mode toggle to the settings page", "success", JudgeRubric, ""},
		{TaskID("task_", p, "Fix the login test; the API key is [REDACTED:api_key] and the db password=[REDACTED:secret]"),
			"Fix the login test; the API key is [REDACTED:api_key] and the db password=[REDACTED:secret]", "mixed", JudgeRubric, "webapp-testing"},
		{TaskID("task_", p, "Write a changelog entry for the login fix; export GITHUB_TOKEN=[REDACTED:github_token] first"),
			"Write a changelog entry for the login fix; export GITHUB_TOKEN=[REDACTED:github_token] first", "fail", JudgeRubric, ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MineHeuristic (-want +got):\n%s", diff)
	}
}

// A session that a night's own calls created (a CLI agent as the backend)
// is headless: its one user turn carries the marker.
func TestOwnPromptsAreHeadless(t *testing.T) {
	task := Task{ID: "t", Intent: "What is the arXiv id of X?", Judge: Judge{Kind: JudgeRubric, Rubric: "r"}}
	msgs := AttemptMessages(task, ScaffoldSkill(), "")
	jm, err := payloadMessages("role", "instructions", map[string]string{"kind": KindJudge})
	if err != nil {
		t.Fatal(err)
	}
	for _, user := range []string{msgs[1].Content, jm[1].Content} {
		s := &session{}
		s.user(user)
		s.assistant("ok")
		if !isHeadless(s) {
			t.Errorf("a session whose one prompt is %q is not headless", user[:40])
		}
	}
}

func TestAttemptPromptRedactsLiveFiles(t *testing.T) {
	task := Task{ID: "t", Intent: "Deploy the staging app", Judge: Judge{Kind: JudgeRubric, Rubric: "r"}}
	msgs := AttemptMessages(task, "# skill\nuse token: ghp_abcdefghijklmnopqrstuvwxyz0123456789AB\n", "db password = hunter2hunter2\n")
	for _, m := range msgs {
		if strings.Contains(m.Content, "ghp_abcdef") || strings.Contains(m.Content, "hunter2hunter2") {
			t.Fatalf("attempt prompt holds a secret:\n%s", m.Content)
		}
	}
}

// TestHarvestInteractiveQuickSession: a one-prompt session that took under
// three seconds is headless unless the CLI marks it as typed in its
// terminal UI (Claude Code's entrypoint "cli", Codex's originator
// "codex-tui"), and Codex's live sessions (sessions/YYYY/MM/DD) are read
// as well as its archived ones.
func TestHarvestInteractiveQuickSession(t *testing.T) {
	home := t.TempDir()
	write := func(rel, text string) {
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	claude := func(id, entry string) string {
		return `{"type":"user","sessionId":"` + id + `","entrypoint":"` + entry + `","cwd":"/w","timestamp":"2026-11-24T10:00:00Z","message":{"role":"user","content":"Add a test for the parser"}}` + "\n" +
			`{"type":"api-request-blob","message":{"role":"user","content":"Add a test for the parser"}}` + "\n" +
			`{"type":"assistant","sessionId":"` + id + `","entrypoint":"` + entry + `","cwd":"/w","timestamp":"2026-11-24T10:00:01Z","message":{"role":"assistant","content":[{"type":"text","text":"Added."}]}}` + "\n"
	}
	write(".claude/projects/-w/tui.jsonl", claude("tui", "cli"))
	write(".claude/projects/-w/other.jsonl", claude("other", ""))
	codex := func(id, originator string) string {
		return `{"timestamp":"2026-11-24T10:00:00Z","type":"session_meta","payload":{"id":"` + id + `","cwd":"/w","originator":"` + originator + `"}}` + "\n" +
			`{"timestamp":"2026-11-24T10:00:00Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"Add a test for the parser"}]}}` + "\n" +
			`{"timestamp":"2026-11-24T10:00:01Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Added."}]}}` + "\n"
	}
	write(".codex/sessions/2026/11/24/rollout-a.jsonl", codex("codex-tui-1", "codex-tui"))
	write(".codex/sessions/2026/11/24/rollout-b.jsonl", codex("codex-other", "somewhere"))
	write(".codex/archived_sessions/rollout-c.jsonl", codex("codex-archived", "codex-tui"))
	o := HarvestOptions{Now: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)}
	homesUnder(&o, home)
	ds, sk, err := Harvest(o)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range ds {
		ids = append(ids, d.SessionID)
		if len(d.UserPrompts) != 1 {
			t.Errorf("%s: prompts %q, want the one typed", d.SessionID, d.UserPrompts)
		}
	}
	sort.Strings(ids)
	if want := []string{"codex-archived", "codex-tui-1", "tui"}; !slices.Equal(ids, want) || sk.Headless != 2 {
		t.Fatalf("harvested %v (skipped %+v), want %v and the two unmarked quick sessions headless", ids, sk, want)
	}
}
