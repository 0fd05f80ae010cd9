package spreadsheet

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/benchtest"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// fixture writes a data root with one item whose two test cases ask for
// the sum of A1:A3 in B1.
func fixture(t *testing.T) (root string, it bench.Item) {
	t.Helper()
	root = t.TempDir()
	dir := filepath.Join(root, "spreadsheet", "sum-1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for n, vals := range [][]int{{1, 2, 3}, {10, 20, 5}} {
		in := map[string]any{"Sheet1!A1": vals[0], "Sheet1!A2": vals[1], "Sheet1!A3": vals[2]}
		book(t, filepath.Join(dir, fmt.Sprintf("%d_sum-1_input.xlsx", n+1)), in)
		gold := map[string]any{"Sheet1!B1": vals[0] + vals[1] + vals[2]}
		for k, v := range in {
			gold[k] = v
		}
		book(t, filepath.Join(dir, fmt.Sprintf("%d_sum-1_answer.xlsx", n+1)), gold)
	}
	raw, _ := json.Marshal(Item{ID: "sum-1", Instruction: "Put the sum of A1:A3 into B1.", InstructionType: "Cell-Level Manipulation",
		AnswerPosition: "B1", SpreadsheetPath: "spreadsheet/sum-1"})
	return root, bench.Item{ID: "sum-1", Raw: raw}
}

func newEnv(t *testing.T, root string, extra map[string]any) *Env {
	t.Helper()
	cfg := map[string]any{"data_root": root, "python": findPython(t), "exec_timeout": "20s"}
	for k, v := range extra {
		cfg[k] = v
	}
	b, _ := json.Marshal(cfg)
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func py(code string) string { return "Here is the program.\n```python\n" + code + "\n```\n" }

const solve = `import openpyxl
INPUT_PATH = "/somewhere/else.xlsx"  # stripped: the sandbox sets it
wb = openpyxl.load_workbook(INPUT_PATH)
ws = wb.active
ws["B1"] = sum(ws.cell(row=r, column=1).value for r in range(1, 4))
wb.save(OUTPUT_PATH)`

func TestSolvesEveryCase(t *testing.T) {
	root, it := fixture(t)
	e := newEnv(t, root, nil)
	m := benchtest.Text(py(solve))
	ep, err := e.Episode(context.Background(), m, bench.EpisodeRequest{Item: it, Skill: "NEVER write formulas."})
	if err != nil {
		t.Fatal(err)
	}
	if ep.Hard != 1 || ep.Soft != 1 || ep.FailReason != "" || ep.TaskType != "cell_level" {
		t.Fatalf("hard %v soft %v reason %q type %q\n%s", ep.Hard, ep.Soft, ep.FailReason, ep.TaskType, ep.Messages[len(ep.Messages)-1].Content)
	}
	user := m.Last().Messages[1].Content
	if !strings.Contains(user, `row 1: "1"`) || !strings.Contains(user, "B1") || !strings.Contains(m.Last().Messages[0].Content, "NEVER write formulas.") {
		t.Errorf("prompt lacks the preview, position or skill:\n%s", user)
	}
}

func TestContainment(t *testing.T) {
	root, it := fixture(t)
	escape := filepath.Join(os.TempDir(), fmt.Sprintf("skillfleet-escape-%d.txt", os.Getpid()))
	os.Remove(escape)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	for _, tc := range []struct {
		name, code, want string
		extra            map[string]any
	}{
		{"loops forever", "while True:\n    pass", "", map[string]any{"exec_timeout": "3s", "cpu_seconds": 1}},
		{"writes outside its dir", fmt.Sprintf("open(%q, 'w').write('escaped')", escape), "writing outside the work directory", nil},
		{"imports the network", fmt.Sprintf("import socket\nsocket.create_connection(('127.0.0.1', %d), timeout=2)", port), "network access is not allowed", nil},
		{"starts a process", "import os\nos.system('echo hi > /tmp/x')", "starting processes is not allowed", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, root, tc.extra)
			start := time.Now()
			ep, err := e.Episode(context.Background(), benchtest.Text(py(tc.code)), bench.EpisodeRequest{Item: it})
			if err != nil {
				t.Fatal(err)
			}
			if ep.Hard != 0 || ep.Soft != 0 {
				t.Errorf("scored %v/%v", ep.Hard, ep.Soft)
			}
			if tc.want != "" && !strings.Contains(ep.FailReason, tc.want) {
				t.Errorf("reason %q lacks %q", ep.FailReason, tc.want)
			}
			if tc.name == "loops forever" {
				if !strings.Contains(ep.FailReason, "time limit") && !strings.Contains(ep.FailReason, "killed by signal") {
					t.Errorf("endless loop not reported as stopped: %q", ep.FailReason)
				}
				// Two cases, each stopped by the 1 s CPU limit or the 3 s wall limit.
				if d := time.Since(start); d > 10*time.Second {
					t.Errorf("took %s", d)
				}
			}
		})
	}
	if _, err := os.Stat(escape); err == nil {
		os.Remove(escape)
		t.Error("the code wrote outside its work directory")
	}
	select {
	case <-accepted:
		t.Error("the code reached a listening socket on the host")
	case <-time.After(300 * time.Millisecond):
	}
}

