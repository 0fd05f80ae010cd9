package coordinator

import (
	"context"
	"log/slog"
	"time"

	"github.com/skillfleet/skillfleet/coordinator/trainer"
	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/rundir"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// NewTrainer prepares a run whose tasks go through hub: it opens the run
// dir (refusing one made by another config) and waves.jsonl, and wires the
// trainer to the hub's dispatcher. prog may be nil.
func NewTrainer(s trainer.Settings, hub *Hub, splits *bench.Splits, log *slog.Logger, prog *Progress) (*trainer.Trainer, error) {
	tr, err := NewTrainerWith(s, hubDispatcher{hub}, hub.D.RecordedIDs(), splits, log, prog)
	if err != nil {
		return nil, err
	}
	hub.D.OnDuplicateSpend(tr.AccountDuplicate)
	return tr, nil
}

// NewTrainerWith prepares a run whose tasks go through d (replayed: the
// ids d recorded before this process). It opens the run dir and
// waves.jsonl as NewTrainer does; tests give it an in-memory dispatcher.
func NewTrainerWith(s trainer.Settings, d trainer.Dispatcher, replayed map[string]struct{}, splits *bench.Splits, log *slog.Logger, prog *Progress) (*trainer.Trainer, error) {
	rd, err := rundir.Open(s.RunDir, s.ConfigHash)
	if err != nil {
		return nil, err
	}
	if prog == nil {
		prog = NewProgress(nil, false)
	}
	return trainer.New(s, splits, trainer.Deps{
		Dispatch: d, RunDir: rd, Logger: log, Progress: prog,
		Waves: waveRecorder{openWaveLog(s.RunDir)}, Replayed: replayed,
	})
}

// hubDispatcher is the trainer's [trainer.Dispatcher] over the hub: NATS
// JetStream out, gRPC reports in, the result journal.
type hubDispatcher struct{ h *Hub }

func (d hubDispatcher) Submit(ctx context.Context, tasks ...*pb.Task) ([]trainer.Future, error) {
	futs, err := d.h.D.Submit(ctx, tasks...)
	if err != nil {
		return nil, err
	}
	out := make([]trainer.Future, len(futs))
	for i, f := range futs {
		out[i] = f
	}
	return out, nil
}

func (d hubDispatcher) CancelWith(ctx context.Context, late func(*pb.Result), ids ...string) []string {
	return d.h.D.CancelWith(ctx, late, ids...)
}

// Abandon asks the workers finishing calls of cancelled tasks to end them.
func (d hubDispatcher) Abandon(ids ...string) { d.h.D.Abandon(ids...) }

func (d hubDispatcher) Lookup(id string) (*pb.Result, bool) { return d.h.D.Lookup(id) }

func (d hubDispatcher) AddSkill(hash, text string) { d.h.AddSkill(hash, text) }

// TargetSlots is the target concurrency of the workers seen in the last
// minute.
func (d hubDispatcher) TargetSlots() int {
	if d.h.RPC == nil {
		return 0
	}
	c := 0
	for _, w := range d.h.RPC.Workers(time.Minute) {
		c += w.Concurrency
	}
	return c
}

type waveRecorder struct{ *waveLog }

func (w waveRecorder) Record(stage, class string, tasks, ran int, start time.Time) {
	w.record(stage, class, tasks, ran, start)
}
