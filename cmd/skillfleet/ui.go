package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/skillfleet/skillfleet/internal/ui"
	"github.com/skillfleet/skillfleet/pkg/pricing"
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

// runUI serves the dashboard for finished (or running) runs and campaigns.
func runUI(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("ui", "ui [--addr ADDR] [--prices FILE] DIR...", stderr)
	var u uiFlags
	fs.StringVar(&u.addr, "addr", "127.0.0.1:8080", "listen address (beyond loopback it needs "+ui.TokenEnv+" or --ui-insecure)")
	fs.BoolVar(&u.insecure, "ui-insecure", false, "let --addr listen beyond loopback without "+ui.TokenEnv)
	pricesFile := fs.String("prices", "", "price table YAML (default: the built-in table, see configs/prices.yaml)")
	dirs, help, err := parseInterspersed(fs, args)
	if help || err != nil {
		return err
	}
	if len(dirs) == 0 {
		return usageError{errors.New("ui: want one or more run or campaign directories")}
	}
	prices, err := pricing.LoadOrDefault(*pricesFile)
	if err != nil {
		return usageError{fmt.Errorf("ui: --prices: %w", err)}
	}
	srv, err := serveUI(ctx, u, dirs, prices, nil, nil, stdout)
	if err != nil {
		return err
	}
	<-ctx.Done()
	srv.Close()
	return nil
}
