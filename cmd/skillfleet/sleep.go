package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/skillfleet/skillfleet/backends"
	sleepdrv "github.com/skillfleet/skillfleet/coordinator/sleep"
	"github.com/skillfleet/skillfleet/internal/fleet"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/nightly"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

const sleepUsage = `skillfleet sleep improves your agent's skill overnight from your own coding sessions.

Usage: skillfleet sleep <command> [flags]

Commands:
  run         harvest, mine, replay, consolidate, and stage a proposal (a night)
  dry-run     the same night without staging or saving state (it still spends calls)
  status      nights so far, the latest staged proposal, adoptions, the schedule
  harvest     harvest and mine into a tasks file you can review (--output)
  adopt       install the latest (or --staging) accepted proposal; --undo reverts
  transfer    measure the latest (or --staging) proposal's skill on another model (--backend, --model)
  sweep       nights over a matrix of personas × settings × seeds, with a scorecard (--file, --output)
  schedule    run a night every day (crontab line, systemd user timer, launchd agent or Task Scheduler task)
  unschedule  remove it
  install     install skillfleet sleep into an agent: claude-code, codex, cursor, copilot, pi or opencode
  uninstall   remove what install put there

Run ` + "`skillfleet sleep <command> --help`" + ` for a command's flags. docs/sleep.md has examples.`

// sleepRunSynopsis heads `sleep run --help`: a night on an API model, and
// one that replays through the Codex CLI against the simulated model.
const sleepRunSynopsis = `sleep %s [flags]

  skillfleet sleep %[1]s --backend anthropic --model claude-sonnet-4-5
  skillfleet sleep %[1]s --persona researcher --backend sim --model sim-target --sim-llm \
      --target-backend codex_exec --codex-exec-path .tools/agents/node_modules/.bin/codex --max-tokens 0 --assert-improves

--target-backend codex_exec or claude_code_exec replays through that agent CLI
(sandboxed; --target-option sandbox=none opts out), --backend stays the optimizer's.
--backend handoff calls no model: each call is a prompt your agent session answers
(exit 3 with --handoff-dir's pending.json; write the answers, run the same command again).`

func runSleep(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runSleepOn(ctx, args, nil, stdout, stderr)
}

// runSleepOn is runSleep whose nights replay on shared, when set, instead
// of a fleet of their own.
func runSleepOn(ctx context.Context, args []string, shared *sleepdrv.SharedFleet, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(stdout, sleepUsage)
		if len(args) == 0 {
			return usageError{errors.New("sleep: a command is required")}
		}
		return nil
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "install", "uninstall", "record":
		return sleepAgentCommand(cmd, rest, stdout, stderr)
	case "sweep":
		return sleepSweep(ctx, rest, stdout, stderr)
	case "run", "dry-run", "status", "harvest", "adopt", "transfer", "schedule", "unschedule":
	default:
		return usageError{fmt.Errorf("sleep: unknown command %q (run, dry-run, status, harvest, adopt, transfer, sweep, schedule, unschedule, install, uninstall)", cmd)}
	}
	var o sleepdrv.Options
	night := cmd == "run" || cmd == "dry-run"
	synopsis := map[string]string{"status": "sleep status [--project DIR] [--state-dir DIR]", "harvest": "sleep harvest --output tasks.json [flags]",
		"transfer": "sleep transfer --backend B --model M [--staging DIR] [flags]",
		"adopt":    "sleep adopt [--staging DIR | --skill-root DIR --skill NAME | --skill-root DIR --all-skills] [--undo] [flags]", "schedule": "sleep schedule [--at HH:MM] [--scheduler cron|systemd|launchd|schtasks] [flags]",
		"unschedule": "sleep unschedule [--scheduler cron|systemd|launchd|schtasks] [flags]"}[cmd]
	if night {
		synopsis = fmt.Sprintf(sleepRunSynopsis, cmd)
	}
	fs := newFlagSet("sleep "+cmd, synopsis, stderr)
	o.Register(fs, night)
	var output, staging string
	var undo, schedAdopt, allSkills bool
	var skillName string
	var roots multiFlag
	var so nightly.ScheduleOptions
	switch cmd {
	case "harvest":
		fs.StringVar(&output, "output", "", "write the mined tasks here, with \"reviewed\": false (required)")
	case "transfer":
		fs.StringVar(&staging, "staging", "", "staging dir whose proposal to measure (default: the project's latest)")
	case "adopt":
		fs.StringVar(&staging, "staging", "", "staging dir to adopt (default: the project's latest)")
		fs.BoolVar(&undo, "undo", false, "revert the latest adoption (or --staging's)")
		fs.Var(&roots, "allow-root", "another directory adopt may write under (repeatable)")
		fs.StringVar(&skillName, "skill", "", "with --skill-root: adopt (or --undo) this skill's latest proposal only")
		fs.BoolVar(&allSkills, "all-skills", false, "with --skill-root: adopt (or --undo) every skill's latest proposal, each on its own")
	case "schedule", "unschedule":
		fs.StringVar(&so.Time, "at", "03:17", "daily time, HH:MM local")
		fs.StringVar(&so.Kind, "scheduler", "cron", "cron (a line in your crontab), systemd (a user timer), launchd (a macOS LaunchAgent) or schtasks (a Windows Task Scheduler task)")
		fs.StringVar(&so.Crontab, "crontab", "crontab", "the crontab program")
		fs.StringVar(&so.SystemdDir, "systemd-dir", "", "user unit directory (default ~/.config/systemd/user)")
		fs.StringVar(&so.Systemctl, "systemctl", "systemctl", "the systemctl program (\"-\" = only write the unit files)")
		fs.StringVar(&so.LaunchAgentsDir, "launch-agents-dir", "", "launchd agent directory (default ~/Library/LaunchAgents)")
		fs.StringVar(&so.Launchctl, "launchctl", "launchctl", "the launchctl program (\"-\" = only write the plist)")
		fs.StringVar(&so.TaskDir, "task-dir", "", "where the Task Scheduler definition is written (default the user config dir's skillfleet/)")
		fs.StringVar(&so.Schtasks, "schtasks", "schtasks", "the schtasks program (\"-\" = only write the task XML)")
		fs.BoolVar(&schedAdopt, "auto-adopt", false, "the scheduled night adopts what it accepts")
		if cmd == "schedule" {
			o.RegisterTarget(fs)
		}
	}
	if help, err := parse(fs, args[1:]); help || err != nil {
		return err
	}
	n, persona, err := o.Resolve(fs)
	if err != nil {
		return sleepError(err)
	}
	// The optimizer role's model, built in this process under the
	// command's context.
	newModel := func(spec *pb.ModelSpec) (llm.Model, error) {
		return fleet.ModelFactory(nil, backends.NewLimiter(nil, nil))(ctx, spec)
	}
	switch cmd {
	case "status":
		err = sleepdrv.StatusCommand(n, o.JSON, stdout)
	case "harvest":
		err = sleepdrv.HarvestCommand(ctx, n, output, newModel, stdout)
	case "transfer":
		err = sleepdrv.TransferCommand(ctx, n, staging, newModel, o.JSON, stdout)
	case "adopt":
		err = sleepdrv.AdoptSkills(n, staging, undo, roots, skillName, allSkills, stdout)
	case "schedule", "unschedule":
		err = o.ScheduleCommand(n, cmd == "unschedule", schedAdopt, so, stdout)
	default:
		log, lerr := newLogger(stderr, "text", o.LogLevel)
		if lerr != nil {
			return lerr
		}
		n.DryRun = cmd == "dry-run"
		err = sleepdrv.RunCommand(ctx, &o, n, persona, sleepdrv.CommandDeps{NewModel: newModel,
			Run: trainOpts{logLevel: o.LogLevel}.runDeps(log), Logger: log, Shared: shared}, stdout)
	}
	return sleepError(err)
}

