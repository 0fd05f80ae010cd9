// Package spreadsheet is SpreadsheetBench: the target writes Python
// (openpyxl) code that edits a workbook; the code runs in a sandbox on
// every test case and the answer cells are compared with the gold
// workbook's.
package spreadsheet

import (
	"cmp"
	"context"
	"encoding/json"

	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// Name is the benchmark's registry key.
const Name = "spreadsheet"

// Modes.
const (
	ModeSingle = "single"
	ModeMulti  = "multi"
)

// Config is the benchmark's env keys.
type Config struct {
	bench.Common
	// Mode is single (one code-generation call) or multi (rounds with
	// execution feedback). Default single.
	Mode string `json:"mode"`
	// DataRoot holds spreadsheet/<id>/ test cases (default: the split
	// dir's parent).
	DataRoot string `json:"data_root"`
	// Python is the interpreter (default python3); it needs openpyxl.
	Python string `json:"python"`
	// GoldFeedback gives multi-mode training rollouts (evaluation feedback
	// on) cell-level correctness against the gold workbook, as SkillOpt
	// does. Default true.
	GoldFeedback *bool `json:"gold_feedback"`
	// CPUSeconds and MemoryMB limit each execution (defaults 30, 1024).
	CPUSeconds int `json:"cpu_seconds"`
	MemoryMB   int `json:"memory_mb"`
}

// Item is a SpreadsheetBench item.
type Item struct {
	ID              string `json:"id"`
	Instruction     string `json:"instruction"`
	InstructionType string `json:"instruction_type"`
	AnswerPosition  string `json:"answer_position"`
	AnswerSheet     string `json:"answer_sheet,omitempty"`
	SpreadsheetPath string `json:"spreadsheet_path"`
}

// TaskType maps instruction_type to cell_level, sheet_level or other.
func TaskType(instructionType string) string {
	t := strings.ToLower(instructionType)
	switch {
	case strings.HasPrefix(t, "cell-level"):
		return "cell_level"
	case strings.HasPrefix(t, "sheet-level"):
		return "sheet_level"
	}
	return "other"
}

// Case is one input workbook and its gold result.
type Case struct{ Input, Gold string }

var casePair = regexp.MustCompile(`^(\d+)_(.+)_(input|answer|init|golden)\.xlsx$`)

// Cases finds an item's test cases in dir: N_<id>_input.xlsx with
// N_<id>_answer.xlsx, or N_<id>_init.xlsx with N_<id>_golden.xlsx, else
// initial.xlsx with golden.xlsx; ordered by N.
func Cases(dir string) ([]Case, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	type half struct{ in, gold string }
	byN := map[int]*half{}
	for _, e := range entries {
		m := casePair.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		h := byN[n]
		if h == nil {
			h = &half{}
			byN[n] = h
		}
		p := filepath.Join(dir, e.Name())
		if m[3] == "input" || m[3] == "init" {
			h.in = p
		} else {
			h.gold = p
		}
	}
	var ns []int
	for n, h := range byN {
		if h.in != "" && h.gold != "" {
			ns = append(ns, n)
		}
	}
	sort.Ints(ns)
	var out []Case
	for _, n := range ns {
		out = append(out, Case{Input: byN[n].in, Gold: byN[n].gold})
	}
	if len(out) == 0 {
		in, gold := filepath.Join(dir, "initial.xlsx"), filepath.Join(dir, "golden.xlsx")
		if _, err := os.Stat(in); err == nil {
			if _, err := os.Stat(gold); err == nil {
				out = append(out, Case{Input: in, Gold: gold})
			}
		}
	}
	return out, nil
}

// Env is the SpreadsheetBench environment.
type Env struct {
	cfg Config
	box *Sandbox
}

var _ bench.Env = (*Env)(nil)

// New validates the config and returns the environment.
func New(cfg Config) (*Env, error) {
	cfg.Mode = cmp.Or(cfg.Mode, ModeSingle)
	if cfg.Mode != ModeSingle && cfg.Mode != ModeMulti {
		return nil, fmt.Errorf("env.mode: %q is not single or multi", cfg.Mode)
	}
	if cfg.Mode == ModeMulti && cfg.MaxTurns == 0 {
		cfg.MaxTurns = 5
	}
	box := &Sandbox{Python: cmp.Or(cfg.Python, "python3"), Limits: Limits{
		Wall: cfg.Timeout(60 * time.Second), CPU: cfg.CPUSeconds, MemoryMB: cfg.MemoryMB}}
	return &Env{cfg: cfg, box: box}, nil
}

// Name returns "spreadsheet".
func (e *Env) Name() string { return Name }

func (e *Env) dataRoot() string {
	if e.cfg.DataRoot != "" {
		return e.cfg.Resolve(e.cfg.DataRoot)
	}
	if e.cfg.SplitDir != "" {
		return filepath.Dir(e.cfg.SplitDir)
	}
	return "."
}

// Preview describes a workbook for the prompt: sheets, their used range
// and first rows.
func Preview(path string) (string, error) {
	f, err := excelize.OpenFile(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var b strings.Builder
	for _, sh := range f.GetSheetList() {
		dim, _ := f.GetSheetDimension(sh)
		fmt.Fprintf(&b, "Sheet %q (used range %s):\n", sh, dim)
		rows, err := f.GetRows(sh)
		if err != nil {
			continue
		}
		for i, row := range rows {
			if i == 6 {
				fmt.Fprintf(&b, "  … %d more rows\n", len(rows)-6)
				break
			}
			if len(row) > 10 {
				row = append(row[:10:10], "…")
			}
			fmt.Fprintf(&b, "  row %d: %s\n", i+1, strings.Join(quoteAll(row), ", "))
		}
	}
	return b.String(), nil
}

func quoteAll(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = strconv.Quote(x)
	}
	return out
}

var codeBlock = regexp.MustCompile("(?s)```(?:python|py)?[ \t]*\n(.*?)```")

// ExtractCode returns the first fenced code block of a reply.
func ExtractCode(reply string) (string, bool) {
	m := codeBlock.FindStringSubmatch(reply)
	if m == nil || strings.TrimSpace(m[1]) == "" {
		return "", false
	}
	return m[1], true
}

const system = `You solve spreadsheet tasks by writing Python code that uses openpyxl.
The input workbook's path is in the variable INPUT_PATH and the result must be saved to OUTPUT_PATH; both are already defined, do not assign them.
Write values, not formulas, into the answer cells (formulas written by openpyxl have no computed value).
Reply with one complete program in a single fenced block: ` + "```python ... ```" + `.`

func (e *Env) prompt(it Item, preview string) string {
	sheet := ""
	if it.AnswerSheet != "" {
		sheet = " on sheet " + strconv.Quote(it.AnswerSheet)
	}
	return fmt.Sprintf("Task (%s):\n%s\n\nThe answer goes in %s%s.\n\nThe input workbook:\n%s", it.InstructionType, it.Instruction, it.AnswerPosition, sheet, preview)
}

// Episode generates code and runs it on every test case.
func (e *Env) Episode(ctx context.Context, m llm.Model, req bench.EpisodeRequest) (*bench.Episode, error) {
	var it Item
	if err := json.Unmarshal(req.Item.Raw, &it); err != nil {
		return nil, fmt.Errorf("spreadsheet item %s: %w", req.Item.ID, err)
	}
	if it.Instruction == "" || it.AnswerPosition == "" || it.SpreadsheetPath == "" {
		return nil, fmt.Errorf("spreadsheet item %s: needs instruction, answer_position and spreadsheet_path", req.Item.ID)
	}
	if _, err := ParsePositions(it.AnswerPosition); err != nil {
		return nil, fmt.Errorf("spreadsheet item %s: %w", req.Item.ID, err)
	}
	caseDir := filepath.Join(e.dataRoot(), filepath.FromSlash(it.SpreadsheetPath))
	cases, err := Cases(caseDir)
	if err != nil {
		return nil, fmt.Errorf("spreadsheet item %s: test cases: %w", req.Item.ID, err)
	}
	preview := "(no test case found)"
	if len(cases) > 0 {
		if p, err := Preview(cases[0].Input); err == nil {
			preview = p
		} else {
			return nil, fmt.Errorf("spreadsheet item %s: %s: %w", req.Item.ID, cases[0].Input, err)
		}
	}
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: system + "\n\n" + bench.SkillSection(req.Skill)},
		{Role: llm.RoleUser, Content: e.prompt(it, preview)},
	}
	gold := e.cfg.Mode == ModeMulti && req.EvalFeedback && (e.cfg.GoldFeedback == nil || *e.cfg.GoldFeedback)
	turns := 1
	if e.cfg.Mode == ModeMulti {
		turns = e.cfg.MaxTurns
	}
	var rec bench.Recorder
	var code, reason, network string
	passed, n := 0, 0
	for turn := 1; turn <= turns; turn++ {
		resp, err := rec.Chat(ctx, m, bench.TargetRequest(req, msgs))
		if err != nil {
			return rec.Failed(Name, req.Item.ID, err)
		}
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: resp.Content})
		c, ok := ExtractCode(resp.Content)
		if !ok {
			reason = "no code block in the reply"
			if turn < turns {
				msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: "Your reply has no ```python code block. Reply with the complete program in one block."})
				continue
			}
			break
		}
		code = c
		var feedback string
		passed, n, feedback, network, err = e.runCases(ctx, it, cases, code, gold)
		if err != nil {
			return rec.Failed(Name, req.Item.ID, err)
		}
		reason = feedback
		if passed == n && n > 0 {
			reason = ""
			break
		}
		if turn < turns && feedback != "" {
			msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: feedback + "\n\nFix the program and reply with the complete corrected version."})
		}
	}
	var hard, soft float64
	if n > 0 {
		soft = float64(passed) / float64(n)
		if passed == n {
			hard = 1
		}
	}
	if len(cases) == 0 {
		reason = "no test cases found in " + caseDir
	}
	msgs = append(msgs, llm.Message{Role: llm.RoleSystem, Content: fmt.Sprintf("evaluation result: %d of %d test cases passed (network denied by %s)%s", passed, n, cmp.Or(network, "-"), suffix(reason))})
	ep := &bench.Episode{Hard: hard, Soft: soft, Answer: code, FailReason: reason, TaskType: TaskType(it.InstructionType),
		TaskDescription: it.Instruction, Messages: msgs, NTurns: assistantTurns(msgs)}
	rec.Fill(ep)
	return ep, nil
}

