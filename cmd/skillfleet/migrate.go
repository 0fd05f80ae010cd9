package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/skillfleet/skillfleet/pkg/rundir"
)

const migrateUsage = `Usage: skillfleet migrate RUN_DIR...

Brings run dirs written by an earlier skillfleet to this build's run-dir
format (` + "`skillfleet version`" + ` prints it) and says what it did. A run dir
already in this format is left alone; one this build cannot read is
refused, naming both formats. train and coordinator migrate a run dir on
open as well (and log it); migrate does it ahead of time.
`

func runMigrate(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, migrateUsage) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err}
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return usageError{errors.New("migrate: name at least one RUN_DIR")}
	}
	for _, dir := range fs.Args() {
		m, err := rundir.Migrate(dir)
		if err != nil {
			return err
		}
		if m == nil {
			fmt.Fprintf(stdout, "%s: run-dir format %s, nothing to do\n", dir, rundir.FormatVersion)
			continue
		}
		fmt.Fprintf(stdout, "%s: migrated run-dir format %s -> %s\n", dir, m.From, m.To)
	}
	return nil
}
