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
	// Mode is single (one code-generation call), multi (rounds with
	// execution feedback) or react (a tool loop: run Python against the
	// input, then submit a program). Default single.
	Mode string `json:"mode"`
	// DataRoot holds the items' spreadsheet_path directories (default: the
	// split dir's parent, else the split dir itself, as in ratio mode where
	// split_dir is the data file's directory). A relative data_root is
	// looked up under the split dir, then the working directory.
	DataRoot string `json:"data_root"`
	// Python is the interpreter (default python3); it needs openpyxl.
	Python string `json:"python"`
	// GoldFeedback gives multi-mode training rollouts (evaluation feedback
	// on) cell-level correctness against the gold workbook, as SkillOpt
	// does. Default true. Without it the model hears only of execution
	// errors, and a program that runs cleanly ends the episode.
	GoldFeedback *bool `json:"gold_feedback"`
	// CPUSeconds and MemoryMB limit each execution (defaults 30, 1024).
	CPUSeconds int `json:"cpu_seconds"`
	MemoryMB   int `json:"memory_mb"`
	// WorkMB sizes each run's work directory (a tmpfs; default 128).
	WorkMB int `json:"work_mb"`
	// MaxOutputMB and MaxUnzipMB bound the output workbook the scorer
	// reads: its size and its parts' uncompressed size (defaults 32, 32).
	MaxOutputMB int `json:"max_output_mb"`
	MaxUnzipMB  int `json:"max_unzip_mb"`
	// CompareSeconds bounds one comparison (default 30), run in a child
	// process that is killed at the limit.
	CompareSeconds int `json:"compare_seconds"`
	// UnsafeNoSandbox runs generated code WITHOUT kernel isolation (when
	// bubblewrap or user namespaces are unavailable): an explicit opt-in,
	// logged. Never use it with a model you do not trust.
	UnsafeNoSandbox bool `json:"unsafe_no_sandbox"`
}

// Item is a SpreadsheetBench item.
type Item struct {
	ID              ItemID `json:"id"`
	Instruction     string `json:"instruction"`
	InstructionType string `json:"instruction_type"`
	AnswerPosition  string `json:"answer_position"`
	AnswerSheet     string `json:"answer_sheet,omitempty"`
	SpreadsheetPath string `json:"spreadsheet_path"`
}

// ItemID is an item id: SpreadsheetBench writes some as JSON numbers.
type ItemID string

// UnmarshalJSON accepts a string or a number.
func (id *ItemID) UnmarshalJSON(b []byte) error {
	var n json.Number
	if err := json.Unmarshal(b, &n); err == nil {
		*id = ItemID(n)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("id: want a string or a number, got %s", b)
	}
	*id = ItemID(s)
	return nil
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
	cfg    Config
	box    *Sandbox
	scorer Scorer
}

var _ bench.Env = (*Env)(nil)

// New validates the config and returns the environment.
func New(cfg Config) (*Env, error) {
	cfg.Mode = cmp.Or(cfg.Mode, ModeSingle)
	if cfg.Mode != ModeSingle && cfg.Mode != ModeMulti && cfg.Mode != ModeReact {
		return nil, fmt.Errorf("env.mode: %q is not single, multi or react", cfg.Mode)
	}
	if cfg.Mode == ModeMulti && cfg.MaxTurns <= 0 {
		cfg.MaxTurns = 5
	}
	if cfg.Mode == ModeReact && cfg.MaxTurns <= 0 {
		cfg.MaxTurns = reactMaxTurns
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"cpu_seconds", cfg.CPUSeconds}, {"memory_mb", cfg.MemoryMB}, {"work_mb", cfg.WorkMB}, {"max_output_mb", cfg.MaxOutputMB}, {"max_unzip_mb", cfg.MaxUnzipMB}, {"compare_seconds", cfg.CompareSeconds}} {
		if f.v < 0 {
			return nil, fmt.Errorf("env.%s: %d is negative", f.name, f.v)
		}
	}
	box := &Sandbox{Python: cmp.Or(cfg.Python, "python3"), Unsafe: cfg.UnsafeNoSandbox, Limits: Limits{
		Wall: cfg.Timeout(60 * time.Second), CPU: cfg.CPUSeconds, MemoryMB: cfg.MemoryMB, WorkMB: cfg.WorkMB, OutputMB: cfg.MaxOutputMB}}
	// No silent fallback: without the isolation the benchmark does not start.
	if err := box.Ready(); err != nil {
		return nil, fmt.Errorf("spreadsheet: cannot run generated code safely: %w", err)
	}
	lim := DefaultOutputLimits
	if cfg.MaxOutputMB > 0 {
		lim.MaxFile = int64(cfg.MaxOutputMB) << 20
	}
	if cfg.MaxUnzipMB > 0 {
		lim.MaxUnzip = int64(cfg.MaxUnzipMB) << 20
	}
	return &Env{cfg: cfg, box: box, scorer: Scorer{Limits: lim, Timeout: time.Duration(cfg.CompareSeconds) * time.Second}}, nil
}

