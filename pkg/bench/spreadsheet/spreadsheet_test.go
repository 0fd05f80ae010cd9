package spreadsheet

import (
	"context"
	"encoding/json"
	"errors"
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
// the sum of A1:A3 in B1 (gold: 1+2+3 = 6 and 10+20+5 = 35).
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
	if err := bench.DecodeConfig(b, &c); err != nil {
		t.Fatal(err)
	}
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func py(code string) string { return "Here is the program.\n```python\n" + code + "\n```\n" }

// solve sums column A into B1. Its own INPUT_PATH and OUTPUT_PATH
// bindings (plain, multi-line, annotated, augmented, in a tuple) must all
// be dropped by the sandbox, or it would read a missing file.
const solve = `import openpyxl
INPUT_PATH = "/somewhere/else.xlsx"
OUTPUT_PATH = (
    "/also/elsewhere.xlsx"
)
INPUT_PATH: str = "/typed/elsewhere.xlsx"
OUTPUT_PATH += ".bak"
INPUT_PATH, other = "/tuple/elsewhere.xlsx", 1
if other:
    OUTPUT_PATH = "/in/a/block.xlsx"
wb = openpyxl.load_workbook(INPUT_PATH)
ws = wb.active
ws["B1"] = sum(ws.cell(row=r, column=1).value for r in range(1, 4))
wb.save(OUTPUT_PATH)`

// wrong writes 0 into B1: it runs cleanly but fails every case.
const wrong = `import openpyxl
wb = openpyxl.load_workbook(INPUT_PATH)
wb.active["B1"] = 0
wb.save(OUTPUT_PATH)`

func lastMessage(ep *bench.Episode) string { return ep.Messages[len(ep.Messages)-1].Content }

// (a) code that solves the task passes both cases: hard 1, soft 1.
func TestSolvesEveryCase(t *testing.T) {
	root, it := fixture(t)
	e := newEnv(t, root, nil)
	m := benchtest.Text(py(solve))
	ep, err := e.Episode(context.Background(), m, bench.EpisodeRequest{Item: it, Skill: "NEVER write formulas."})
	if err != nil {
		t.Fatal(err)
	}
	if ep.Hard != 1 || ep.Soft != 1 || ep.FailReason != "" || ep.TaskType != "cell_level" {
		t.Fatalf("hard %v soft %v reason %q type %q\n%s", ep.Hard, ep.Soft, ep.FailReason, ep.TaskType, lastMessage(ep))
	}
	// One call: the scripted model's 10 input + 5 output tokens.
	if ep.Calls != 1 || ep.Usage.InputTokens != 10 || ep.Usage.OutputTokens != 5 || ep.NTurns != 1 {
		t.Errorf("accounting: calls %d usage %+v turns %d", ep.Calls, ep.Usage, ep.NTurns)
	}
	if ep.Answer != strings.TrimSuffix(strings.SplitN(py(solve), "```python\n", 2)[1], "```\n") {
		t.Errorf("answer is not the program: %q", ep.Answer)
	}
	req := m.Last()
	sys, user := req.Messages[0].Content, req.Messages[1].Content
	for _, want := range []string{`Sheet "Sheet1" (used range A1:A3)`, `row 1: "1"`, `row 3: "3"`, "B1", "Put the sum of A1:A3 into B1.", "Cell-Level Manipulation"} {
		if !strings.Contains(user, want) {
			t.Errorf("user prompt lacks %q:\n%s", want, user)
		}
	}
	if !strings.Contains(sys, "NEVER write formulas.") || !strings.Contains(sys, "OUTPUT_PATH") {
		t.Errorf("system prompt lacks the skill or the paths:\n%s", sys)
	}
	if len(req.Tools) != 0 {
		t.Errorf("single mode offers tools: %v", req.Tools)
	}
	ev := lastMessage(ep)
	if ep.Messages[len(ep.Messages)-1].Role != llm.RoleSystem || !strings.HasPrefix(ev, "evaluation result: 2 of 2 test cases passed") ||
		!strings.Contains(ev, "(sandbox: bubblewrap)") {
		t.Errorf("evaluation message: %q", ev)
	}
}

// (b) a program that never ends is stopped at the wall-clock limit (a
// sleeping loop spends no CPU, so only the wall limit can stop it), and
// a busy one by the CPU limit; both score 0 with the stop reported.
func TestEndlessProgramsStopped(t *testing.T) {
	root, it := fixture(t)
	for _, tc := range []struct {
		name, code string
		extra      map[string]any
		want       string
		max        time.Duration
	}{
		// Two cases × 1 s wall limit: about 2 s.
		{"sleeps forever", "import time\nwhile True:\n    time.sleep(0.05)", map[string]any{"exec_timeout": "1s"}, "stopped after 1s (time limit)", 6 * time.Second},
		// Two cases × 1 CPU second (the reason says CPU time: the 20 s wall
		// limit never came; a loaded host stretches the wall time).
		{"spins forever", "while True:\n    pass", map[string]any{"cpu_seconds": 1}, "CPU time", 35 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, root, tc.extra)
			start := time.Now()
			ep, err := e.Episode(context.Background(), benchtest.Text(py(tc.code)), bench.EpisodeRequest{Item: it})
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > tc.max {
				t.Errorf("took %s", d)
			}
			if ep.Hard != 0 || ep.Soft != 0 {
				t.Errorf("scored %v/%v", ep.Hard, ep.Soft)
			}
			if !strings.Contains(ep.FailReason, "case 1: ") || !strings.Contains(ep.FailReason, "case 2: ") || !strings.Contains(ep.FailReason, tc.want) {
				t.Errorf("reason %q lacks both cases or %q", ep.FailReason, tc.want)
			}
			if !strings.Contains(lastMessage(ep), tc.want) {
				t.Errorf("trajectory does not report the stop: %q", lastMessage(ep))
			}
		})
	}
}

