package campaign

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/skillfleet/skillfleet/coordinator"
)

// StateName is the name a campaign is known by outside its dir (its
// default dir, its shared state on NATS): the spec's name, else the
// campaign file's base name without its extension.
func (s *Spec) StateName() string {
	return cmp.Or(s.Name, strings.TrimSuffix(filepath.Base(s.File), filepath.Ext(s.File)))
}

// DefaultDir is the campaign's dir when none is given:
// runs/campaigns/<name>.
func (s *Spec) DefaultDir() string { return filepath.Join("runs", "campaigns", s.StateName()) }

// OpenDir makes the campaign dir (and its cells/) and locks it for this
// process: one process per campaign dir, or, for a member of a shared
// campaign, one per member name (the lock is in members/<member>). It
// returns dir made absolute.
func OpenDir(dir, member string) (abs string, unlock func(), err error) {
	if abs, err = filepath.Abs(dir); err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(filepath.Join(abs, "cells"), 0o755); err != nil {
		return "", nil, fmt.Errorf("campaign dir: %w", err)
	}
	lockDir := abs
	if member != "" {
		lockDir = filepath.Join(abs, "members", member)
		if err := os.MkdirAll(lockDir, 0o755); err != nil {
			return "", nil, fmt.Errorf("campaign dir: %w", err)
		}
	}
	unlock, err = coordinator.LockRunDir(lockDir)
	if err != nil {
		return "", nil, err
	}
	return abs, unlock, nil
}

// ParsePort parses the port of a campaign's gRPC endpoint: a port, or a
// range FIRST-LAST of which FIRST is used (the range once held one port
// per running cell); empty is 0, any free port.
func ParsePort(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	if a, b, ok := strings.Cut(s, "-"); ok {
		lo, err1 := strconv.Atoi(strings.TrimSpace(a))
		hi, err2 := strconv.Atoi(strings.TrimSpace(b))
		if err1 != nil || err2 != nil || lo < 1 || hi > 65535 || hi < lo {
			return 0, fmt.Errorf("%q is not a port range FIRST-LAST", s)
		}
		return lo, nil
	}
	p, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || p < 1 || p > 65535 {
		return 0, fmt.Errorf("%q is not a port", s)
	}
	return p, nil
}

// WriteStart writes the campaign's first line: its cells, how many run at
// once, this process's part (a member of a shared campaign), the fleet
// and the dir.
func (c *Campaign) WriteStart(w io.Writer, fleet string) error {
	member := ""
	if c.cfg.Member != "" {
		member = " in this process, member " + c.cfg.Member + " of those sharing the campaign"
	}
	_, err := fmt.Fprintf(w, "skillfleet: campaign %s: %d cells, up to %d at once%s; %s; campaign dir %s\n",
		c.Name(), len(c.cells), c.cfg.Spec.MaxActiveRuns, member, fleet, c.cfg.Dir)
	return err
}

// WriteEnd writes the campaign's results table and where its results
// are.
func (f *File) WriteEnd(w io.Writer, dir string) error {
	if err := f.WriteText(w); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "results: %s (skillfleet report %s [--csv|--html FILE])\n", filepath.Join(dir, FileName), dir)
	return err
}