// Name returns "spreadsheet".
func (e *Env) Name() string { return Name }

// caseDir finds an item's test-case directory under the data root
// candidates (see Config.DataRoot).
func (e *Env) caseDir(spreadsheetPath string) (string, error) {
	var roots []string
	switch root, split := e.cfg.DataRoot, e.cfg.SplitDir; {
	case root != "" && (filepath.IsAbs(root) || split == ""):
		roots = []string{root}
	case root != "":
		roots = []string{filepath.Join(split, root), root}
	case split != "":
		roots = []string{filepath.Dir(split), split}
	default:
		roots = []string{"."}
	}
	for _, r := range roots {
		d := filepath.Join(r, filepath.FromSlash(spreadsheetPath))
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d, nil
		}
	}
	return "", fmt.Errorf("test cases: no directory %s under %s", spreadsheetPath, strings.Join(roots, " or "))
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
		rows, err := f.GetRows(sh)
		if err != nil {
			return "", fmt.Errorf("sheet %q: %w", sh, err)
		}
		fmt.Fprintf(&b, "Sheet %q (used range %s):\n", sh, usedRange(rows))
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
		if b.Len() > previewMax {
			return strings.ToValidUTF8(b.String()[:previewMax], "") + "\n… (preview cut)\n", nil
		}
	}
	return b.String(), nil
}

// usedRange is the range from A1 to the last row and column holding a
// value ("empty" when none does).
func usedRange(rows [][]string) string {
	lastRow, lastCol := 0, 0
	for i, row := range rows {
		for j, v := range row {
			if v != "" {
				lastRow, lastCol = i+1, max(lastCol, j+1)
			}
		}
	}
	if lastRow == 0 {
		return "empty"
	}
	end, _ := excelize.CoordinatesToCellName(lastCol, lastRow)
	return "A1:" + end
}

// previewMax bounds the preview's length; previewCell a cell's.
const previewMax, previewCell = 6000, 80

func quoteAll(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		if r := []rune(x); len(r) > previewCell {
			x = string(r[:previewCell]) + "…"
		}
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
	for _, f := range []struct{ name, val string }{{"instruction", it.Instruction}, {"answer_position", it.AnswerPosition}, {"spreadsheet_path", it.SpreadsheetPath}} {
		if strings.TrimSpace(f.val) == "" {
			return nil, fmt.Errorf("spreadsheet item %s: field %s is missing or empty", req.Item.ID, f.name)
		}
	}
	if _, err := parsePositions(it.AnswerPosition); err != nil {
		return nil, fmt.Errorf("spreadsheet item %s: %w", req.Item.ID, err)
	}
	caseDir, err := e.caseDir(it.SpreadsheetPath)
	if err != nil {
		return nil, fmt.Errorf("spreadsheet item %s: %w", req.Item.ID, err)
	}
	cases, err := Cases(caseDir)
	if err != nil {
		return nil, fmt.Errorf("spreadsheet item %s: test cases: %w", req.Item.ID, err)
	}
	ep := &bench.Episode{TaskType: TaskType(it.InstructionType), TaskDescription: it.Instruction}
	if len(cases) == 0 {
		// Nothing to run the code on scores 0 (as SkillOpt); no call is spent.
		ep.FailReason = "no test cases found in " + caseDir
		ep.Messages = []llm.Message{{Role: llm.RoleSystem, Content: "evaluation result: 0 of 0 test cases: " + ep.FailReason}}
		return ep, nil
	}
	preview, err := Preview(cases[0].Input)
	if err != nil {
		return nil, fmt.Errorf("spreadsheet item %s: %s: %w", req.Item.ID, cases[0].Input, err)
	}
	if e.cfg.Mode == ModeReact {
		return e.reactEpisode(ctx, m, req, it, cases, preview, ep)
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
	var code, reason, isolation string
	passed, ran := 0, false
	for turn := 1; turn <= turns; turn++ {
		resp, err := rec.Chat(ctx, m, bench.TargetRequest(req, msgs))
		if err != nil {
			return rec.Failed(Name, req.Item.ID, err)
		}
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: resp.Content})
		c, ok := ExtractCode(resp.Content)
		if !ok {
			if ran {
				// The last program that ran keeps its score.
				reason = "no code block in the last reply; the previous program's result: " + reason
			} else {
				reason = "no code block in the reply"
			}
			if turn < turns {
				msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: "Your reply has no ```python code block. Reply with the complete program in one block."})
				continue
			}
			break
		}
		code, ran = c, true
		run, err := e.runCases(ctx, it, cases, code, gold)
		if err != nil {
			return rec.Failed(Name, req.Item.ID, err)
		}
		passed, reason, isolation = run.passed, run.detail, run.isolation
		if passed == len(cases) {
			reason = ""
			break
		}
		if run.feedback == "" {
			// Every case ran cleanly and the model may not learn which
			// outputs are wrong: there is nothing to fix.
			break
		}
		if turn < turns {
			msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: run.feedback + "\n\nFix the program and reply with the complete corrected version."})
		}
	}
	return finishEpisode(ep, &rec, msgs, code, reason, isolation, passed, len(cases)), nil
}

