package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	execbackend "github.com/skillfleet/skillfleet/backends/exec"
	"github.com/skillfleet/skillfleet/pkg/bench/spreadsheet"
)

const sandboxUsage = `Usage: skillfleet sandbox check [--python PY] [--agents DIR]
       skillfleet sandbox run PROGRAM.py --input FILE.xlsx [--keep DIR] [--python PY] [--timeout D]

check  runs the containment probes (one hostile program per attack class)
       on this host exactly as SpreadsheetBench runs generated code, prints
       a table and exits non-zero if any gets through or the isolation
       (bubblewrap, user namespaces) is missing; then the agent CLIs'
       sandbox: only the model endpoint reachable, host files hidden,
       nested bubblewrap for the CLIs' own tool sandbox, and each CLI of
       --agents DIR answering --version inside.
run    runs one program as the benchmark would (INPUT_PATH, OUTPUT_PATH),
       prints its output, exit status and the limits it hit; --keep copies
       its work directory (regular files only) to DIR.`

func runSandbox(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, sandboxUsage)
		return usageError{errors.New("sandbox: want `sandbox check` or `sandbox run PROGRAM.py --input FILE.xlsx`")}
	}
	switch args[0] {
	case "check":
		return runSandboxCheck(ctx, args[1:], stdout, stderr)
	case "run":
		return runSandboxRun(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, sandboxUsage)
		return nil
	}
	fmt.Fprintln(stderr, sandboxUsage)
	return usageError{fmt.Errorf("sandbox: unknown subcommand %q", args[0])}
}

// defaultPython is the interpreter SpreadsheetBench workers are expected
// to use: Debian's, with python3-openpyxl.
func defaultPython() string {
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	return "python3"
}

func runSandboxCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	flags := newFlagSet("sandbox check", "sandbox check [--python PY]", stderr)
	python := flags.String("python", defaultPython(), "Python interpreter with openpyxl, as in the benchmark's env.python")
	agents := flags.String("agents", "", "install tree of the agent CLIs to run inside the agent sandbox (scripts/install-agents.sh's DIR; default .tools/agents when present)")
	if help, err := parse(flags, args); help || err != nil {
		return err
	}
	if *agents == "" {
		if _, err := os.Stat(filepath.Join(".tools", "agents", "node_modules", ".bin")); err == nil {
			*agents = filepath.Join(".tools", "agents")
		}
	}
	const row = "%-56s  %-18s  %-11s  %6s  %s\n"
	fmt.Fprintf(stdout, row, "PROBE", "OUTCOME", "RESULT", "TIME", "DETAIL")
	failed := 0
	results, err := spreadsheet.CheckHost(ctx, spreadsheet.Config{Python: *python}, func(r spreadsheet.ProbeResult) {
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
		fmt.Fprintf(stdout, row, r.Class, r.Outcome, verdict, r.Elapsed.Round(100*time.Millisecond), detail)
	})
	if err != nil {
		fmt.Fprintf(stdout, row, "isolation (bubblewrap, user namespaces)", "-", "MISSING", "-", err)
		return err
	}
	// The agent CLIs' sandbox (backends/exec, option sandbox: bubblewrap).
	probes, err := execbackend.CheckSandbox(ctx, *agents)
	if err != nil {
		fmt.Fprintf(stdout, row, "agent sandbox", "-", "MISSING", "-", err)
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
		fmt.Fprintf(stdout, row, p.Name, outcome, verdict, p.Elapsed.Round(100*time.Millisecond), p.Detail)
	}
	total := len(results) + len(probes)
	if failed > 0 {
		return fmt.Errorf("sandbox check: %d of %d probes failed on this host", failed, total)
	}
	fmt.Fprintf(stdout, "sandbox check: all %d probes held (isolation: bubblewrap, python %s, agent CLIs %s)\n", total, *python, cmp.Or(*agents, "not checked (none installed)"))
	return nil
}

