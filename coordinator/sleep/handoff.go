package sleep

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/backends/handoff"
	"github.com/skillfleet/skillfleet/internal/atomicfile"
	"github.com/skillfleet/skillfleet/pkg/nightly"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// ErrHandoffPending is a handoff night stopped with model calls waiting
// for their answers: the batch is written, nothing was staged and the
// state is unchanged. The command exits 3 on it.
var ErrHandoffPending = handoff.ErrPending

// handoffUsageNote is the report's word on a handoff night's tokens.
const handoffUsageNote = "handoff: the answering session reports no usage; each answered call counts its prompt's and its answer's characters / 4"

// handoffStore opens a handoff night's directory (--handoff-dir, else one
// per project under the state dir), forgets what an earlier night of this
// process left pending, removes a stale batch, and points both roles'
// specs at it. Answers are read where the calls are made, so the replays
// must run on this process's workers (no --nats).
func (o *Options) handoffStore(n Night, target, optimizer *pb.ModelSpec) (*handoff.Store, error) {
	if o.NATSURL != "" {
		return nil, UsageError{errors.New("--backend handoff: the answers are read by this process's workers: leave out --nats")}
	}
	if o.Workers < 1 {
		return nil, UsageError{fmt.Errorf("--backend handoff: --workers %d: the replays need this process's workers (1 or more)", o.Workers)}
	}
	dir := cmp.Or(o.HandoffDir, filepath.Join(o.StateDir, "handoff", filepath.Base(n.Project)+"-"+hashHex([]byte(n.Project))[:12]))
	s, err := handoff.Open(dir)
	if err != nil {
		return nil, UsageError{fmt.Errorf("--handoff-dir: %w", err)}
	}
	s.Begin()
	if err := s.ClearBatch(); err != nil {
		return nil, err
	}
	for _, spec := range []*pb.ModelSpec{target, optimizer} {
		if spec.GetBackend() != backends.BackendHandoff {
			continue
		}
		if spec.Options == nil {
			spec.Options = map[string]string{}
		}
		spec.Options["dir"] = s.Dir()
	}
	return s, nil
}

// handoffOutcome ends a handoff night: an answer file that cannot be used
// is the night's error; calls waiting for answers write the batch (every
// prompt redacted as trajectories are), end stdout with the line naming
// pending.json, and return [ErrHandoffPending]; else nil (the night's own
// result stands).
func handoffOutcome(s *handoff.Store, stdout io.Writer) error {
	err := s.Err()
	var ae *handoff.AnswerError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ae):
		return fmt.Errorf("%w; the night stopped: nothing was staged and the state is unchanged", err)
	}
	n, werr := s.WriteBatch(nightly.Redact)
	if werr != nil {
		return fmt.Errorf("handoff: writing the batch: %w", werr)
	}
	fmt.Fprintf(stdout, "handoff: %d prompts pending: %s\n", n, s.PendingFile())
	return fmt.Errorf("%w: answer each prompt of %s (or %s) in its answer file, then run the same command again; nothing was staged and the state is unchanged",
		ErrHandoffPending, s.PendingFile(), s.PromptsFile())
}

// harvestSnapshot is a handoff night's harvest, kept in its directory
// between rounds: the sessions change while the rounds go on (the
// session answering the prompts is one of the project's), and a night
// whose mining prompts changed from one round to the next would never
// end. The rounds of one night mine the sessions its first round read,
// at its start time.
type harvestSnapshot struct {
	Format  string           `json:"format"`
	Project string           `json:"project"`
	Night   int              `json:"night"`
	Started time.Time        `json:"started"`
	Digests []nightly.Digest `json:"digests"`
	Skipped nightly.Skipped  `json:"skipped"`
}

const snapshotFormat = "skillfleet.handoff.harvest.v1"

// HarvestSnapshotFile is where a handoff night keeps its harvest.
func HarvestSnapshotFile(dir string) string { return filepath.Join(dir, "harvest.json") }

// loadSnapshot returns the snapshot at path when it is night's of
// project; nil when there is none or it is another night's (a stale one
// is left to be overwritten).
func loadSnapshot(path, project string, night int) (*harvestSnapshot, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s harvestSnapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w (delete it to harvest again)", path, err)
	}
	if s.Format != snapshotFormat || s.Project != project || s.Night != night {
		return nil, nil
	}
	return &s, nil
}

func (s *harvestSnapshot) save(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, b, 0o600)
}