// finishEpisode scores an episode from its passing cases and closes its
// conversation with the evaluation result.
func finishEpisode(ep *bench.Episode, rec *bench.Recorder, msgs []llm.Message, code, reason, isolation string, passed, cases int) *bench.Episode {
	ep.Soft = float64(passed) / float64(cases)
	if passed == cases {
		ep.Hard = 1
	}
	sandbox := ""
	if isolation != "" {
		sandbox = fmt.Sprintf(" (sandbox: %s)", isolation)
	}
	msgs = append(msgs, llm.Message{Role: llm.RoleSystem, Content: fmt.Sprintf("evaluation result: %d of %d test cases passed%s%s", passed, cases, sandbox, suffix(reason))})
	ep.Answer, ep.FailReason, ep.Messages, ep.NTurns = code, reason, msgs, assistantTurns(msgs)
	rec.Fill(ep)
	return ep
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

// caseRun is one program's outcome over every test case.
type caseRun struct {
	passed int
	// feedback is what the model is told in multi mode: execution errors
	// always, wrong cells (expected and got) only with gold feedback.
	feedback string
	// detail is every problem, wrong cells included: the failure reason.
	detail    string
	isolation string
}

// CaseResult is one test case's outcome.
type CaseResult struct {
	Outcome Outcome
	// Detail says what happened (wrong cells include the gold values).
	Detail string
	Run    RunResult
	Score  ScoreStats // the comparison's cost (zero when none ran)
}

// RunCase runs code on one test case and scores what it leaves at
// OUTPUT_PATH against the case's gold workbook (which the program never
// sees). An error is the host's problem (input or gold unreadable,
// sandbox broken), never the program's.
func (e *Env) RunCase(ctx context.Context, code string, c Case, positions string) (CaseResult, error) {
	input, err := ReadRegular(c.Input, GoldLimits.MaxFile)
	if err != nil {
		return CaseResult{}, fmt.Errorf("input workbook: %w", err)
	}
	res, err := e.box.Run(ctx, code, input, RunOptions{})
	if err != nil {
		return CaseResult{}, err
	}
	cr := CaseResult{Run: res}
	switch {
	case res.TimedOut:
		cr.Outcome, cr.Detail = OutcomeTimeout, fmt.Sprintf("the program was stopped after %s (time limit)", e.box.Limits.withDefaults().Wall)
	case res.ExitCode != 0:
		cr.Outcome, cr.Detail = OutcomeError, fmt.Sprintf("the program failed (exit %d):\n%s", res.ExitCode, tail(res.Output, 2000))
	default:
		cr.Outcome, cr.Detail, cr.Score, err = e.scorer.Score(ctx, res.Workbook, c.Gold, positions)
		if err != nil {
			return cr, err
		}
	}
	return cr, nil
}

// runCases executes the code on every case, each in a fresh sandbox.
func (e *Env) runCases(ctx context.Context, it Item, cases []Case, code string, gold bool) (caseRun, error) {
	var run caseRun
	var feedback, detail []string
	for i, c := range cases {
		cr, err := e.RunCase(ctx, code, c, it.AnswerPosition)
		if err != nil {
			return run, fmt.Errorf("case %d (%s): %w", i+1, c.Gold, err)
		}
		run.isolation = cr.Run.Isolation
		if cr.Outcome == OutcomePass {
			run.passed++
			continue
		}
		s := fmt.Sprintf("case %d: %s", i+1, cr.Detail)
		if cr.Outcome == OutcomeWrong {
			s = fmt.Sprintf("case %d: wrong cells: %s", i+1, cr.Detail)
		}
		detail = append(detail, s)
		// Only wrong cells tell of the gold.
		if cr.Outcome != OutcomeWrong || gold {
			feedback = append(feedback, s)
		}
	}
	run.feedback, run.detail = strings.Join(feedback, "\n"), strings.Join(detail, "\n")
	return run, nil
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
