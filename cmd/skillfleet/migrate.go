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
refused, naming both formats, and the others are still migrated (the exit
code is then 1). train and coordinator migrate a run dir on open as well
(and log it); migrate does it ahead of time.
`

func runMigrate(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, migrateUsage) }
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageError{errors.New("migrate: name at least one RUN_DIR (`skillfleet migrate --help` says more)")}
	}
	// A dir that cannot be migrated is reported and the rest are still
	// done: one bad dir in a list does not leave the others behind.
	if fs.NArg() == 1 {
		return migrateOne(fs.Arg(0), stdout)
	}
	failed := 0
	for _, dir := range fs.Args() {
		if err := migrateOne(dir, stdout); err != nil {
			fmt.Fprintf(stderr, "skillfleet: migrate: %v\n", err)
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("migrate: %d of %d run dirs not migrated (each named above)", failed, fs.NArg())
	}
	return nil
}

// migrateOne migrates dir and says what it did.
func migrateOne(dir string, stdout io.Writer) error {
	m, err := rundir.Migrate(dir)
	if err != nil {
		return err
	}
	if m == nil {
		fmt.Fprintf(stdout, "%s: run-dir format %s, nothing to do\n", dir, rundir.FormatVersion)
		return nil
	}
	fmt.Fprintf(stdout, "%s: migrated run-dir format %s -> %s\n", dir, m.From, m.To)
	return nil
}
