package nightly

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/llm"
)

func TestApplyEditsOnlyInsideTheBlock(t *testing.T) {
	doc, err := EnsureBlock("# My skill\n\nKeep this line.\n- a user bullet about tests\n", ScaffoldSkill)
	if err != nil {
		t.Fatal(err)
	}
	edits := []Edit{
		{Op: "ADD", Content: "Run the tests before saying they pass."},
		{Op: "add", Content: "  run the TESTS before saying   they pass. "}, // duplicate
		{Op: "add", Content: "Wrap answers in <answer> tags."},
		{Op: "replace", Anchor: "wrap answers", Content: "Wrap the final answer in <answer></answer> tags."},
		{Op: "delete", Anchor: "about tests"}, // only outside the block
		{Op: "rewrite", Content: "x"},
		{Op: "add", Content: "token=abcdef123456"},
		{Op: "add", Content: LearnedEnd},
		{Op: "replace", Anchor: "run the tests", Content: "Run the tests before saying they pass."},
	}
	got, applied, unmatched, err := ApplyEdits(doc, edits)
	if err != nil {
		t.Fatal(err)
	}
	if len(applied) != 3 || len(unmatched) != 6 {
		t.Fatalf("ApplyEdits: %d applied, %d unmatched (%+v); want 3 and 6", len(applied), len(unmatched), unmatched)
	}
	if OutsideBlock(got) != OutsideBlock(doc) {
		t.Errorf("text outside the block changed:\n%s", got)
	}
	want := []string{"Run the tests before saying they pass.", "Wrap the final answer in <answer></answer> tags."}
	if l := LearnedLines(got); strings.Join(l, "|") != strings.Join(want, "|") {
		t.Errorf("LearnedLines = %q, want %q", l, want)
	}
	// delete removes every matching line, leaving no blank line behind.
	got2, _, _, _ := ApplyEdits(got, []Edit{{Op: "delete", Anchor: "THE"}})
	if l := LearnedLines(got2); len(l) != 0 {
		t.Errorf("after delete: %q", l)
	}
	if strings.Contains(got2, "\n\n\n\n") {
		t.Errorf("delete left blank lines:\n%s", got2)
	}
	if _, err := EnsureBlock(LearnedEnd+"\n"+LearnedStart, ScaffoldSkill); err == nil {
		t.Error("EnsureBlock(markers out of order) = nil error")
	}
}

func TestScoreJudges(t *testing.T) {
	ctx := context.Background()
	rule := Task{ID: "t1", Intent: "give the arXiv id", Judge: Judge{Kind: JudgeRule, Checks: []Check{
		{Op: OpRegex, Arg: `<answer>arXiv:\d{4}\.\d{5}</answer>`}, {Op: OpMaxChars, Arg: "200"}, {Op: OpNoRefusal},
	}}}
	v, err := Score(ctx, rule, "Sure.\n<answer>arXiv:1706.03762</answer>", nil)
	if err != nil || v.Hard != 1 || v.Soft != 1 {
		t.Errorf("Score(rule, good) = %+v, %v", v, err)
	}
	v, _ = Score(ctx, rule, "I can't do that. 1706.03762", nil)
	if v.Hard != 0 || v.Soft < 0.33 || v.Soft > 0.34 {
		t.Errorf("Score(rule, bad) = %+v, want hard 0 soft 1/3", v)
	}
	bad := rule
	bad.Judge.Checks = append(bad.Judge.Checks, Check{Op: "mentions", Arg: "x"})
	if _, err := Score(ctx, bad, "anything", nil); err == nil || !strings.Contains(err.Error(), `unknown op "mentions"`) {
		t.Errorf("Score(unknown op) error = %v, want one naming the op", err)
	}
	exact := Task{ID: "t2", Intent: "name the paper", Judge: Judge{Kind: JudgeExact, Reference: "Attention Is All You Need"}}
	if v, _ := Score(ctx, exact, "It is: attention is all you need!", nil); v.Hard != 1 {
		t.Errorf("Score(exact, match) = %+v", v)
	}
	if v, _ := Score(ctx, exact, "attention you need", nil); v.Hard != 0 || v.Soft <= 0.5 {
		t.Errorf("Score(exact, near) = %+v, want hard 0, soft > .5", v)
	}
	sec := Task{ID: "t3", Intent: "write a report", Judge: Judge{Kind: JudgeRule, Checks: []Check{
		{Op: OpSectionPresent, Arg: "Summary"}, {Op: OpSectionContains, Arg: "Risks|rollback"}, {Op: OpToolCalled, Arg: "grep"},
	}}}
	if v, _ := Score(ctx, sec, "## Summary\nok\n## Risks\nwe can rollback\nTOOL_CALL: grep", nil); v.Hard != 1 {
		t.Errorf("Score(sections) = %+v", v)
	}
	rub := Task{ID: "t4", Intent: "explain the bug", Judge: Judge{Kind: JudgeRubric, Rubric: "names the nil map"}}
	for _, c := range []struct {
		reply   string
		hard    float64
		wantErr bool
	}{
		{`{"score": 0.9, "reason": "ok"}`, 1, false},
		{`{"score": 0.5}`, 0, false},
		{`{"score": 7}`, 0, true},
		{`no json`, 0, true},
	} {
		m := fixed(c.reply)
		v, err := Score(ctx, rub, "the map was nil", &RubricJudge{Model: m})
		if (err != nil) != c.wantErr || (err == nil && v.Hard != c.hard) {
			t.Errorf("Score(rubric, judge says %s) = %+v, %v", c.reply, v, err)
		}
	}
}

