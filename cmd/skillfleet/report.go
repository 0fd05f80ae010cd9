package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/skillfleet/skillfleet/coordinator/campaign"
	"github.com/skillfleet/skillfleet/pkg/pricing"
	"github.com/skillfleet/skillfleet/pkg/report"
)

func runReport(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("report", "report RUN_DIR|CAMPAIGN_DIR [--html FILE] [--csv FILE] [--prices FILE]", stderr)
	htmlOut := fs.String("html", "", "also write a self-contained HTML report to this file")
	csvOut := fs.String("csv", "", "campaign dirs: also write the results table as CSV to this file")
	pricesFile := fs.String("prices", "", "price table YAML (default: the built-in table, see configs/prices.yaml)")
	var dir string
	// Accept RUN_DIR before or after the flags.
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		dir, args = args[0], args[1:]
	}
	if help, err := func() (bool, error) {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return true, nil
			}
			return false, usageError{err}
		}
		return false, nil
	}(); help || err != nil {
		return err
	}
	if dir == "" && fs.NArg() == 1 {
		dir = fs.Arg(0)
	} else if fs.NArg() > 0 || dir == "" {
		return usageError{errors.New("report: want exactly one RUN_DIR")}
	}
	prices := pricing.Default()
	if *pricesFile != "" {
		var err error
		if prices, err = pricing.Load(*pricesFile); err != nil {
			return usageError{fmt.Errorf("report: --prices: %w", err)}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, campaign.FileName)); err == nil {
		return campaign.WriteReport(dir, *htmlOut, *csvOut, prices, stdout)
	}
	if *csvOut != "" {
		return usageError{errors.New("report: --csv is for campaign dirs")}
	}
	r, err := report.Load(dir, prices)
	if err != nil {
		return err
	}
	if err := r.WriteText(stdout); err != nil {
		return err
	}
	if *htmlOut != "" {
		f, err := os.Create(*htmlOut)
		if err != nil {
			return fmt.Errorf("report: --html: %w", err)
		}
		if err := r.WriteHTML(f); err != nil {
			_ = f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "HTML report: %s\n", *htmlOut)
	}
	return nil
}
