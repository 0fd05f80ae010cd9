package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
)

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// newFlagSet returns a flag set whose --help prints a usage header.
func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: skillfleet %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args with fs. The usage text is printed on request
// (--help) only: a mistake gets one line — the error, a unit hint for a
// duration given without one, and where the flags are listed — instead
// of a page of usage that scrolls it away.
func parseFlags(fs *flag.FlagSet, args []string) (help bool, err error) {
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err = fs.Parse(args)
	fs.Usage = usage
	fs.SetOutput(out)
	if err == nil {
		return false, nil
	}
	if errors.Is(err, flag.ErrHelp) {
		fs.Usage()
		return true, nil
	}
	return false, usageError{flagError(fs, err)}
}

// flagPattern finds the flag a parse error names.
var flagPattern = regexp.MustCompile(`flag:? -{1,2}([A-Za-z0-9_.-]+)`)

// flagError is a parse error of fs with what helps mend it.
func flagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if m := flagPattern.FindStringSubmatch(msg); m != nil && strings.HasPrefix(msg, "invalid value") {
		if f := fs.Lookup(m[1]); f != nil {
			if g, ok := f.Value.(flag.Getter); ok {
				if _, ok := g.Get().(time.Duration); ok {
					msg += " (a duration takes a unit: 90s, 5m, 1h30m)"
				}
			}
		}
	}
	return fmt.Errorf("%s; `skillfleet %s --help` lists the flags", msg, fs.Name())
}

// parseInterspersed parses args whose positional arguments may come
// before, between or after the flags, and returns those; --help is not an
// error.
func parseInterspersed(fs *flag.FlagSet, args []string) (pos []string, help bool, err error) {
	for {
		if help, err := parseFlags(fs, args); help || err != nil {
			return nil, help, err
		}
		if fs.NArg() == 0 {
			return pos, false, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// parse parses args; --help is not an error.
func parse(fs *flag.FlagSet, args []string) (help bool, err error) {
	if help, err := parseFlags(fs, args); help || err != nil {
		return help, err
	}
	if fs.NArg() > 0 {
		return false, usageError{fmt.Errorf("%s: unexpected argument %q", fs.Name(), fs.Arg(0))}
	}
	return false, nil
}