type fixed string

func (f fixed) Chat(_ context.Context, req *llm.Request) (*llm.Response, error) {
	return &llm.Response{Content: string(f), Usage: llm.Usage{InputTokens: 10, OutputTokens: 5}}, nil
}

// recorder remembers every prompt it was sent.
type recorder struct {
	reply   string
	prompts []string
}

func (r *recorder) Chat(_ context.Context, req *llm.Request) (*llm.Response, error) {
	for _, m := range req.Messages {
		r.prompts = append(r.prompts, m.Text())
	}
	return &llm.Response{Content: r.reply}, nil
}

func TestMineLLMAndFallback(t *testing.T) {
	home := copyTree(t)
	ds, _, err := Harvest(fixtureOptions(home))
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{reply: "```json\n" + `{"tasks": [
	  {"intent": "Run the login tests before claiming they pass", "checks": [{"op": "contains", "arg": "go test"}]},
	  {"intent": "Summarise changes", "rubric": "mentions the issue number"},
	  {"intent": "Bad op task here", "checks": [{"op": "vibes", "arg": "x"}]},
	  {"intent": "short"},
	  {"intent": "fourth task is one too many", "rubric": "r"}
	]}` + "\n```"}
	res, err := MineLLM(context.Background(), rec, "m", ds, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 3 sessions × (2 kept of the first 3; the 4th and 5th cut).
	if len(res.Tasks) != 6 || len(res.Dropped) != 6 {
		t.Fatalf("MineLLM: %d tasks, dropped %q", len(res.Tasks), res.Dropped)
	}
	for _, p := range rec.prompts {
		for _, s := range []string{"sk-proj-AbCdEfGh", "hunter2secret", "ghp_abcdefghij"} {
			if strings.Contains(p, s) {
				t.Fatalf("a prompt holds %q", s)
			}
		}
	}
	tasks := Dedup(res.Tasks)
	// One project: the same intents from three sessions merge.
	if len(tasks) != 2 || len(tasks[0].Sessions) != 3 || tasks[0].Judge.Kind != JudgeRule || tasks[1].Judge.Kind != JudgeRubric {
		t.Errorf("Dedup: %+v, want 2 tasks with 3 sessions each", tasks)
	}
	rec.reply = "I refuse"
	res, _ = MineLLM(context.Background(), rec, "m", ds, nil)
	if res.Fallback != 3 || len(res.Tasks) != 3 || res.Tasks[0].Judge.Kind != JudgeRubric {
		t.Errorf("MineLLM(unusable) = %d fallbacks, %d tasks", res.Fallback, len(res.Tasks))
	}
	stop := errors.New("budget")
	if _, err := MineLLM(context.Background(), rec, "m", ds, func(llm.Usage, int64) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("MineLLM(spend refuses) = %v", err)
	}
}

func TestAssignSplitsStable(t *testing.T) {
	var tasks []Task
	for i := range 30 {
		tasks = append(tasks, Task{ID: TaskID("t_", "p", strings.Repeat("x", i+8)), Origin: "real"})
	}
	AssignSplits(tasks, 42, 0.34, 0)
	n := map[string]int{}
	for _, t := range tasks {
		n[t.Split]++
	}
	if n[SplitVal] < 5 || n[SplitTrain] < 10 || n[SplitTest] != 0 {
		t.Errorf("AssignSplits counts %v", n)
	}
	// The same task keeps its split in another night with other tasks.
	night2 := append([]Task{{ID: "other", Origin: "real"}, {ID: "recalled", Origin: "recall"}}, tasks[:12]...)
	for i := range night2 {
		night2[i].Split = ""
	}
	AssignSplits(night2, 42, 0.34, 0)
	if night2[1].Split != SplitTrain {
		t.Errorf("recalled task split %q, want train", night2[1].Split)
	}
	for i, task := range night2[2:] {
		if task.Split != tasks[i].Split {
			t.Errorf("task %s: split %q in night 2, %q in night 1", task.ID, task.Split, tasks[i].Split)
		}
	}
	two := []Task{{ID: "a", Origin: "real"}, {ID: "b", Origin: "real"}}
	AssignSplits(two, 1, 0.34, 0)
	if two[0].Split == two[1].Split {
		t.Errorf("two tasks got the same split %q", two[0].Split)
	}
}

func TestStateLockAndAtomicSave(t *testing.T) {
	p := filepath.Join(t.TempDir(), "state.json")
	unlock, err := LockState(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LockState(p); !errors.Is(err, ErrLocked) {
		t.Fatalf("second LockState = %v, want ErrLocked", err)
	}
	s, _ := LoadState(p)
	s.Night = 3
	s.Archive([]Task{{ID: "a"}, {ID: "b"}})
	s.Archive([]Task{{ID: "a", Intent: "new"}})
	if err := s.Save(p); err != nil {
		t.Fatal(err)
	}
	unlock()
	if u, err := LockState(p); err != nil {
		t.Fatalf("LockState after unlock = %v", err)
	} else {
		u()
	}
	s2, err := LoadState(p)
	if err != nil || s2.Night != 3 || len(s2.TaskArchive) != 2 || s2.TaskArchive[1].Intent != "new" {
		t.Fatalf("LoadState = %+v, %v", s2, err)
	}
	if err := os.WriteFile(p, []byte("{torn"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadState(p); err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("LoadState(torn) = %v, want an error naming the file", err)
	}
}

func TestShippedConfigLoads(t *testing.T) {
	c, err := LoadConfig("../../configs/sleep/config.yaml", true)
	if err != nil {
		t.Fatal(err)
	}
	d := DefaultConfig()
	if c.MaxTokens != d.MaxTokens || c.Backend != "sim" || c.ValFraction != d.ValFraction {
		t.Errorf("shipped config %+v", c)
	}
	bad := filepath.Join(t.TempDir(), "c.yaml")
	// A bad value is refused naming the file (the backend name is the
	// command's to check, against the backends' table).
	if err := os.WriteFile(bad, []byte("gate_metric: fuzzy\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(bad, true); err == nil || !strings.Contains(err.Error(), `"fuzzy"`) || !strings.Contains(err.Error(), bad) {
		t.Errorf("LoadConfig(gate_metric fuzzy) = %v", err)
	}
	if c.DreamRollouts != 1 || c.DreamFactor != 0 || c.RecallK != 0 {
		t.Errorf("shipped config: dream and recall are not off: %+v", c)
	}
	for _, kv := range []string{"gate_mode: maybe", "gate_mode: \"off\"\nauto_adopt: true", "scope: everywhere", "dream_rollouts: 0", "dream_rollouts: 9", "dream_factor: -1", "dream_factor: 5", "recall_k: 51"} {
		if err := os.WriteFile(bad, []byte(kv+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		key := map[bool]string{true: "auto_adopt", false: strings.Split(kv, ":")[0]}[strings.Contains(kv, "auto_adopt")]
		if _, err := LoadConfig(bad, true); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("LoadConfig(%s) = %v, want an error naming %s", kv, err, key)
		}
	}
}