// sleepSweep is `sleep sweep`: the file's nights, each a `sleep run` in
// its own sandbox under --output, up to --parallel at once on one fleet
// (an embedded NATS server and --workers in-process workers), then the
// scorecard.
func sleepSweep(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sleep sweep", "sleep sweep --file sweep.yaml --output DIR [--parallel N]", stderr)
	file := fs.String("file", "", "the sweep: personas, seeds, backend, model and named settings (required; configs/sleep/sweep.yaml)")
	out := fs.String("output", "", "directory for the cells' sandboxes and scorecard.md / .html (required)")
	parallel := fs.Int("parallel", 0, "nights run at once on the sweep's fleet (0: one per 4 of the fleet's replay slots, --workers × --concurrency)")
	workers := fs.Int("workers", 2, "in-process workers of the sweep's fleet")
	conc := fs.Int("concurrency", 8, "replays each worker runs at once")
	logLevel := fs.String("log-level", "warn", "the sweep fleet's log level: debug, info, warn, error")
	if help, err := parse(fs, args); help || err != nil {
		return err
	}
	if *file == "" || *out == "" {
		return usageError{errors.New("sleep sweep: --file and --output are required")}
	}
	if *parallel < 0 || *workers < 1 || *conc < 1 {
		return usageError{fmt.Errorf("sleep sweep: --parallel %d, --workers %d, --concurrency %d: want --parallel 0 or more, the others 1 or more", *parallel, *workers, *conc)}
	}
	f, err := sleepdrv.LoadSweepFile(*file)
	if err != nil {
		return usageError{err}
	}
	log, err := newLogger(stderr, "text", *logLevel)
	if err != nil {
		return err
	}
	n := *parallel
	if n == 0 {
		n = max(1, *workers**conc/4)
	}
	fleetDir := filepath.Join(*out, "fleet")
	fl, err := fleet.StartCampaign(ctx, fleet.CampaignOptions{Dir: fleetDir, GRPCHost: "127.0.0.1", Workers: *workers, Concurrency: *conc, Logger: log})
	if err != nil {
		return err
	}
	defer func() {
		fl.Close()
		_ = os.RemoveAll(fleetDir)
	}()
	shared := &sleepdrv.SharedFleet{NATSURL: fl.URL, Endpoint: fl.Endpoint}
	run := func(args []string) error {
		return runSleepOn(ctx, append([]string{"run"}, args...), shared, io.Discard, stderr)
	}
	return sleepError(sleepdrv.SweepCommand(f, *out, n, run, stdout))
}

// exitHandoffPending is a handoff night that stopped with model calls
// waiting for answers (pending.json written); SkillOpt's handoff exits 3
// too. A budget stop shares the code: a batch is told apart by its last
// stdout line and by pending.json existing (a budget stop writes none).
const exitHandoffPending = 3

// sleepError maps a sleep command's error to its exit code.
func sleepError(err error) error {
	var ue sleepdrv.UsageError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ue):
		return usageError{err}
	case errors.Is(err, nightly.ErrLocked):
		return codedError{exitLocked, err}
	case errors.Is(err, sleepdrv.ErrStopped):
		return codedError{exitStopped, err}
	case errors.Is(err, sleepdrv.ErrHandoffPending):
		return codedError{exitHandoffPending, err}
	case errors.Is(err, sleepdrv.ErrBudget):
		return codedError{exitBudget, err}
	case errors.Is(err, sleepdrv.ErrNoImprovement):
		return codedError{exitNoImprove, err}
	}
	return err
}