func firstLineOf(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

func runSandboxRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	flags := newFlagSet("sandbox run", "sandbox run PROGRAM.py --input FILE.xlsx [--keep DIR] [--python PY] [--timeout D]", stderr)
	input := flags.String("input", "", "input workbook (INPUT_PATH)")
	keep := flags.String("keep", "", "copy the work directory here afterwards (must not exist or be empty)")
	python := flags.String("python", defaultPython(), "Python interpreter with openpyxl")
	timeout := flags.Duration("timeout", 60*time.Second, "wall-clock limit")
	// The program may come before or after the flags.
	var pos []string
	rest := args
	for {
		if err := flags.Parse(rest); err != nil {
			if err == flag.ErrHelp {
				return nil
			}
			return usageError{err}
		}
		if flags.NArg() == 0 {
			break
		}
		pos = append(pos, flags.Arg(0))
		rest = flags.Args()[1:]
	}
	if len(pos) != 1 {
		return usageError{errors.New("sandbox run: want exactly one PROGRAM.py")}
	}
	if *input == "" {
		return usageError{errors.New("sandbox run: --input FILE.xlsx is required")}
	}
	code, err := os.ReadFile(pos[0])
	if err != nil {
		return fmt.Errorf("sandbox run: program: %w", err)
	}
	in, err := spreadsheet.ReadRegular(*input, spreadsheet.GoldLimits.MaxFile)
	if err != nil {
		return fmt.Errorf("sandbox run: --input: %w", err)
	}
	if *keep != "" {
		if ents, err := os.ReadDir(*keep); err == nil && len(ents) > 0 {
			return usageError{fmt.Errorf("sandbox run: --keep %s is not empty", *keep)}
		}
	}
	box := &spreadsheet.Sandbox{Python: *python, Limits: spreadsheet.Limits{Wall: *timeout}}
	if err := box.Ready(); err != nil {
		return err
	}
	res, err := box.Run(ctx, string(code), in, spreadsheet.RunOptions{KeepAll: *keep != ""})
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, res.Output)
	if res.Output != "" && !strings.HasSuffix(res.Output, "\n") {
		fmt.Fprintln(stdout)
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
	fmt.Fprintf(stdout, "--- %s in %s; limits hit: %s; OUTPUT_PATH: %s; isolation: %s\n", status, res.Elapsed.Round(time.Millisecond), limit, out, res.Isolation)
	if *keep != "" {
		n, skipped, err := keepFiles(*keep, res)
		if err != nil {
			return fmt.Errorf("sandbox run: --keep: %w", err)
		}
		fmt.Fprintf(stdout, "--- kept %d files in %s", n, *keep)
		if len(skipped) > 0 {
			fmt.Fprintf(stdout, " (not copied: %s)", strings.Join(skipped, ", "))
		}
		fmt.Fprintln(stdout)
	}
	if res.Failed() {
		return codedError{exitError, fmt.Errorf("the program did not run to a clean exit (%s)", status)}
	}
	return nil
}

// keepFiles writes the collected work directory under dir: directories
// and regular files only, never following a link.
func keepFiles(dir string, res spreadsheet.RunResult) (int, []string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, nil, err
	}
	names := make([]string, 0, len(res.Files))
	for n := range res.Files {
		names = append(names, n)
	}
	sort.Strings(names) // parents before children
	var skipped []string
	n := 0
	for _, name := range names {
		e := res.Files[name]
		p := filepath.Join(dir, filepath.FromSlash(name))
		if !strings.HasPrefix(p, filepath.Clean(dir)+string(filepath.Separator)) {
			skipped = append(skipped, name+" (outside)")
			continue
		}
		switch {
		case e.Type == "dir":
			if err := os.Mkdir(p, 0o755); err != nil && !os.IsExist(err) {
				return n, skipped, err
			}
		case e.Type == "file" && !e.TooLarge:
			fd, err := syscall.Open(p, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o644)
			if err != nil {
				return n, skipped, &os.PathError{Op: "create", Path: p, Err: err}
			}
			f := os.NewFile(uintptr(fd), p)
			_, werr := f.Write(e.Data)
			if cerr := f.Close(); werr == nil {
				werr = cerr
			}
			if werr != nil {
				return n, skipped, werr
			}
			n++
		case e.TooLarge:
			skipped = append(skipped, name+" (too large)")
		default:
			skipped = append(skipped, name+" ("+e.Type+")")
		}
	}
	return n, skipped, nil
}