// TestNetworkFallbackIsAuditHook: without a network namespace the audit
// hook alone refuses the connection.
func TestNetworkFallbackIsAuditHook(t *testing.T) {
	python := findPython(t)
	dir := t.TempDir()
	in := book(t, filepath.Join(t.TempDir(), "in.xlsx"), map[string]any{"Sheet1!A1": 1})
	box := &Sandbox{Python: python, Limits: Limits{Wall: 10 * time.Second}, noNamespace: true}
	res, _, err := box.Run(context.Background(), dir, "import socket\nsocket.getaddrinfo('localhost', 80)", in)
	if err != nil {
		t.Fatal(err)
	}
	if res.Network != "audit-hook" || res.ExitCode == 0 || !strings.Contains(res.Output, "network access is not allowed") {
		t.Errorf("fallback: %+v", res)
	}
	box.noNamespace = false
	res, _, _ = box.Run(context.Background(), t.TempDir(), "print('ok')", in)
	t.Logf("network isolation here: %s", res.Network)
	if res.ExitCode != 0 {
		t.Errorf("plain program failed: %+v", res)
	}
}

func TestMultiModeGoldFeedback(t *testing.T) {
	root, it := fixture(t)
	wrong := `import openpyxl
wb = openpyxl.load_workbook(INPUT_PATH)
wb.active["B1"] = 0
wb.save(OUTPUT_PATH)`
	for _, gold := range []bool{true, false} {
		e := newEnv(t, root, map[string]any{"mode": "multi", "max_turns": 3, "gold_feedback": gold})
		m := &benchtest.Scripted{Replies: []*llm.Response{{Content: py(wrong)}, {Content: py(solve)}}}
		ep, err := e.Episode(context.Background(), m, bench.EpisodeRequest{Item: it, EvalFeedback: true})
		if err != nil {
			t.Fatal(err)
		}
		if ep.Hard != 1 || m.Calls() != 2 {
			t.Errorf("gold_feedback %v: hard %v after %d calls", gold, ep.Hard, m.Calls())
		}
		fb := m.Requests[1].Messages[len(m.Requests[1].Messages)-1].Content
		hasCells := strings.Contains(fb, "Sheet1!B1: expected 6, got 0")
		if hasCells != gold {
			t.Errorf("gold_feedback %v: feedback %q", gold, fb)
		}
	}
	// Evaluation rollouts (no evaluation feedback) never see the gold.
	e := newEnv(t, root, map[string]any{"mode": "multi", "max_turns": 2})
	m := &benchtest.Scripted{Replies: []*llm.Response{{Content: py(wrong)}, {Content: py(wrong)}}}
	ep, _ := e.Episode(context.Background(), m, bench.EpisodeRequest{Item: it})
	if fb := m.Requests[1].Messages[len(m.Requests[1].Messages)-1].Content; strings.Contains(fb, "expected 6") {
		t.Errorf("evaluation rollout saw the gold: %q", fb)
	}
	if ep.Hard != 0 || ep.Soft != 0 {
		t.Errorf("wrong code scored %v", ep.Soft)
	}
}

func TestNoCodeBlock(t *testing.T) {
	root, it := fixture(t)
	e := newEnv(t, root, nil)
	ep, err := e.Episode(context.Background(), benchtest.Text("I would sum the column."), bench.EpisodeRequest{Item: it})
	if err != nil {
		t.Fatal(err)
	}
	if ep.Hard != 0 || ep.FailReason != "no code block in the reply" {
		t.Errorf("hard %v reason %q", ep.Hard, ep.FailReason)
	}
}

func TestCaseDiscovery(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"2_x_init.xlsx", "2_x_golden.xlsx", "1_x_init.xlsx", "1_x_golden.xlsx", "3_x_init.xlsx", "notes.txt"} {
		os.WriteFile(filepath.Join(dir, n), nil, 0o644)
	}
	cs, err := Cases(dir)
	if err != nil || len(cs) != 2 || !strings.HasSuffix(cs[0].Input, "1_x_init.xlsx") || !strings.HasSuffix(cs[1].Gold, "2_x_golden.xlsx") {
		t.Errorf("cases = %+v, %v", cs, err)
	}
	dir = t.TempDir()
	os.WriteFile(filepath.Join(dir, "initial.xlsx"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "golden.xlsx"), nil, 0o644)
	if cs, _ := Cases(dir); len(cs) != 1 {
		t.Errorf("initial/golden pair not found: %+v", cs)
	}
}
