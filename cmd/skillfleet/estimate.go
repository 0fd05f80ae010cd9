package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/pkg/config"
	"github.com/skillfleet/skillfleet/pkg/pricing"
)

// estimate prints the expected calls, tokens and dollars per stage of a
// config before any call is made (train --estimate). Nothing is written:
// a sim world is generated in a temporary directory.
func estimate(o trainOpts, cfg *config.Config, stdout io.Writer) error {
	tmp, err := os.MkdirTemp("", "skillfleet-estimate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	splits, err := coordinator.LoadSplits(cfg, tmp)
	if err != nil {
		return startError(err)
	}
	s, err := coordinator.FromConfig(cfg, "estimate", tmp)
	if err != nil {
		return usageError{err}
	}
	prices := pricing.Default()
	if o.prices != "" {
		if prices, err = pricing.Load(o.prices); err != nil {
			return usageError{err}
		}
	}
	stages := coordinator.Estimate(s, splits)
	fmt.Fprintf(stdout, "estimate for %s: %s on %s (%d train / %d val / %d test items), %d epochs × batch %d\n\n",
		cfg.File, cfg.Env.Name, s.Target.GetModel(), len(splits.Train), len(splits.Val), len(splits.Test), s.NumEpochs, s.BatchSize)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stage\trole\tcalls (low)\texpected\t(high)\tinput tokens (expected)\toutput tokens (expected, range)\t")
	var calls [3]int64
	var inTok, outLo, outHi int64
	var usdLo, usdHi float64
	priced := true
	for _, e := range stages {
		model := s.Target.GetModel()
		if e.Role == "optimizer" {
			model = s.Optimizer.GetModel()
		}
		in := e.Exp * e.InPerCall
		oLo, oHi := e.Exp*e.OutLo, e.Exp*e.OutHi
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s–%s\t\n", e.Stage, e.Role, e.Lo, e.Exp, e.Hi, fmtTokens(in), fmtTokens(oLo), fmtTokens(oHi))
		calls[0] += e.Lo
		calls[1] += e.Exp
		calls[2] += e.Hi
		inTok += in
		outLo += oLo
		outHi += oHi
		lo, err1 := prices.Cost(model, e.Lo*e.InPerCall, 0, e.Lo*e.OutLo)
		hi, err2 := prices.Cost(model, e.Hi*e.InPerCall, 0, e.Hi*e.OutHi)
		if err1 != nil || err2 != nil {
			priced = false
		}
		usdLo += lo
		usdHi += hi
	}
	fmt.Fprintf(tw, "total\t\t%d\t%d\t%d\t%s\t%s–%s\t\n", calls[0], calls[1], calls[2], fmtTokens(inTok), fmtTokens(outLo), fmtTokens(outHi))
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	if priced {
		fmt.Fprintf(stdout, "cost: $%.2f – $%.2f (low calls and short replies to high calls and replies at the output cap; prices of %s as of %s)\n",
			usdLo, usdHi, prices.Source(), prices.AsOf())
	} else {
		fmt.Fprintf(stdout, "cost: not priced (%s or %s is not in the price table; give one with --prices)\n", s.Target.GetModel(), s.Optimizer.GetModel())
	}
	fmt.Fprintln(stdout, "\nassumptions:")
	for _, e := range stages {
		if e.Note != "" {
			fmt.Fprintf(stdout, "  %-15s %s\n", e.Stage, e.Note)
		}
	}
	fmt.Fprintln(stdout, "  tokens          about four characters a token; items and the seed skill measured on the data")
	fmt.Fprintln(stdout, strings.TrimSpace(`
Gate and merge counts depend on what the model does (patches found, early stop, accepted edits); the expected column
assumes every step is gated on the whole selection split, so it is an upper estimate there.`))
	return nil
}
