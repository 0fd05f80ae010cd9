// Package isolation is `skillfleet sandbox`: it checks this host's
// isolation for generated code (SpreadsheetBench's sandbox) and for the
// agent CLIs (backends/exec's), and runs one program as the benchmark
// would.
package isolation

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	execbackend "github.com/skillfleet/skillfleet/backends/exec"
	"github.com/skillfleet/skillfleet/pkg/bench/spreadsheet"
	"github.com/skillfleet/skillfleet/pkg/sandbox"
)

// DefaultPython is the interpreter SpreadsheetBench workers are expected
// to use: Debian's, with python3-openpyxl.
func DefaultPython() string {
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	return "python3"
}

// DefaultAgents is the agent CLIs' install tree [Check] uses when none is
// given: .tools/agents (scripts/install-agents.sh's default) when it
// holds installed CLIs, else "" (none).
func DefaultAgents() string {
	dir := filepath.Join(".tools", "agents")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".bin")); err != nil {
		return ""
	}
	return dir
}

// Check runs the containment probes (one hostile program per attack
// class) on this host exactly as SpreadsheetBench runs generated code,
// then the agent CLIs' sandbox probes (Agents is the install tree of the
// CLIs to run inside it; "" checks none), and writes a table to w. It
// fails when a probe gets through or the isolation is missing.
func Check(ctx context.Context, c CheckConfig, w io.Writer) error {
	const row = "%-56s  %-18s  %-11s  %6s  %s\n"
	fmt.Fprintf(w, row, "PROBE", "OUTCOME", "RESULT", "TIME", "DETAIL")
	failed := 0
	results, err := spreadsheet.CheckHost(ctx, spreadsheet.Config{Python: c.Python}, func(r spreadsheet.ProbeResult) {
		verdict := "held"
		if !r.Held {
			verdict, failed = "GOT THROUGH", failed+1
			if strings.HasPrefix(r.Class, "control") {
				verdict = "FAILED"
			}
		}
		detail := r.Why
		if detail == "" {
			detail = firstLineOf(r.Case.Detail)
		}
		fmt.Fprintf(w, row, r.Class, r.Outcome, verdict, r.Elapsed.Round(100*time.Millisecond), detail)
	})
	if err != nil {
		fmt.Fprintf(w, row, "isolation (bubblewrap, user namespaces)", "-", "MISSING", "-", err)
		return err
	}
	// The agent CLIs' sandbox (backends/exec, option sandbox: bubblewrap).
	probes, err := execbackend.CheckSandbox(ctx, c.Agents)
	if err != nil {
		fmt.Fprintf(w, row, "agent sandbox", "-", "MISSING", "-", err)
		return err
	}
	for _, p := range probes {
		outcome, verdict := "blocked", "held"
		if p.Control {
			outcome = "works"
		}
		if !p.Held {
			failed++
			if outcome, verdict = "GOT THROUGH", "GOT THROUGH"; p.Control {
				outcome, verdict = "broken", "FAILED"
			}
		}
		fmt.Fprintf(w, row, p.Name, outcome, verdict, p.Elapsed.Round(100*time.Millisecond), p.Detail)
	}
	total := len(results) + len(probes)
	if failed > 0 {
		return fmt.Errorf("sandbox check: %d of %d probes failed on this host", failed, total)
	}
	fmt.Fprintf(w, "sandbox check: all %d probes held (isolation: bubblewrap, python %s, agent CLIs %s)\n", total, c.Python, cmp.Or(c.Agents, "not checked (none installed)"))
	return nil
}

func firstLineOf(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

// CheckConfig is what [Check] checks with.
type CheckConfig struct{ Python, Agents string }

// Program is one program [Run] runs.
type Program struct {
	// Program is the Python file; Input the workbook it gets as INPUT_PATH.
	Program, Input string
	// Keep, when set, is where the work directory is copied afterwards
	// (regular files only).
	Keep    string
	Python  string
	Timeout time.Duration
}

// Run runs r's program as the benchmark would (INPUT_PATH, OUTPUT_PATH)
// and writes its output, exit status and the limits it hit to w. A
// program that does not exit cleanly is an error.
func Run(ctx context.Context, r Program, w io.Writer) error {
	code, err := os.ReadFile(r.Program)
	if err != nil {
		return fmt.Errorf("sandbox run: program: %w", err)
	}
	in, err := spreadsheet.ReadRegular(r.Input, spreadsheet.GoldLimits.MaxFile)
	if err != nil {
		return fmt.Errorf("sandbox run: --input: %w", err)
	}
	box := &spreadsheet.Sandbox{Python: r.Python, Limits: spreadsheet.Limits{Wall: r.Timeout}}
	if err := box.Ready(); err != nil {
		return err
	}
	res, err := box.Run(ctx, string(code), in, spreadsheet.RunOptions{KeepAll: r.Keep != ""})
	if err != nil {
		return err
	}
	fmt.Fprint(w, res.Output)
	if res.Output != "" && !strings.HasSuffix(res.Output, "\n") {
		fmt.Fprintln(w)
	}
	status := fmt.Sprintf("exit %d", res.ExitCode)
	if res.TimedOut {
		status = "stopped at the time limit"
	}
	limit := res.Limit
	if limit == "" {
		limit = "none"
	}
	out := "none"
	if w := res.Workbook; w != nil {
		out = fmt.Sprintf("%s, %d bytes", w.Type, w.Size)
	}
	fmt.Fprintf(w, "--- %s in %s; limits hit: %s; OUTPUT_PATH: %s; isolation: %s\n", status, res.Elapsed.Round(time.Millisecond), limit, out, res.Isolation)
	if r.Keep != "" {
		n, skipped, err := sandbox.WriteEntries(r.Keep, res.Files)
		if err != nil {
			return fmt.Errorf("sandbox run: --keep: %w", err)
		}
		fmt.Fprintf(w, "--- kept %d files in %s", n, r.Keep)
		if len(skipped) > 0 {
			fmt.Fprintf(w, " (not copied: %s)", strings.Join(skipped, ", "))
		}
		fmt.Fprintln(w)
	}
	if res.Failed() {
		return fmt.Errorf("the program did not run to a clean exit (%s)", status)
	}
	return nil
}
