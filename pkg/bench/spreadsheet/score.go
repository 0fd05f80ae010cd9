package spreadsheet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/skillfleet/skillfleet/pkg/sandbox"
)

// Outcome is one test case's typed result.
type Outcome string

// Outcomes. Only OutcomePass scores.
const (
	OutcomePass     Outcome = "pass"
	OutcomeWrong    Outcome = "wrong-cells"   // the output's answer cells differ from the gold's
	OutcomeError    Outcome = "program-error" // the program exited non-zero (a limit signal included)
	OutcomeTimeout  Outcome = "time-limit"    // stopped at the wall limit
	OutcomeNoOutput Outcome = "no-output"     // nothing at OUTPUT_PATH
	// OutcomeNotRegular: OUTPUT_PATH is a symlink, FIFO, directory or
	// device; it is never opened.
	OutcomeNotRegular     Outcome = "output-not-regular"
	OutcomeTooLarge       Outcome = "output-too-large"  // over the output size cap
	OutcomeUnreadable     Outcome = "output-unreadable" // not a workbook, or over the unzip limits
	OutcomeCompareTimeout Outcome = "compare-timeout"
)

// ReadLimits bound reading a workbook.
type ReadLimits struct {
	MaxFile  int64 // the file itself
	MaxUnzip int64 // all its parts uncompressed
	MaxXML   int64 // a worksheet or shared-strings part held in memory (bigger ones go to a temp file)
}

// DefaultOutputLimits bound reading a program's output workbook.
var DefaultOutputLimits = ReadLimits{MaxFile: 32 << 20, MaxUnzip: 64 << 20, MaxXML: 16 << 20}

// GoldLimits bound reading a gold workbook (trusted, but not unbounded).
var GoldLimits = ReadLimits{MaxFile: 256 << 20, MaxUnzip: 1 << 30, MaxXML: 64 << 20}

// ErrNotRegular and ErrTooLarge are ReadRegular's refusals.
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrTooLarge   = errors.New("file too large")
)

// ReadRegular reads a file without following a final symlink
// (O_NOFOLLOW), without blocking on a FIFO (O_NONBLOCK, then refused),
// only if it is a regular file of at most max bytes.
func ReadRegular(path string, max int64) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%s: %w (a symbolic link)", path, ErrNotRegular)
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, st.Mode().Type())
	}
	if st.Size() > max {
		return nil, fmt.Errorf("%s: %w (%d bytes, limit %d)", path, ErrTooLarge, st.Size(), max)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: %w (grew past %d bytes)", path, ErrTooLarge, max)
	}
	return data, nil
}

// unreadableError: the output workbook cannot be opened.
type unreadableError struct{ err error }

func (u *unreadableError) Error() string {
	return "the output workbook cannot be opened: " + u.err.Error()
}

// Scorer compares output workbooks with gold ones, treating the output as
// hostile.
type Scorer struct {
	Limits  ReadLimits    // default DefaultOutputLimits
	Timeout time.Duration // the whole comparison (default 30s)
}

// Score checks the answer cells of the collected output entry against
// the gold workbook. The error is for problems on the gold side only.
func (s Scorer) Score(ctx context.Context, out *sandbox.Entry, goldPath, positions string) (Outcome, string, error) {
	lim := s.Limits
	if lim.MaxFile <= 0 {
		lim = DefaultOutputLimits
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	switch {
	case out == nil:
		return OutcomeNoOutput, "the program did not save OUTPUT_PATH", nil
	case out.Type != "file":
		return OutcomeNotRegular, fmt.Sprintf("OUTPUT_PATH is a %s, not a regular file", out.Type), nil
	case out.TooLarge || out.Size > lim.MaxFile:
		return OutcomeTooLarge, fmt.Sprintf("the output workbook is larger than %d MB", lim.MaxFile>>20), nil
	}
	ranges, err := ParsePositions(positions)
	if err != nil {
		return "", "", err
	}
	gold, err := ReadRegular(goldPath, GoldLimits.MaxFile)
	if err != nil {
		return "", "", fmt.Errorf("gold workbook: %w", err)
	}
	type answer struct {
		diff string
		err  error
	}
	ch := make(chan answer, 1)
	go func() {
		// On a timeout this goroutine runs on alone: it owns its temp dir.
		tmp, err := os.MkdirTemp("", "skillfleet-score-")
		if err != nil {
			ch <- answer{err: err}
			return
		}
		defer os.RemoveAll(tmp)
		d, err := compareData(out.Data, gold, goldPath, ranges, lim, tmp)
		ch <- answer{d, err}
	}()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	select {
	case a := <-ch:
		var u *unreadableError
		switch {
		case errors.As(a.err, &u):
			return OutcomeUnreadable, u.Error(), nil
		case a.err != nil:
			return "", "", a.err
		case a.diff != "":
			return OutcomeWrong, a.diff, nil
		}
		return OutcomePass, "", nil
	case <-ctx.Done():
		return OutcomeCompareTimeout, fmt.Sprintf("comparing the output workbook took longer than %s", timeout), nil
	}
}
