package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/coordinator/campaign"
	"github.com/skillfleet/skillfleet/internal/ui"
	"github.com/skillfleet/skillfleet/pkg/config"
	"github.com/skillfleet/skillfleet/pkg/pricing"
	"github.com/skillfleet/skillfleet/pkg/tlsconf"
)

// uiFlags are the dashboard flags of train, coordinator (and campaign).
type uiFlags struct {
	addr     string
	insecure bool
}

func (u *uiFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&u.addr, "ui", "", "serve the live dashboard on this address, e.g. 127.0.0.1:8080 (off by default; beyond loopback it needs "+ui.TokenEnv+" or --ui-insecure)")
	fs.BoolVar(&u.insecure, "ui-insecure", false, "let --ui listen beyond loopback without "+ui.TokenEnv+" (anyone who can reach it sees the run)")
}

// check refuses a --ui address beyond loopback without a token, before
// any work starts.
func (u uiFlags) check() error {
	if u.addr == "" {
		return nil
	}
	if err := ui.CheckBind(u.addr, os.Getenv(ui.TokenEnv), u.insecure); err != nil {
		return usageError{err}
	}
	return nil
}

// serveUI starts the dashboard for dirs and prints where it is. fleet may
// be nil.
func serveUI(ctx context.Context, u uiFlags, dirs []string, prices *pricing.Table, fleet func(context.Context) (*ui.Fleet, error), log *slog.Logger, stderr io.Writer) (*ui.Server, error) {
	if err := u.check(); err != nil {
		return nil, err
	}
	srv, err := ui.ServeAnnounced(ctx, u.options(prices, fleet, log), stderr, dirs...)
	if err != nil {
		return nil, usageError{err}
	}
	return srv, nil
}

// options are the dashboard's options the flags give.
func (u uiFlags) options(prices *pricing.Table, fleet func(context.Context) (*ui.Fleet, error), log *slog.Logger) ui.Options {
	return ui.Options{Addr: u.addr, Token: os.Getenv(ui.TokenEnv), Insecure: u.insecure, Prices: prices, Fleet: fleet, Log: log}
}

// launchFlags are the ui command's flags of the new-run page.
type launchFlags struct {
	on            bool
	configs       string
	runs          string
	natsURL       string
	prices        string
	tls           tlsconf.Files
	logLevel      string
	sets          multiFlag
	extraFlags    multiFlag
	campaignFlags multiFlag
}

func (l *launchFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&l.on, "ui-launch", false, "let the dashboard start, stop and resume training runs and campaigns (a new-run page; off by default; beyond loopback it needs --ui-tls-cert and "+ui.TokenEnv+")")
	fs.StringVar(&l.configs, "configs", "configs", "with --ui-launch: the directory of config and campaign files the page offers")
	fs.StringVar(&l.runs, "runs", "runs", "with --ui-launch: the directory launched runs and campaigns get their directory in")
	fs.StringVar(&l.natsURL, "nats", "", "with --ui-launch: run launched runs on the external fleet at this NATS URL (workers started with skillfleet worker); default: each run's own in-process workers")
	fs.StringVar(&l.tls.Cert, "ui-tls-cert", "", "serve the dashboard over HTTPS with this certificate (PEM); needs --ui-tls-key")
	fs.StringVar(&l.tls.Key, "ui-tls-key", "", "private key (PEM) of --ui-tls-cert")
	fs.StringVar(&l.logLevel, "launch-log-level", "warn", "with --ui-launch: log level of launched runs (their output goes to launch.log in their directory)")
	fs.Var(&l.sets, "launch-set", "with --ui-launch: override a config key of every launched run after the form's fields, section.key=value (repeatable; checked, estimated and recorded with them)")
	fs.Var(&l.extraFlags, "launch-flag", "with --ui-launch: one more flag of train given to every launched run, e.g. --launch-flag=--no-fsync (repeatable)")
	fs.Var(&l.campaignFlags, "campaign-flag", "with --ui-launch: one more flag of campaign given to every launched campaign, e.g. --campaign-flag=--max-active-runs=2 (repeatable)")
}

// fleet says where launched runs' tasks run.
func (l launchFlags) fleet() string {
	if l.natsURL != "" {
		return "the external fleet at " + l.natsURL + " (its workers make the calls)"
	}
	return "each run's own in-process workers (runtime.workers)"
}

// launch is the dashboard's new-run page backed by this binary's own
// train and campaign commands: what the page starts is what those
// commands, given the same config and --set flags, would start.
func (l launchFlags) launch() *ui.Launch {
	return &ui.Launch{
		ConfigsDir: l.configs,
		RunsDir:    l.runs,
		Fleet:      l.fleet(),
		Sets:       l.sets,
		Load:       coordinator.LoadConfig,
		CheckCampaign: func(path string, sets []string) error {
			spec, err := campaign.Load(path)
			if err != nil {
				return err
			}
			return spec.ValidateCells(sets)
		},
		Estimate: func(w io.Writer, cfg *config.Config) error {
			prices, err := pricing.LoadOrDefault(l.prices)
			if err != nil {
				return err
			}
			return coordinator.WriteEstimate(w, cfg, prices)
		},
		Preflight: func(ctx context.Context, cfg *config.Config) error {
			if l.natsURL != "" {
				// The external fleet's workers hold the credentials;
				// this process cannot see their environment.
				return nil
			}
			return preflightConfigs(ctx, map[string]*config.Config{"": cfg})
		},
		Run: l.run,
	}
}

