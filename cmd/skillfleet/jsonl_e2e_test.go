package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// calcServer is an OpenAI-compatible chat server standing in for a target
// model: it answers "What is N times 7?" correctly only when the system
// prompt (where the skill goes) says MULTIPLY, and with N+7 otherwise.
func calcServer(t *testing.T) *httptest.Server {
	t.Helper()
	q := regexp.MustCompile(`What is (\d+) times 7\?`)
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) < 2 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		m := q.FindStringSubmatch(req.Messages[len(req.Messages)-1].Content)
		if m == nil {
			http.Error(w, `{"error":{"message":"not a calc question","type":"invalid_request_error"}}`, http.StatusBadRequest)
			return
		}
		n, _ := strconv.Atoi(m[1])
		ans := n + 7
		if strings.Contains(req.Messages[0].Content, "MULTIPLY") {
			ans = n * 7
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "c1", "object": "chat.completion", "model": req.Model,
			"choices": []map[string]any{{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": fmt.Sprintf("Working it out.\n<answer>%d</answer>", ans)}}},
			"usage": map[string]any{"prompt_tokens": 40, "completion_tokens": 8, "total_tokens": 48},
		})
	}))
}

// TestEvalOnAJSONLTask runs `skillfleet eval` end to end on the generic
// jsonl benchmark — split dir, prompt template, numeric scorer — through
// the coordinator, the queue, a worker and the OpenAI-compatible backend:
// the skill that says MULTIPLY scores every item, the seed skill none.
func TestEvalOnAJSONLTask(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the coordinator and a worker")
	}
	srv := calcServer(t)
	defer srv.Close()
	dir := t.TempDir()
	for sp, ids := range map[string][]int{"train": {1, 2, 3}, "val": {4, 5}, "test": {6, 7, 8, 9}} {
		if err := os.MkdirAll(filepath.Join(dir, "split", sp), 0o755); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		for _, n := range ids {
			fmt.Fprintf(&b, `{"id": "q%d", "n": %d, "answer": %d, "task_type": "times"}`+"\n", n, n, 7*n)
		}
		if err := os.WriteFile(filepath.Join(dir, "split", sp, "items.jsonl"), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	seed := write("seed.md", "# Arithmetic\n- Add the numbers.\n")
	good := write("good.md", "# Arithmetic\n- MULTIPLY the numbers.\n")
	cfg := write("run.yaml", fmt.Sprintf(`_base_: %s
model:
  backend: openai_compatible
  optimizer: calc
  target: calc
  reasoning_effort: ""
  target_base_url: %s/v1
  optimizer_base_url: %s/v1
env:
  name: jsonl
  split_mode: split_dir
  split_dir: %s
  skill_init: %s
  prompt_template: "What is {{.n}} times 7?"
  scorer: numeric
runtime:
  sim_llm: false
  workers: 1
`, filepath.Join(repoRoot(t), "configs", "_base_", "default.yaml"), srv.URL, srv.URL, filepath.Join(dir, "split"), seed))
	var stdout, stderr bytes.Buffer
	code := run([]string{"eval", "--config", cfg, "--skill", good, "--split", "test", "--baseline", "--out", filepath.Join(dir, "out")}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("eval exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "eval_summary.json")); err != nil {
		t.Fatalf("no eval_summary.json: %v\n%s", err, stdout.String())
	}
	out := stdout.String()
	// The overall row: no_skill, seed_skill, skill, each "score (n)".
	scores := map[string]float64{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 7 && f[0] == "overall" {
			for i, name := range []string{"no_skill", "seed_skill", "skill"} {
				scores[name], _ = strconv.ParseFloat(f[1+2*i], 64)
			}
		}
	}
	if scores["skill"] != 1 || scores["seed_skill"] != 0 || scores["no_skill"] != 0 {
		t.Errorf("scores %v, want skill 1, seed and no skill 0\n%s", scores, out)
	}
}
