package officeqa_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/benchtest"
	"github.com/skillfleet/skillfleet/pkg/bench/officeqa"
	"github.com/skillfleet/skillfleet/pkg/bench/registry"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

func TestNormaliseAndScore(t *testing.T) {
	for _, tc := range []struct {
		pred, gold string
		hard, soft float64
	}{
		{"3,328,741", "3328741", 1, 1},
		// "$" goes, "million" and "dollars" are dropped words.
		{"$21,516,058 million dollars", "21516058", 1, 1},
		{"12.5%", "12.5 %", 0, 0},
		// No numeric tolerance: 3328741.0 is not 3328741.
		{"3328741.0", "3328741", 0, 0},
		// Token F1: "receipts 3462196" vs "3462196": P 1/2, R 1 → 2/3.
		{"receipts 3,462,196", "3,462,196", 0, 2.0 / 3},
		{"Nominal -4.2", "-4.2", 1, 1},
		{"", "", 1, 1},
	} {
		h, s := officeqa.Score(tc.pred, tc.gold)
		if h != tc.hard || s-tc.soft > 1e-9 || tc.soft-s > 1e-9 {
			t.Errorf("Score(%q, %q) = %v %v, want %v %v (normalised %q / %q)", tc.pred, tc.gold, h, s, tc.hard, tc.soft,
				officeqa.Normalise(tc.pred), officeqa.Normalise(tc.gold))
		}
	}
}

