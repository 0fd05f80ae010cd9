package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/skillfleet/skillfleet/internal/isolation"
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

func runSandboxCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	flags := newFlagSet("sandbox check", "sandbox check [--python PY]", stderr)
	python := flags.String("python", isolation.DefaultPython(), "Python interpreter with openpyxl, as in the benchmark's env.python")
	agents := flags.String("agents", "", "install tree of the agent CLIs to run inside the agent sandbox (scripts/install-agents.sh's DIR; default .tools/agents when present)")
	if help, err := parse(flags, args); help || err != nil {
		return err
	}
	if *agents == "" {
		*agents = isolation.DefaultAgents()
	}
	return isolation.Check(ctx, isolation.CheckConfig{Python: *python, Agents: *agents}, stdout)
}

func runSandboxRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	flags := newFlagSet("sandbox run", "sandbox run PROGRAM.py --input FILE.xlsx [--keep DIR] [--python PY] [--timeout D]", stderr)
	input := flags.String("input", "", "input workbook (INPUT_PATH)")
	keep := flags.String("keep", "", "copy the work directory here afterwards (must not exist or be empty)")
	python := flags.String("python", isolation.DefaultPython(), "Python interpreter with openpyxl")
	timeout := flags.Duration("timeout", 60*time.Second, "wall-clock limit")
	pos, help, err := parseInterspersed(flags, args)
	if help || err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{errors.New("sandbox run: want exactly one PROGRAM.py")}
	}
	if *input == "" {
		return usageError{errors.New("sandbox run: --input FILE.xlsx is required")}
	}
	if *keep != "" {
		if ents, err := os.ReadDir(*keep); err == nil && len(ents) > 0 {
			return usageError{fmt.Errorf("sandbox run: --keep %s is not empty", *keep)}
		}
	}
	return isolation.Run(ctx, isolation.Program{Program: pos[0], Input: *input, Keep: *keep, Python: *python, Timeout: *timeout}, stdout)
}
