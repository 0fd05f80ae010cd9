package fleettest

import (
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/skillfleet/skillfleet/coordinator/trainer"
)

// shared holds the reference runs of a test binary.
var shared struct {
	mu   sync.Mutex
	root string // set by InMemory
	runs map[string]*referenceRun
}

type referenceRun struct {
	once sync.Once
	dir  string
	sum  *trainer.Summary
	err  error
}

// errReferenceFailed is Reference's error when the test that trained the
// reference run failed.
var errReferenceFailed = errors.New("fleettest: the reference run failed in another test")

// errNoRoot is Reference's error when the tests do not run through
// InMemory, which gives reference runs a directory and removes it.
var errNoRoot = errors.New("fleettest: Reference needs TestMain to run the tests through fleettest.InMemory")

// Reference trains p with the sim model and config overrides sets once
// per test binary, for the tests that compare their own runs with the
// same reference run (the first caller trains it; the others wait), and
// returns its run dir and result. The run dir is shared: read it, never
// change it. It lives until the binary ends, so TestMain must run the
// tests through [InMemory].
func Reference(t *testing.T, p Preset, sets ...string) (string, *trainer.Summary, error) {
	t.Helper()
	key := p.Config + "\x00" + strings.Join(sets, "\x00")
	shared.mu.Lock()
	root := shared.root
	if shared.runs == nil {
		shared.runs = map[string]*referenceRun{}
	}
	ref, ok := shared.runs[key]
	if !ok {
		ref = &referenceRun{err: errNoRoot}
		shared.runs[key] = ref
	}
	shared.mu.Unlock()
	if root == "" {
		return "", nil, errNoRoot
	}
	ref.once.Do(func() {
		dir, err := os.MkdirTemp(root, "reference-")
		if err != nil {
			ref.err = err
			return
		}
		// Run fails t on a config that does not load: the waiting tests
		// then get this error.
		ref.err = errReferenceFailed
		ref.sum, ref.err = new(Runner).Run(t, dir, p, nil, sets...)
		ref.dir = dir
	})
	return ref.dir, ref.sum, ref.err
}
