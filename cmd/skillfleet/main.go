// Command skillfleet trains the skill document of a frozen LLM agent
// (SkillOpt's method) on a fleet of workers. Run `skillfleet help`.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/pkg/bench/spreadsheet"
	"github.com/skillfleet/skillfleet/pkg/sandbox"
	"github.com/skillfleet/skillfleet/pkg/telemetry"
)

// Exit codes.
const (
	exitOK        = 0
	exitError     = 1
	exitUsage     = 2
	exitBudget    = 3
	exitStopped   = 4
	exitNoImprove = 5
	exitCoverage  = 6
	exitLocked    = 7
)

type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// exec runs the command until it ends or the process is interrupted, and
// returns its exit code.
func (c command) exec(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stopProfile := telemetry.StartCPUProfile(stderr)
	defer stopProfile()
	defer telemetry.StartHeapProfiles(stderr)()
	return exitCode(c.run(ctx, args, stdout, stderr), stderr)
}

func commands() []command {
	return []command{
		{"train", "train a skill (all-in-one unless --nats is given)", runTrain},
		{"coordinator", "run the training loop against external NATS and workers", runCoordinator},
		{"worker", "run a worker that executes tasks", runWorker},
		{"eval", "score a skill on a split (and the baselines with --baseline)", runEval},
		{"campaign", "run a matrix of training runs (configs x models x harnesses x seeds) on one fleet", runCampaign},
		{"sleep", "improve your agent's skill overnight from your own sessions (sleep run|dry-run|status|harvest|adopt|schedule|unschedule)", runSleep},
		{"mcp", "serve the sleep commands as MCP tools on stdio, for Copilot, Cursor, Claude Code and Codex (sleep_status, sleep_run, ...)", runMCP},
		{"sim-llm", "serve the simulated model over the OpenAI wire format (a test double)", runSimLLM},
		{"report", "summarise a run directory", runReport},
		{"inspect", "list, filter and show a run's per-item results and trajectories, or export them as JSONL", runInspect},
		{"ui", "serve the dashboard for run and campaign directories (ui DIR...)", runUI},
		{"data", "check a split directory (data check DIR)", runData},
		{"envserver", "serve an interactive environment (built-in text game, or an ALFWorld bridge)", runEnvServer},
		{"loadtest", "dispatch no-op tasks through the queue and measure (operators, tests)", runLoadtest},
		{"healthcheck", "GET a health URL; exit 0 on a 2xx answer (container healthchecks)", runHealthcheck},
		{"sandbox", "check this host's isolation for generated code (sandbox check), or run one program in it (sandbox run)", runSandbox},
		{"migrate", "bring run dirs of an earlier release to this release's run-dir format", runMigrate},
		{"version", "print the version, commit, and the run-dir and wire formats", runVersion},
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "skillfleet trains the Markdown skill document of a frozen LLM agent, distributed over workers.")
	fmt.Fprintln(w, "\nUsage: skillfleet <command> [flags]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun `skillfleet <command> --help` for a command's flags.")
	fmt.Fprintln(w, "Exit codes: 0 ok, 1 error, 2 bad usage or config, 3 budget reached, 4 stopped on request,")
	fmt.Fprintln(w, "5 --assert-improves failed, 6 too few items scored (infrastructure failures),")
	fmt.Fprintln(w, "7 the run dir is in use by another coordinator, 10+N a campaign in which N cells failed.")
}

func main() {
	// This executable is also the sandbox's network forwarder and the
	// spreadsheet scorer's child: both start it again with their
	// environment variable set.
	if code, ok := sandbox.RunForwarder(); ok {
		os.Exit(code)
	}
	if code, ok := spreadsheet.RunScorerChild(); ok {
		os.Exit(code)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.exec(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "skillfleet: unknown command %q\n\n", args[0])
	usage(stderr)
	return exitUsage
}

// usageError marks errors in how the command was called.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// exitError carries a specific exit code.
type codedError struct {
	code int
	err  error
}

func (c codedError) Error() string { return c.err.Error() }
func (c codedError) Unwrap() error { return c.err }

func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	var ce codedError
	var ue usageError
	switch {
	case errors.As(err, &ce):
		fmt.Fprintln(stderr, "skillfleet:", err)
		return ce.code
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "skillfleet:", err)
		return exitUsage
	case errors.Is(err, coordinator.ErrLocked):
		fmt.Fprintln(stderr, "skillfleet:", err)
		return exitLocked
	}
	fmt.Fprintln(stderr, "skillfleet:", err)
	return exitError
}

// newLogger returns a logger writing text (or JSON) to w at level; records
// written with a context that carries a span get trace_id and span_id
// (see telemetry.LogHandler), so a log line leads to its trace.
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, usageError{fmt.Errorf("--log-level %q: want debug, info, warn or error", level)}
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "json":
		return slog.New(telemetry.NewLogHandler(slog.NewJSONHandler(w, opts))), nil
	case "text", "":
		return slog.New(telemetry.NewLogHandler(slog.NewTextHandler(w, opts))), nil
	default:
		return nil, usageError{fmt.Errorf("--log-format %q: want text or json", format)}
	}
}