// (c) writes, removals and renames outside the work directory are refused
// and reported; the files outside are untouched.
func TestWritesOutsideContained(t *testing.T) {
	root, it := fixture(t)
	escape := filepath.Join(os.TempDir(), fmt.Sprintf("skillfleet-escape-%d.txt", os.Getpid()))
	victim := filepath.Join(os.TempDir(), fmt.Sprintf("skillfleet-victim-%d.txt", os.Getpid()))
	os.Remove(escape)
	if err := os.WriteFile(victim, []byte("keep"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(victim, 0o666); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(victim)
	for _, tc := range []struct{ name, code, want string }{
		{"open for writing", fmt.Sprintf("open(%q, 'w').write('escaped')", escape), "writing outside the work directory is not allowed"},
		{"os.open", fmt.Sprintf("import os\nos.open(%q, os.O_WRONLY | os.O_CREAT)", escape), "writing outside the work directory is not allowed"},
		{"append to a file", fmt.Sprintf("open(%q, 'a').write('x')", victim), "writing outside the work directory is not allowed"},
		{"remove a file", fmt.Sprintf("import os\nos.remove(%q)", victim), "changing files outside the work directory is not allowed"},
		{"rename into", fmt.Sprintf("import os\nopen('x', 'w').close()\nos.replace('x', %q)", escape), "changing files outside the work directory is not allowed"},
		{"save the workbook elsewhere", fmt.Sprintf("import openpyxl\nopenpyxl.load_workbook(INPUT_PATH).save(%q)", escape), "writing outside the work directory is not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, root, nil)
			ep, err := e.Episode(context.Background(), benchtest.Text(py(tc.code)), bench.EpisodeRequest{Item: it})
			if err != nil {
				t.Fatal(err)
			}
			if ep.Hard != 0 || ep.Soft != 0 || !strings.Contains(ep.FailReason, tc.want) {
				t.Errorf("scored %v, reason %q (want %q)", ep.Soft, ep.FailReason, tc.want)
			}
		})
	}
	if _, err := os.Stat(escape); err == nil {
		os.Remove(escape)
		t.Error("the code wrote outside its work directory")
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "keep" {
		t.Errorf("the file outside changed: %q, %v", b, err)
	}
	// Reading the runtime is allowed (the interpreter's own modules are
	// outside the work directory), the host's /etc is not there, and the
	// work directory is the current directory.
	e := newEnv(t, root, nil)
	ep, err := e.Episode(context.Background(), benchtest.Text(py(`import os, openpyxl
assert open(os.__file__).read() is not None
assert not os.path.exists("/etc/hostname")
assert os.path.dirname(INPUT_PATH) == os.getcwd() == os.environ["HOME"]
open("scratch.txt", "w").write("fine")
wb = openpyxl.load_workbook(INPUT_PATH)
wb.active["B1"] = sum(c.value for c in wb.active["A"])
wb.save(OUTPUT_PATH)`)), bench.EpisodeRequest{Item: it})
	if err != nil || ep.Hard != 1 {
		t.Errorf("reading outside / writing inside: hard %v, %v, reason %q", ep.Hard, err, ep.FailReason)
	}
}

// (d) the code cannot reach a socket the test listens on: the connection
// fails and the listener sees nothing.
func TestNetworkBlocked(t *testing.T) {
	root, it := fixture(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	e := newEnv(t, root, nil)
	code := fmt.Sprintf("import socket\nsocket.create_connection(('127.0.0.1', %d), timeout=2)", port)
	ep, err := e.Episode(context.Background(), benchtest.Text(py(code)), bench.EpisodeRequest{Item: it})
	if err != nil {
		t.Fatal(err)
	}
	if ep.Hard != 0 || !strings.Contains(ep.FailReason, "network access is not allowed") {
		t.Errorf("scored %v, reason %q", ep.Hard, ep.FailReason)
	}
	// Both isolation layers, separately: the namespace alone (no hook
	// involved: a raw connect would fail there too) is checked by
	// TestSandboxLayers; here, whatever ran, nothing arrived.
	select {
	case <-accepted:
		t.Error("the code reached a listening socket on the host")
	case <-time.After(300 * time.Millisecond):
	}
}

func newBox(t *testing.T, l Limits) (*Sandbox, []byte) {
	t.Helper()
	in := book(t, filepath.Join(t.TempDir(), "in.xlsx"), map[string]any{"Sheet1!A1": 1})
	if l.Wall == 0 {
		l.Wall = 20 * time.Second
	}
	data, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	box := &Sandbox{Python: findPython(t), Limits: l}
	if err := box.Ready(); err != nil {
		t.Fatal(err)
	}
	return box, data
}

func runBox(t *testing.T, box *Sandbox, in []byte, code string) RunResult {
	t.Helper()
	res, err := box.Run(context.Background(), code, in, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestSandboxLayers checks the second layer (the audit hook) inside the
// kernel sandbox, and what the program's world looks like.
func TestSandboxLayers(t *testing.T) {
	box, in := newBox(t, Limits{})
	// The hook refuses even a name lookup (the namespace would too).
	res := runBox(t, box, in, "import socket\nsocket.getaddrinfo('localhost', 80)")
	if res.Isolation != "bubblewrap" || res.ExitCode == 0 || !strings.Contains(res.Output, "network access is not allowed (socket.getaddrinfo)") {
		t.Errorf("hook: %+v", res)
	}
	res = runBox(t, box, in, "print('ok')")
	if res.ExitCode != 0 || strings.TrimSpace(res.Output) != "ok" {
		t.Errorf("plain program: %+v", res)
	}
	// The only interface is the sandbox's own loopback.
	res = runBox(t, box, in, "import socket\nprint(sorted(n for _, n in socket.if_nameindex()))")
	if strings.TrimSpace(res.Output) != "['lo']" {
		t.Errorf("interfaces in the namespace: %q", res.Output)
	}
	// The environment is exactly these variables.
	res = runBox(t, box, in, "import os\nprint(' '.join(sorted(os.environ)))")
	if got := strings.TrimSpace(res.Output); got != "HOME INPUT_PATH LANG OUTPUT_PATH PATH PWD TMPDIR" {
		t.Errorf("environment: %q", got)
	}
	// Starting processes is refused by the hook (os.system, subprocess, fork).
	for _, code := range []string{"import os\nos.system('true')", "import subprocess\nsubprocess.run(['true'])", "import os\nos.fork()"} {
		res = runBox(t, box, in, code)
		if res.ExitCode == 0 || !strings.Contains(res.Output, "starting processes is not allowed") {
			t.Errorf("%q: %+v", code, res)
		}
	}
	// The program sees the runtime, its work directory and nothing else of
	// the host: no /etc, no /root, no /home, no host /tmp.
	res = runBox(t, box, in, "import os\nprint(sorted(os.listdir('/')), sorted(os.listdir('.')), os.getuid())")
	if got := strings.TrimSpace(res.Output); !strings.Contains(got, "['input.xlsx', 'sandbox_boot.py', 'solution.py'] 65534") || strings.Contains(got, "'etc'") || strings.Contains(got, "'home'") {
		t.Errorf("filesystem: %q", got)
	}
}

func TestSandboxLimits(t *testing.T) {
	// Memory: 512 MiB of address space cannot hold a 1 GiB bytes object.
	box, in := newBox(t, Limits{MemoryMB: 512})
	res := runBox(t, box, in, "x = bytearray(1 << 30)\nprint('allocated')")
	if res.ExitCode == 0 || !strings.Contains(res.Output, "MemoryError") {
		t.Errorf("memory: %+v", res)
	}
	// Processes/threads: 8 at most; starting 50 threads fails.
	box, in = newBox(t, Limits{Procs: 8})
	res = runBox(t, box, in, `import threading, time
ts = [threading.Thread(target=time.sleep, args=(2,)) for _ in range(50)]
for t in ts:
    t.start()
print('started all')`)
	if res.ExitCode == 0 || !strings.Contains(res.Output, "can't start new thread") {
		t.Errorf("process limit: %+v", res)
	}
	// Output: 1 MB printed, 64 KiB kept, the cut marked.
	box, in = newBox(t, Limits{})
	res = runBox(t, box, in, "print('x' * 1000000)")
	if res.ExitCode != 0 || len(res.Output) > 64<<10+100 || !strings.HasSuffix(res.Output, "[... output truncated ...]") {
		t.Errorf("output cap: exit %d, %d bytes", res.ExitCode, len(res.Output))
	}
	// File size: 64 MiB at most per file (here 1 MiB for the test).
	box, in = newBox(t, Limits{FileMB: 1})
	res = runBox(t, box, in, "open('big.bin', 'wb').write(b'x' * (2 << 20))")
	if res.ExitCode == 0 {
		t.Errorf("file size limit: %+v", res)
	}
	// A cancelled context stops the run like the wall limit.
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	r, err := box.Run(ctx, "import time\ntime.sleep(30)", in, RunOptions{})
	if err != nil || !r.TimedOut || time.Since(start) > 5*time.Second {
		t.Errorf("cancel: %+v %v after %s", r, err, time.Since(start))
	}
}

// (e) multi mode: the wrong program's cells reach the model only with
// gold feedback on (and evaluation feedback requested); without them a
// cleanly running program ends the episode.
func TestMultiModeGoldFeedback(t *testing.T) {
	root, it := fixture(t)
	for _, gold := range []bool{true, false} {
		e := newEnv(t, root, map[string]any{"mode": "multi", "max_turns": 3, "gold_feedback": gold})
		m := &benchtest.Scripted{Replies: []*llm.Response{{Content: py(wrong)}, {Content: py(solve)}}}
		ep, err := e.Episode(context.Background(), m, bench.EpisodeRequest{Item: it, EvalFeedback: true})
		if err != nil {
			t.Fatal(err)
		}
		if gold {
			// Told "expected 6, got 0" for case 1 (and 35 for case 2), the
			// model's second program solves both.
			if ep.Hard != 1 || m.Calls() != 2 {
				t.Fatalf("gold feedback: hard %v after %d calls", ep.Hard, m.Calls())
			}
			fb := m.Requests[1].Messages[len(m.Requests[1].Messages)-1].Content
			if !strings.Contains(fb, "case 1: wrong cells: Sheet1!B1: expected 6, got 0") || !strings.Contains(fb, "case 2: wrong cells: Sheet1!B1: expected 35, got 0") {
				t.Errorf("gold feedback: %q", fb)
			}
			continue
		}
		// No feedback to give: one call, scored 0, the analysts still see why.
		if ep.Hard != 0 || m.Calls() != 1 {
			t.Errorf("no gold feedback: hard %v after %d calls", ep.Hard, m.Calls())
		}
		if !strings.Contains(ep.FailReason, "expected 6, got 0") {
			t.Errorf("fail reason lacks the wrong cells: %q", ep.FailReason)
		}
	}
	// An evaluation rollout (no evaluation feedback) with gold feedback on
	// in the config never sees the gold either.
	e := newEnv(t, root, map[string]any{"mode": "multi", "max_turns": 3})
	m := &benchtest.Scripted{Replies: []*llm.Response{{Content: py(wrong)}, {Content: py(solve)}}}
	ep, err := e.Episode(context.Background(), m, bench.EpisodeRequest{Item: it})
	if err != nil {
		t.Fatal(err)
	}
	if m.Calls() != 1 || ep.Hard != 0 {
		t.Errorf("evaluation rollout: %d calls, hard %v", m.Calls(), ep.Hard)
	}
	for _, r := range m.Requests {
		for _, msg := range r.Messages {
			if strings.Contains(msg.Content, "expected") {
				t.Errorf("evaluation rollout saw the gold: %q", msg.Content)
			}
		}
	}
}

// Execution errors are fed back in multi mode whatever gold_feedback says.
func TestMultiModeErrorFeedback(t *testing.T) {
	root, it := fixture(t)
	e := newEnv(t, root, map[string]any{"mode": "multi", "gold_feedback": false})
	m := &benchtest.Scripted{Replies: []*llm.Response{{Content: py("raise ValueError('column A is empty')")}, {Content: py(solve)}}}
	ep, err := e.Episode(context.Background(), m, bench.EpisodeRequest{Item: it, EvalFeedback: true})
	if err != nil {
		t.Fatal(err)
	}
	if ep.Hard != 1 || m.Calls() != 2 || ep.NTurns != 2 {
		t.Fatalf("hard %v after %d calls, %d turns", ep.Hard, m.Calls(), ep.NTurns)
	}
	fb := m.Requests[1].Messages[len(m.Requests[1].Messages)-1].Content
	if !strings.Contains(fb, "case 1: the program failed (exit 1)") || !strings.Contains(fb, "ValueError: column A is empty") {
		t.Errorf("error feedback: %q", fb)
	}
	// Five rounds by default, all failing: five calls, scored 0.
	e = newEnv(t, root, map[string]any{"mode": "multi"})
	m = benchtest.Text(py("raise SystemExit(3)"))
	ep, err = e.Episode(context.Background(), m, bench.EpisodeRequest{Item: it})
	if err != nil {
		t.Fatal(err)
	}
	if m.Calls() != 5 || ep.Hard != 0 || !strings.Contains(ep.FailReason, "exit 3") {
		t.Errorf("%d calls, hard %v, reason %q", m.Calls(), ep.Hard, ep.FailReason)
	}
}

// (f) a reply without a code block scores 0 with a reason; in multi mode
// the model is asked again.
func TestNoCodeBlock(t *testing.T) {
	root, it := fixture(t)
	e := newEnv(t, root, nil)
	ep, err := e.Episode(context.Background(), benchtest.Text("I would sum the column."), bench.EpisodeRequest{Item: it})
	if err != nil {
		t.Fatal(err)
	}
	if ep.Hard != 0 || ep.Soft != 0 || ep.FailReason != "no code block in the reply" || ep.Answer != "" {
		t.Errorf("hard %v reason %q answer %q", ep.Hard, ep.FailReason, ep.Answer)
	}
	e = newEnv(t, root, map[string]any{"mode": "multi", "max_turns": 2})
	m := benchtest.Text("I would sum the column.", py(solve))
	ep, err = e.Episode(context.Background(), m, bench.EpisodeRequest{Item: it})
	if err != nil {
		t.Fatal(err)
	}
	if ep.Hard != 1 || !strings.Contains(m.Requests[1].Messages[3].Content, "no ```python code block") {
		t.Errorf("multi retry: hard %v, %q", ep.Hard, m.Requests[1].Messages[3].Content)
	}
}

func TestItemsAndErrors(t *testing.T) {
	root, _ := fixture(t)
	e := newEnv(t, root, nil)
	run := func(raw string, m llm.Model) (*bench.Episode, error) {
		return e.Episode(context.Background(), m, bench.EpisodeRequest{Item: bench.Item{ID: "x", Raw: json.RawMessage(raw)}})
	}
	// A numeric id (as SpreadsheetBench writes some) is fine.
	ep, err := run(`{"id": 59196, "instruction": "Sum A1:A3 into B1.", "instruction_type": "Sheet-Level Manipulation", "answer_position": "Sheet1!B1", "spreadsheet_path": "spreadsheet/sum-1", "answer_sheet": null}`, benchtest.Text(py(solve)))
	if err != nil || ep.Hard != 1 || ep.TaskType != "sheet_level" {
		t.Errorf("numeric id: %v, %+v", err, ep)
	}
	for raw, want := range map[string]string{
		`{"id": "x", "answer_position": "B1", "spreadsheet_path": "spreadsheet/sum-1"}`:                      "field instruction is missing",
		`{"id": "x", "instruction": "i", "answer_position": "B1:", "spreadsheet_path": "spreadsheet/sum-1"}`: "answer_position",
		`{"id": "x", "instruction": "i", "answer_position": "B1", "spreadsheet_path": "spreadsheet/none"}`:   "spreadsheet item x: test cases: no directory spreadsheet/none under",
		`{"id": "x", "instruction": 5}`: "spreadsheet item x",
	} {
		if _, err := run(raw, benchtest.Text(py(solve))); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", raw, err, want)
		}
	}
	// An empty test-case directory scores 0 without spending a call.
	if err := os.MkdirAll(filepath.Join(root, "spreadsheet", "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := benchtest.Text(py(solve))
	ep, err = run(`{"id": "x", "instruction": "i", "answer_position": "B1", "spreadsheet_path": "spreadsheet/empty"}`, m)
	if err != nil || ep.Hard != 0 || m.Calls() != 0 || !strings.Contains(ep.FailReason, "no test cases found") {
		t.Errorf("no cases: %v, calls %d, %+v", err, m.Calls(), ep)
	}
	// A model failure is returned with the usage spent so far.
	failing := &benchtest.Scripted{Err: errors.New("upstream down")}
	ep, err = run(`{"id": "x", "instruction": "i", "answer_position": "B1", "spreadsheet_path": "spreadsheet/sum-1"}`, failing)
	if err == nil || !strings.Contains(err.Error(), "upstream down") || ep == nil || ep.Calls != 1 || ep.FailedCalls != 1 {
		t.Errorf("model error: %v, %+v", err, ep)
	}
	// Data root: by default the split dir's parent, else the split dir
	// (ratio mode); a relative data_root under the split dir.
	for _, cfg := range []map[string]any{
		{"data_root": "", "split_dir": filepath.Join(root, "split")},
		{"data_root": "", "split_dir": root},
		{"data_root": ".", "split_dir": root},
	} {
		e := newEnv(t, root, cfg)
		ep, err := e.Episode(context.Background(), benchtest.Text(py(solve)), bench.EpisodeRequest{Item: bench.Item{ID: "sum-1", Raw: json.RawMessage(`{"id": "sum-1", "instruction": "i", "answer_position": "B1", "spreadsheet_path": "spreadsheet/sum-1"}`)}})
		if err != nil || ep.Hard != 1 {
			t.Errorf("%v: %v, %+v", cfg, err, ep)
		}
	}
	// Unknown modes are refused: TestReactModeConfig.
}

func TestCaseDiscovery(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"2_x_init.xlsx", "2_x_golden.xlsx", "1_x_init.xlsx", "1_x_golden.xlsx", "3_x_init.xlsx", "notes.txt", "10_x_input.xlsx", "10_x_answer.xlsx"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Pairs by number, ordered 1, 2, 10; case 3 has no gold and is skipped.
	cs, err := Cases(dir)
	var got []string
	for _, c := range cs {
		got = append(got, filepath.Base(c.Input)+"+"+filepath.Base(c.Gold))
	}
	want := []string{"1_x_init.xlsx+1_x_golden.xlsx", "2_x_init.xlsx+2_x_golden.xlsx", "10_x_input.xlsx+10_x_answer.xlsx"}
	if err != nil || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("cases = %v, %v", got, err)
	}
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "initial.xlsx"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "golden.xlsx"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if cs, _ := Cases(dir); len(cs) != 1 || filepath.Base(cs[0].Gold) != "golden.xlsx" {
		t.Errorf("initial/golden pair not found: %+v", cs)
	}
	if _, err := Cases(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing directory accepted")
	}
}
