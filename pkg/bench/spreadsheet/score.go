package spreadsheet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

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
// Parsing a worksheet takes several times its XML size in memory: a
// hostile 30 MiB sheet of tiny cells peaks near 250 MiB.
var DefaultOutputLimits = ReadLimits{MaxFile: 32 << 20, MaxUnzip: 32 << 20, MaxXML: 16 << 20}

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
func ReadRegular(path string, limit int64) ([]byte, error) {
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
	if st.Size() > limit {
		return nil, fmt.Errorf("%s: %w (%d bytes, limit %d)", path, ErrTooLarge, st.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: %w (grew past %d bytes)", path, ErrTooLarge, limit)
	}
	return data, nil
}

// unreadableError: the output workbook cannot be opened.
type unreadableError struct{ err error }

func (u *unreadableError) Error() string {
	return "the output workbook cannot be opened: " + u.err.Error()
}

// Scorer compares output workbooks with gold ones, treating the output as
// hostile: the comparison runs in a child process (this executable again,
// see RunScorerChild) under a memory rlimit, killed at the timeout, with its
// temporary files in a directory removed after it is gone.
type Scorer struct {
	Limits   ReadLimits    // default DefaultOutputLimits
	Timeout  time.Duration // the whole comparison (default 30s)
	MemoryMB int           // the child's data limit (default 1024)
}

// ScoreStats describe one comparison's cost.
type ScoreStats struct {
	Elapsed time.Duration
	PeakRSS int64 // the comparing process's peak resident set, bytes
}

// Score checks the answer cells of the collected output entry against
// the gold workbook. The error is for problems on the host side only
// (the gold unreadable, the child not starting).
func (s Scorer) Score(ctx context.Context, out *sandbox.Entry, goldPath, positions string) (Outcome, string, ScoreStats, error) {
	var st ScoreStats
	lim := s.Limits
	if lim.MaxFile <= 0 {
		lim = DefaultOutputLimits
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	mem := s.MemoryMB
	if mem <= 0 {
		mem = 1024
	}
	switch {
	case out == nil:
		return OutcomeNoOutput, "the program did not save OUTPUT_PATH", st, nil
	case out.Type != "file":
		return OutcomeNotRegular, fmt.Sprintf("OUTPUT_PATH is a %s, not a regular file", out.Type), st, nil
	case out.TooLarge || out.Size > lim.MaxFile:
		return OutcomeTooLarge, fmt.Sprintf("the output workbook is larger than %d MB", lim.MaxFile>>20), st, nil
	}
	if _, err := parsePositions(positions); err != nil {
		return "", "", st, err
	}
	gold, err := ReadRegular(goldPath, GoldLimits.MaxFile)
	if err != nil {
		return "", "", st, fmt.Errorf("gold workbook: %w", err)
	}
	req, err := json.Marshal(scoreRequest{Pred: out.Data, Gold: gold, GoldPath: goldPath, Positions: positions, Limits: lim, MemoryMB: mem,
		CPUSeconds: int(timeout/time.Second) + 1})
	if err != nil {
		return "", "", st, err
	}
	if !scorerServed.Load() {
		return "", "", st, errors.New("scorer: the comparison starts this executable again as its child, and its main does not call spreadsheet.RunScorerChild")
	}
	exe, err := os.Executable()
	if err != nil {
		return "", "", st, fmt.Errorf("scorer: %w", err)
	}
	tmp, err := os.MkdirTemp("", "skillfleet-score-")
	if err != nil {
		return "", "", st, err
	}
	defer os.RemoveAll(tmp)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, exe)
	cmd.Env = []string{scorerEnv + "=1", "TMPDIR=" + tmp}
	cmd.Dir = tmp
	cmd.Stdin = bytes.NewReader(req)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	sandbox.DieWithParent(cmd.SysProcAttr)
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	start := time.Now()
	err = cmd.Run()
	st.Elapsed = time.Since(start)
	if ps := cmd.ProcessState; ps != nil {
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			st.PeakRSS = ru.Maxrss << 10
		}
	}
	if cctx.Err() != nil && ctx.Err() == nil {
		return OutcomeCompareTimeout, fmt.Sprintf("comparing the output workbook took longer than %s", timeout), st, nil
	}
	if ctx.Err() != nil {
		return "", "", st, ctx.Err()
	}
	var ans scoreAnswer
	if jerr := json.Unmarshal(stdout.Bytes(), &ans); err != nil || jerr != nil {
		// Out of memory (the Go runtime aborts), or killed by the CPU limit.
		return OutcomeUnreadable, fmt.Sprintf("the output workbook could not be compared within %d MB of memory (%v)", mem, err), st, nil
	}
	switch {
	case ans.GoldErr != "":
		return "", "", st, errors.New(ans.GoldErr)
	case ans.Unreadable != "":
		return OutcomeUnreadable, ans.Unreadable, st, nil
	case ans.Diff != "":
		return OutcomeWrong, ans.Diff, st, nil
	}
	return OutcomePass, "", st, nil
}