// args are the command line of job.
func (l launchFlags) args(job ui.Job) []string {
	args := []string{"--config", job.Config, "--out", job.Out, "--log-level", l.logLevel}
	if l.prices != "" {
		args = append(args, "--prices", l.prices)
	}
	if l.natsURL != "" {
		args = append(args, "--nats", l.natsURL, "--workers", "0")
	}
	for _, s := range job.Sets {
		args = append(args, "--set", s)
	}
	if job.Kind == "campaign" {
		return append(args, l.campaignFlags...)
	}
	// The run page shows the wave's tasks and time left from progress.json.
	args = append(args, "--progress-file")
	return append(args, l.extraFlags...)
}

// run runs job as train or campaign would, its output to out. A run
// stopped on request (STOP file, or ctx) returns an error wrapping
// ui.Stopped.
func (l launchFlags) run(ctx context.Context, job ui.Job, out io.Writer) error {
	args := l.args(job)
	fmt.Fprintf(out, "dashboard: skillfleet %s %s\n", map[string]string{"run": "train", "campaign": "campaign"}[job.Kind], strings.Join(args, " "))
	var err error
	switch job.Kind {
	case "run":
		err = runTrain(ctx, args, out, out)
	case "campaign":
		err = runCampaign(ctx, args, out, out)
	default:
		return fmt.Errorf("launch: unknown kind %q", job.Kind)
	}
	var ce codedError
	if (errors.As(err, &ce) && ce.code == exitStopped) || (err == nil && ctx.Err() != nil) {
		return fmt.Errorf("%w (%v): resume it from the page", ui.Stopped, err)
	}
	return err
}

// runUI serves the dashboard for finished (or running) runs and
// campaigns, and with --ui-launch starts new ones.
func runUI(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("ui", "ui [--addr ADDR] [--prices FILE] [--ui-launch [--configs DIR] [--runs DIR] [--nats URL]] DIR...", stderr)
	var u uiFlags
	var l launchFlags
	fs.StringVar(&u.addr, "addr", "127.0.0.1:8080", "listen address (beyond loopback it needs "+ui.TokenEnv+" or --ui-insecure)")
	fs.BoolVar(&u.insecure, "ui-insecure", false, "let --addr listen beyond loopback without "+ui.TokenEnv)
	fs.StringVar(&l.prices, "prices", "", "price table YAML (default: the built-in table, see configs/prices.yaml)")
	l.register(fs)
	dirs, help, err := parseInterspersed(fs, args)
	if help || err != nil {
		return err
	}
	if len(dirs) == 0 && !l.on {
		return usageError{errors.New("ui: want one or more run or campaign directories (or --ui-launch to start runs from the page)")}
	}
	prices, err := pricing.LoadOrDefault(l.prices)
	if err != nil {
		return usageError{fmt.Errorf("ui: --prices: %w", err)}
	}
	o := u.options(prices, nil, nil)
	if l.tls.Enabled() {
		if l.tls.Cert == "" || l.tls.Key == "" {
			return usageError{errors.New("ui: --ui-tls-cert and --ui-tls-key go together")}
		}
		if o.TLS, err = l.tls.Server(false); err != nil {
			return usageError{fmt.Errorf("ui: --ui-tls-*: %w", err)}
		}
	}
	if l.on {
		if fi, err := os.Stat(l.configs); err != nil || !fi.IsDir() {
			return usageError{fmt.Errorf("ui: --configs %s: not a directory of config files", l.configs)}
		}
		if err := os.MkdirAll(l.runs, 0o755); err != nil {
			return usageError{fmt.Errorf("ui: --runs: %w", err)}
		}
		o.Launch = l.launch()
		// The runs launched before, so that they can be watched and
		// resumed.
		dirs = append(dirs, launchedDirs(l.runs)...)
	}
	srv, err := ui.ServeAnnounced(ctx, o, stdout, dirs...)
	if err != nil {
		return usageError{err}
	}
	<-ctx.Done()
	srv.Close()
	return nil
}

// launchedDirs are the directories under runs that a dashboard launched
// (they hold ui.LaunchFile).
func launchedDirs(runs string) []string {
	ents, err := os.ReadDir(runs)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		p := filepath.Join(runs, e.Name())
		if _, err := os.Stat(filepath.Join(p, ui.LaunchFile)); e.IsDir() && err == nil {
			out = append(out, p)
		}
	}
	return out
}
