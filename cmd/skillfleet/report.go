package main

import (
	"context"
	"errors"
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
	pos, help, err := parseInterspersed(fs, args)
	if help || err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{errors.New("report: want exactly one RUN_DIR")}
	}
	dir := pos[0]
	prices, err := pricing.LoadOrDefault(*pricesFile)
	if err != nil {
		return usageError{fmt.Errorf("report: --prices: %w", err)}
	}
	if _, err := os.Stat(filepath.Join(dir, campaign.FileName)); err == nil {
		return campaign.WriteReport(dir, *htmlOut, *csvOut, prices, stdout)
	}
	if *csvOut != "" {
		return usageError{errors.New("report: --csv is for campaign dirs")}
	}
	return report.WriteDir(dir, *htmlOut, prices, stdout)
}