// scorerEnv makes this executable the comparing child (see RunScorerChild).
const scorerEnv = "SKILLFLEET_SPREADSHEET_SCORER"

type scoreRequest struct {
	Pred, Gold           []byte
	GoldPath, Positions  string
	Limits               ReadLimits
	MemoryMB, CPUSeconds int
}

type scoreAnswer struct {
	Diff, Unreadable, GoldErr string
}

// scorerServed records that this binary calls [RunScorerChild] before
// anything else: only then may Score start this executable again as its
// comparing child.
var scorerServed atomic.Bool

// RunScorerChild makes this process the comparing child of [Scorer.Score]
// if it was started as one: it compares the workbooks it reads on stdin,
// answers on stdout and returns isChild true with the exit code. Otherwise
// it returns isChild false at once. A binary that scores spreadsheets
// calls it first thing in main, a test binary in TestMain:
//
//	if code, ok := spreadsheet.RunScorerChild(); ok {
//		os.Exit(code)
//	}
//
// Without that call Score fails rather than start a binary that would not
// act as its child.
func RunScorerChild() (exitCode int, isChild bool) {
	scorerServed.Store(true)
	if os.Getenv(scorerEnv) != "1" {
		return 0, false
	}
	return scorerMain(os.Stdin, os.Stdout), true
}

// scorerMain is the child: limits itself, compares, answers in JSON.
func scorerMain(in io.Reader, out io.Writer) int {
	var req scoreRequest
	if err := json.NewDecoder(in).Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "scorer: request:", err)
		return 2
	}
	mem := uint64(req.MemoryMB) << 20
	// Anonymous memory counts against RLIMIT_DATA: past it the runtime
	// cannot grow the heap and aborts; the soft limit makes the GC try
	// hard first. A limit the process may not set (a hard limit already
	// lower) is said on stderr; the sandbox's own caps still hold.
	if err := syscall.Setrlimit(unix.RLIMIT_DATA, &syscall.Rlimit{Cur: mem + 256<<20, Max: mem + 256<<20}); err != nil {
		fmt.Fprintln(os.Stderr, "scorer: RLIMIT_DATA:", err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_CPU, &syscall.Rlimit{Cur: uint64(req.CPUSeconds), Max: uint64(req.CPUSeconds)}); err != nil {
		fmt.Fprintln(os.Stderr, "scorer: RLIMIT_CPU:", err)
	}
	debug.SetMemoryLimit(int64(mem))
	ranges, err := parsePositions(req.Positions)
	if err != nil {
		fmt.Fprintln(os.Stderr, "scorer:", err)
		return 2
	}
	var ans scoreAnswer
	diff, err := compareData(req.Pred, req.Gold, req.GoldPath, ranges, req.Limits, os.TempDir())
	var u *unreadableError
	switch {
	case errors.As(err, &u):
		ans.Unreadable = u.Error()
	case err != nil:
		ans.GoldErr = err.Error()
	default:
		ans.Diff = diff
	}
	if err := json.NewEncoder(out).Encode(ans); err != nil {
		return 2
	}
	return 0
}
