package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/coordinator/trainer"
	"github.com/skillfleet/skillfleet/internal/fleet"
	"github.com/skillfleet/skillfleet/internal/ui"
	"github.com/skillfleet/skillfleet/pkg/pricing"
	"github.com/skillfleet/skillfleet/pkg/store"
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

// serveUI starts the dashboard for dirs and prints where it is. The lead's
// campaign command calls it with the campaign dir. fleet may be nil.
func serveUI(ctx context.Context, u uiFlags, dirs []string, prices *pricing.Table, fleet func(context.Context) (*ui.Fleet, error), log *slog.Logger, stderr io.Writer) (*ui.Server, error) {
	if err := u.check(); err != nil {
		return nil, err
	}
	srv, err := ui.Serve(ctx, ui.Options{Addr: u.addr, Token: os.Getenv(ui.TokenEnv), Insecure: u.insecure, Prices: prices, Fleet: fleet, Log: log}, dirs...)
	if err != nil {
		return nil, usageError{err}
	}
	how := "read-only"
	if os.Getenv(ui.TokenEnv) != "" {
		how = "open it once as " + srv.URL() + "?token=$" + ui.TokenEnv + "; stopping enabled"
	}
	fmt.Fprintf(stderr, "dashboard: %s (%s)\n", srv.URL(), how)
	return srv, nil
}

// progressWiring routes a run's progress: on a terminal, one status line
// below the plain lines; with --ui, progress.json in the run dir for the
// dashboard.
type progressWiring struct {
	out       io.Writer
	term      *ui.Terminal
	file      *ui.ProgressFile
	listeners []func(ui.Progress)
}

func newProgressWiring(stdout io.Writer, tty bool) *progressWiring {
	pw := &progressWiring{out: stdout}
	if tty {
		pw.term = ui.NewTerminal(stdout)
		pw.out = pw.term
		pw.listeners = append(pw.listeners, pw.term.Update)
	}
	return pw
}

func (pw *progressWiring) listen(p ui.Progress) {
	for _, f := range pw.listeners {
		f(p)
	}
}

// attach connects the trainer's progress and spend (priced with the
// --prices table, else the built-in one) and, with --ui, starts the
// dashboard on the run dir with the hub's fleet.
func (pw *progressWiring) attach(ctx context.Context, u uiFlags, pricesFile, runDir string, prog *coordinator.Progress, tr *trainer.Trainer,
	hub *coordinator.Hub, reg store.Registry, levels fleet.BucketLevels, log *slog.Logger, stderr io.Writer) error {
	prices := pricing.Default()
	if pricesFile != "" {
		var err error
		if prices, err = pricing.Load(pricesFile); err != nil {
			return usageError{fmt.Errorf("--prices: %w", err)}
		}
	}
	if pw.term != nil {
		pw.term.SetSpend(func() (int64, *float64) {
			b := prices.Price(tr.Accounting().PriceRows())
			tok := tr.Accounting().Total().Tokens()
			if !b.Complete() {
				return tok, nil
			}
			return tok, &b.Total
		})
	}
	if u.addr != "" {
		pw.file = ui.NewProgressFile(runDir, 0)
		pw.file.SetSpend(func() any {
			rows, _ := tr.Accounting().Report()["rows"].([]trainer.Row)
			out := make([]ui.ProgressRow, len(rows))
			for i, r := range rows {
				out[i] = ui.NewProgressRow(r.Stage, r.Role, r.Model, r.Totals)
			}
			return out
		})
		pw.listeners = append(pw.listeners, pw.file.Update)
		if _, err := serveUI(ctx, u, []string{runDir}, prices, fleet.Status(hub, reg, levels), log, stderr); err != nil {
			return err
		}
	}
	prog.Listen(pw.listen)
	return nil
}

func (pw *progressWiring) close() {
	if pw.file != nil {
		_ = pw.file.Close()
	}
	if pw.term != nil {
		pw.term.Close()
	}
}

// runUI serves the dashboard for finished (or running) runs and campaigns.
func runUI(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("ui", "ui [--addr ADDR] [--prices FILE] DIR...", stderr)
	var u uiFlags
	fs.StringVar(&u.addr, "addr", "127.0.0.1:8080", "listen address (beyond loopback it needs "+ui.TokenEnv+" or --ui-insecure)")
	fs.BoolVar(&u.insecure, "ui-insecure", false, "let --addr listen beyond loopback without "+ui.TokenEnv)
	pricesFile := fs.String("prices", "", "price table YAML (default: the built-in table, see configs/prices.yaml)")
	// Directories may come before, between or after the flags.
	var dirs []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil
			}
			return usageError{err}
		}
		if fs.NArg() == 0 {
			break
		}
		dirs = append(dirs, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(dirs) == 0 {
		return usageError{errors.New("ui: want one or more run or campaign directories")}
	}
	prices := pricing.Default()
	if *pricesFile != "" {
		var err error
		if prices, err = pricing.Load(*pricesFile); err != nil {
			return usageError{fmt.Errorf("ui: --prices: %w", err)}
		}
	}
	srv, err := serveUI(ctx, u, dirs, prices, nil, nil, stdout)
	if err != nil {
		return err
	}
	<-ctx.Done()
	srv.Close()
	return nil
}