func newEnv(t *testing.T, docs string) bench.Env {
	t.Helper()
	cfg, _ := json.Marshal(map[string]any{"docs_dir": docs, "max_tool_turns": 5})
	e, err := registry.New(officeqa.Name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func call(id, name, args string) llm.ToolCall {
	return llm.ToolCall{ID: id, Name: name, Arguments: args}
}

// TestEpisodeWithThreeToolCalls: the agent globs, greps and reads, then
// answers; each tool result fed back is what the tools return, and a
// path outside the item's documents is refused.
func TestEpisodeWithThreeToolCalls(t *testing.T) {
	docs, _ := filepath.Abs("testdata/docs")
	s, err := registry.LoadSplits(officeqa.Name, "testdata/split", 0)
	if err != nil {
		t.Fatal(err)
	}
	m := &benchtest.Scripted{Replies: []*llm.Response{
		{ToolCalls: []llm.ToolCall{call("c1", "glob", `{"pattern":"*.txt"}`)}},
		{ToolCalls: []llm.ToolCall{call("c2", "grep", `{"pattern":"TOTAL RECEIPTS","path":"bulletin_2019_03.txt"}`), call("c3", "read", `{"path":"../../../etc/passwd"}`)}},
		{ToolCalls: []llm.ToolCall{call("c4", "read", `{"path":"bulletin_2019_03.txt","start":4,"limit":1}`)}},
		{Content: "The FY2018 receipts were 3,328,741 million.\n<answer>3,328,741</answer>"},
	}}
	ep, err := newEnv(t, docs).Episode(context.Background(), m, bench.EpisodeRequest{Item: s.Train[0], Skill: "ALWAYS check the fiscal year."})
	if err != nil {
		t.Fatal(err)
	}
	if ep.Hard != 1 || ep.Soft != 1 || ep.NTurns != 4 || ep.Calls != 4 || ep.TaskType != "easy" {
		t.Errorf("episode: hard %v soft %v turns %d calls %d type %q reason %q", ep.Hard, ep.Soft, ep.NTurns, ep.Calls, ep.TaskType, ep.FailReason)
	}
	first := m.Requests[0]
	if len(first.Tools) != 3 || !strings.Contains(first.Messages[0].Content, "ALWAYS check the fiscal year.") {
		t.Errorf("first request: %d tools, system %q", len(first.Tools), first.Messages[0].Content)
	}
	// The oracle page (page 4 of bulletin_2019_03) is in the prompt.
	if !strings.Contains(first.Messages[1].Content, "FY2018 total receipts 3,328,741 million dollars") {
		t.Errorf("oracle page missing from the prompt:\n%s", first.Messages[1].Content)
	}
	toolOut := map[string]string{}
	for _, msg := range m.Requests[3].Messages {
		if msg.Role == llm.RoleTool {
			toolOut[msg.ToolCallID] = msg.Content
		}
	}
	want := map[string]string{
		"c1": "bulletin_2019_03.txt",
		"c2": "bulletin_2019_03.txt:3: Fiscal year 2017: total receipts 3,316,184; total outlays 3,981,554\nbulletin_2019_03.txt:4: Fiscal year 2018: total receipts 3,328,741; total outlays 4,107,740",
		"c4": "4: Fiscal year 2018: total receipts 3,328,741; total outlays 4,107,740\n",
	}
	for id, w := range want {
		if toolOut[id] != w {
			t.Errorf("tool %s returned %q, want %q", id, toolOut[id], w)
		}
	}
	if !strings.HasPrefix(toolOut["c3"], "error:") || !strings.Contains(toolOut["c3"], "leaves the document folder") {
		t.Errorf("traversal not refused: %q", toolOut["c3"])
	}
}

func TestToolsConfinement(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("alpha\nbeta\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "secret.txt")
	_ = os.WriteFile(secret, []byte("password"), 0o644)
	// A symlink named like an item file but pointing out of the corpus.
	if err := os.Symlink(secret, filepath.Join(root, "b.txt")); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(root, "other.txt"), []byte("not this item's"), 0o644)
	tools := officeqa.NewTools(root, []string{"a.txt", "b.txt"})
	for _, tc := range []struct{ path, want string }{
		{"a.txt", "1: alpha"},
		{"b.txt", "leaves the document folder"},
		{"other.txt", "not one of this question's documents"},
		{root + "/a.txt", "absolute paths are not allowed"},
		{"../a.txt", "leaves the document folder"},
		{"", "path is empty"},
	} {
		if got := tools.Read(tc.path, 1, 10); !strings.Contains(got, tc.want) {
			t.Errorf("Read(%q) = %q, want it to contain %q", tc.path, got, tc.want)
		}
	}
	if got := tools.Grep("PASSWORD", ""); got != "no matches" {
		t.Errorf("grep across the item's files reached outside: %q", got)
	}
	// Malformed arguments are answered, not fatal.
	if out, ok := tools.Call(llm.ToolCall{Name: "read", Arguments: "{not json"}); ok || !strings.HasPrefix(out, "error:") {
		t.Errorf("bad arguments: %q %v", out, ok)
	}
	if out, ok := tools.Call(llm.ToolCall{Name: "delete", Arguments: "{}"}); ok || !strings.Contains(out, "unknown tool") {
		t.Errorf("unknown tool: %q", out)
	}
	// Read caps its output.
	long := strings.Repeat(strings.Repeat("x", 100)+"\n", 100)
	_ = os.WriteFile(filepath.Join(root, "a.txt"), []byte(long), 0o644)
	if got := tools.Read("a.txt", 1, 100); len(got) > officeqa.ReadMaxChars+40 || !strings.Contains(got, "truncated") {
		t.Errorf("read of %d chars not capped", len(got))
	}
}

func TestAgentLimitsAndStops(t *testing.T) {
	docs, _ := filepath.Abs("testdata/docs")
	s, _ := registry.LoadSplits(officeqa.Name, "testdata/split", 0)
	env := newEnv(t, docs)
	// A model that only ever calls tools hits the turn limit.
	loop := &benchtest.Scripted{Replies: []*llm.Response{{ToolCalls: []llm.ToolCall{call("x", "glob", `{"pattern":"*"}`)}}}}
	ep, err := env.Episode(context.Background(), loop, bench.EpisodeRequest{Item: s.Val[0]})
	if err != nil {
		t.Fatal(err)
	}
	if loop.Calls() != 5 || ep.Hard != 0 || !strings.Contains(ep.FailReason, "turn limit") {
		t.Errorf("turn limit: calls %d, reason %q", loop.Calls(), ep.FailReason)
	}
	// A turn with neither a tool call nor an answer ends the episode; the
	// last line is still scored.
	ep, _ = env.Episode(context.Background(), benchtest.Text("I believe it is\n21,516,058"), bench.EpisodeRequest{Item: s.Val[0]})
	if ep.NTurns != 1 || ep.Hard != 1 || !strings.Contains(ep.FailReason, "without a tool call or an <answer>") {
		t.Errorf("stop without answer: turns %d hard %v reason %q", ep.NTurns, ep.Hard, ep.FailReason)
	}
}

func TestLoadAndNormalize(t *testing.T) {
	s, err := registry.LoadSplits(officeqa.Name, "testdata/split", 0)
	if err != nil {
		t.Fatal(err)
	}
	var it officeqa.Item
	_ = json.Unmarshal(s.Train[1].Raw, &it)
	if it.ID != "oq-2" || strings.Join(it.SourceFiles, "|") != "bulletin_2019_03.txt|bulletin_2020_06.txt" || it.GroundTruth != "338844" || it.TaskType != "hard" {
		t.Errorf("item = %+v", it)
	}
	for in, want := range map[string]string{"a.txt\nb.txt": "a.txt|b.txt", "a.json, b.json": "a.json|b.json"} {
		out, err := officeqa.Normalize(map[string]any{"uid": "x", "question": "q", "answer": "1", "source_files": in})
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(out["source_files"].([]string), "|")
		if got != want {
			t.Errorf("source_files %q → %q, want %q", in, got, want)
		}
	}
	// A single name ending in .txt is not split at commas.
	out, _ := officeqa.Normalize(map[string]any{"uid": "x", "question": "q", "answer": "1", "source_files": "report, final.txt"})
	if got := out["source_files"].([]string); len(got) != 1 {
		t.Errorf("comma name split: %q", got)
	}
	if _, err := officeqa.Normalize(map[string]any{"uid": "x", "question": "q", "answer": "1"}); err == nil || !strings.Contains(err.Error(), "item x: source_files") {
		t.Errorf("missing source_files: %v", err)
	}
}

// TestMalformedToolCallAndModelError: bad JSON arguments are answered with
// an error tool result and the episode goes on (counted in the trajectory,
// not a failure reason when the answer is right); a model error mid-loop is
// returned with the usage of the calls made so far.
func TestMalformedToolCallAndModelError(t *testing.T) {
	docs, _ := filepath.Abs("testdata/docs")
	s, _ := registry.LoadSplits(officeqa.Name, "testdata/split", 0)
	env := newEnv(t, docs)
	m := &benchtest.Scripted{Replies: []*llm.Response{
		{ToolCalls: []llm.ToolCall{call("b1", "read", `{"path": bulletin}`)}},
		{Content: "<answer>$21,516,058 million</answer>"},
	}}
	ep, err := env.Episode(context.Background(), m, bench.EpisodeRequest{Item: s.Val[0]})
	if err != nil {
		t.Fatal(err)
	}
	var fed string
	for _, msg := range m.Requests[1].Messages {
		if msg.Role == llm.RoleTool && msg.ToolCallID == "b1" {
			fed = msg.Content
		}
	}
	if !strings.HasPrefix(fed, "error: arguments are not a JSON object") {
		t.Errorf("bad-arguments result fed back: %q", fed)
	}
	last := ep.Messages[len(ep.Messages)-1]
	// Gold "$21,516,058 million" normalises to "21516058", as does the answer.
	if ep.Hard != 1 || ep.NTurns != 2 || ep.FailReason != "" || !strings.Contains(last.Content, "1 malformed tool call(s)") {
		t.Errorf("hard %v turns %d reason %q eval %q", ep.Hard, ep.NTurns, ep.FailReason, last.Content)
	}

	// The second call fails: the error names the item, the first call's
	// usage (10 in, 5 out per scripted reply) is kept.
	failing := &failAfter{n: 1, next: &benchtest.Scripted{Replies: []*llm.Response{{ToolCalls: []llm.ToolCall{call("g", "glob", `{"pattern":"*"}`)}}}}}
	ep, err = env.Episode(context.Background(), failing, bench.EpisodeRequest{Item: s.Val[0]})
	if err == nil || !strings.Contains(err.Error(), "oq-3") {
		t.Fatalf("model error: %v", err)
	}
	if ep == nil || ep.Usage.InputTokens != 10 || ep.Calls != 2 || ep.FailedCalls != 1 {
		t.Errorf("partial episode: %+v", ep)
	}
}

// failAfter answers n calls from next, then fails.
type failAfter struct {
	n    int
	next llm.Model
	seen int
}

func (f *failAfter) Chat(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	f.seen++
	if f.seen > f.n {
		return nil, errors.New("provider down")
	}
	return f.next.Chat(ctx, req)
}

func TestOraclePages(t *testing.T) {
	root := t.TempDir()
	_ = os.MkdirAll(filepath.Join(root, "jsons"), 0o755)
	// Page 2 is "a" then 30,000 "é" (2 bytes each): byte 24,000 falls
	// inside an "é", so the cut backs off to 23,999 bytes = "a" + 11,999 "é".
	big := "a" + strings.Repeat("é", 30000)
	doc, _ := json.Marshal(map[string]any{"pages": []map[string]any{{"page": 1, "text": "cover"}, {"page": 2, "text": big}}})
	_ = os.WriteFile(filepath.Join(root, "jsons", "b1.json"), doc, 0o644)
	_ = os.WriteFile(filepath.Join(root, "jsons", "broken.json"), []byte("{pages"), 0o644)
	cfg := func(extra map[string]any) *officeqa.Env {
		c := officeqa.Config{DocsDir: root}
		if v, ok := extra["oracle_pages"].(bool); ok {
			c.OraclePages = &v
		}
		e, err := officeqa.New(c)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	it := officeqa.Item{ID: "x", SourceDocs: []string{"https://h/b1.pdf?page=2", "https://h/missing.pdf?page=1", "https://h/b1.pdf"}}
	got, err := cfg(nil).OraclePages(it)
	if err != nil {
		t.Fatal(err)
	}
	body := strings.TrimPrefix(got, "--- b1, page 2 ---\n")
	body = strings.TrimSuffix(body, "\n[... page truncated ...]\n")
	if !utf8.ValidString(got) || body != "a"+strings.Repeat("é", 11999) {
		t.Errorf("page 2 rendered as %d bytes (valid %v): %.60q", len(got), utf8.ValidString(got), got)
	}
	if got, _ := cfg(map[string]any{"oracle_pages": false}).OraclePages(it); got != "" {
		t.Errorf("oracle_pages false still rendered %d bytes", len(got))
	}
	it.SourceDocs = []string{"https://h/broken.pdf?page=1"}
	if _, err := cfg(nil).OraclePages(it); err == nil || !strings.Contains(err.Error(), "broken.json") {
		t.Errorf("malformed parsed file: %v", err)
	}
	// Four pages of 24,000 bytes exceed the 80,000 total: three are kept.
	var pages []map[string]any
	for i := 1; i <= 4; i++ {
		pages = append(pages, map[string]any{"page": i, "text": strings.Repeat("x", 24000)})
	}
	doc, _ = json.Marshal(map[string]any{"pages": pages})
	_ = os.WriteFile(filepath.Join(root, "jsons", "b2.json"), doc, 0o644)
	it.SourceDocs = []string{"b2.pdf?page=1", "b2.pdf?page=2", "b2.pdf?page=3", "b2.pdf?page=4"}
	got, _ = cfg(nil).OraclePages(it)
	if n := strings.Count(got, "--- b2, page"); n != 3 || len(got) > officeqa.OracleMaxChars {
		t.Errorf("total cap: %d pages, %d bytes", n, len(got))
	}
}
