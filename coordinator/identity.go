package coordinator

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/internal/filelock"
	"github.com/skillfleet/skillfleet/pkg/config"
)

// runDir resolves the run dir: out, else the config's env.out_root, else
// runs/<env>-<time>; absolute and created (nothing in it is written).
func runDir(cfg *config.Config, out string) (string, error) {
	dir := out
	if dir == "" && cfg != nil {
		dir = cfg.Env.OutRoot
		if dir == "" {
			dir = filepath.Join("runs", fmt.Sprintf("%s-%s", cfg.Env.Name, time.Now().Format("20060102-150405")))
		}
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("run dir: %w", err)
	}
	return dir, nil
}

// runID returns a run id that stays the same when the run is resumed: id
// if given, else the one stored in the run dir, else a new one stored
// there. It writes, so it runs once the run dir is locked and its format
// accepted.
func runID(dir, id string) (string, error) {
	if id != "" {
		return id, nil
	}
	idFile := filepath.Join(dir, "run_id")
	if b, err := os.ReadFile(idFile); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), nil
	}
	sum := sha256.Sum256([]byte(dir + time.Now().String()))
	base := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, filepath.Base(dir))
	id = base + "-" + hex.EncodeToString(sum[:4])
	if err := os.WriteFile(idFile, []byte(id+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("run dir: %w", err)
	}
	return id, nil
}

// LockRunDir makes this process the only coordinator of the run in dir:
// it holds an exclusive lock on dir/coordinator.lock (released by the
// kernel when the process ends, however it ends) and writes its pid and
// host there. A second coordinator on the same run dir is refused with an
// error wrapping [ErrLocked] that names the holder; nothing of the run is
// touched.
func LockRunDir(dir string) (unlock func(), err error) { return lockRunDir(dir) }

func lockRunDir(dir string) (unlock func(), err error) {
	host, _ := os.Hostname()
	unlock, err = filelock.Lock(filepath.Join(dir, "coordinator.lock"), 0o644, "pid "+strconv.Itoa(os.Getpid())+" on "+host)
	if held := (*filelock.HeldError)(nil); errors.As(err, &held) {
		return nil, &lockedError{fmt.Errorf("run dir %s is in use by another coordinator (%s); wait for it to finish or stop it, then re-run to resume",
			dir, cmp.Or(held.Holder, "holder unknown"))}
	}
	if err != nil {
		return nil, fmt.Errorf("run dir %w", err)
	}
	return unlock, nil
}

// lockedError is an error that wraps [ErrLocked] without saying so in its
// text (the text names the holder and what to do).
type lockedError struct{ err error }

func (e *lockedError) Error() string   { return e.err.Error() }
func (e *lockedError) Unwrap() []error { return []error{e.err, ErrLocked} }