func assistantTurns(msgs []llm.Message) int {
	n := 0
	for _, m := range msgs {
		if m.Role == llm.RoleAssistant {
			n++
		}
	}
	return n
}

func suffix(reason string) string {
	if reason == "" {
		return ""
	}
	return ": " + reason
}

// runCases executes the code on every case. feedback is what the model is
// told in multi mode: execution errors always, cell differences only when
// gold feedback is on.
func (e *Env) runCases(ctx context.Context, it Item, cases []Case, code string, gold bool) (passed, n int, feedback, network string, err error) {
	var notes []string
	for i, c := range cases {
		dir, err := os.MkdirTemp("", "skillfleet-sheet-")
		if err != nil {
			return 0, 0, "", "", err
		}
		res, out, err := e.box.Run(ctx, dir, code, c.Input)
		if err != nil {
			os.RemoveAll(dir)
			return 0, 0, "", "", err
		}
		network = res.Network
		switch {
		case res.TimedOut:
			notes = append(notes, fmt.Sprintf("case %d: the program was stopped after %s (time limit)", i+1, e.box.Limits.withDefaults().Wall))
		case res.ExitCode != 0:
			notes = append(notes, fmt.Sprintf("case %d: the program failed (exit %d):\n%s", i+1, res.ExitCode, tail(res.Output, 2000)))
		default:
			if _, serr := os.Stat(out); serr != nil {
				notes = append(notes, fmt.Sprintf("case %d: the program did not save OUTPUT_PATH", i+1))
				break
			}
			diff, cerr := Compare(out, c.Gold, it.AnswerPosition)
			if cerr != nil {
				os.RemoveAll(dir)
				return 0, 0, "", "", fmt.Errorf("case %d: %w", i+1, cerr)
			}
			if diff == "" {
				passed++
			} else if gold {
				notes = append(notes, fmt.Sprintf("case %d: wrong cells: %s", i+1, diff))
			} else {
				notes = append(notes, fmt.Sprintf("case %d: the output does not match the expected result", i+1))
			}
		}
		os.RemoveAll(dir)
	}
	return passed, len(cases), strings.Join(notes, "\n"), network, nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// AnalystNotes is SpreadsheetBench's failure taxonomy.
func (e *Env) AnalystNotes() string {
	return `SpreadsheetBench failures usually fall into: (1) formulas written instead of values (openpyxl stores no computed result, so the cell reads as empty); (2) the wrong range or sheet written, or headers overwritten; (3) values of the wrong type (numbers stored as text with units, dates as strings); (4) the code crashes on another test case's layout (hard-coded row counts, sheet names); (5) rounding or formatting changed the value. Every test case must pass for a hard score.`
}
