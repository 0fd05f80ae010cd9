package dispatch

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillfleet/skillfleet/pkg/queue"
)

// Sweeper looks for the lost tasks of every dispatcher of a process at
// once. A round first takes each dispatcher's pending tasks, then asks the
// stream once how many messages it holds on each task subject, and gives
// every dispatcher that answer: however many runs the process coordinates,
// a round where nothing is lost costs one request. A dispatcher joins by
// naming the sweeper in [Options.Sweeper], for as long as its Run runs.
type Sweeper struct {
	log *slog.Logger

	mu sync.Mutex
	ds map[*Dispatcher]struct{}
}

// NewSweeper returns a sweeper with no dispatcher; Run sweeps.
func NewSweeper(log *slog.Logger) *Sweeper {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Sweeper{log: log, ds: map[*Dispatcher]struct{}{}}
}

// add makes d one of the swept dispatchers until the returned func is called.
func (s *Sweeper) add(d *Dispatcher) (remove func()) {
	s.mu.Lock()
	s.ds[d] = struct{}{}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.ds, d)
		s.mu.Unlock()
	}
}

// Run sweeps every [SweepEvery] until ctx ends.
func (s *Sweeper) Run(ctx context.Context) {
	t := time.NewTicker(SweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.Sweep(ctx, SweepEvery)
		}
	}
}

// Sweep runs one round over every dispatcher that has a stream, leaving
// alone tasks published within minAge, and returns how many tasks it
// republished.
func (s *Sweeper) Sweep(ctx context.Context, minAge time.Duration) int {
	s.mu.Lock()
	ds := make([]*Dispatcher, 0, len(s.ds))
	for d := range s.ds {
		ds = append(ds, d)
	}
	s.mu.Unlock()
	type job struct {
		d *Dispatcher
		r *sweepRound
	}
	var jobs []job
	var stream jetstream.Stream
	for _, d := range ds {
		if d.o.Stream == nil {
			continue
		}
		if r := d.sweepRound(minAge); r != nil {
			jobs = append(jobs, job{d, r})
			stream = d.o.Stream
		}
	}
	if len(jobs) == 0 {
		return 0
	}
	// The counts are taken after every round: a task answered meanwhile
	// only makes a run look short, which the run's own check then clears.
	counts, err := storedCounts(ctx, stream)
	if err != nil {
		s.log.Debug("stream count for the sweep failed; every run reads its messages instead", "err", err)
	}
	stored := func(ctx context.Context, filter string) (uint64, error) {
		if err != nil {
			return 0, err
		}
		return counts[filter], nil
	}
	n := 0
	for _, j := range jobs {
		if ctx.Err() != nil {
			break
		}
		n += j.d.sweepWith(ctx, j.r, stored)
	}
	return n
}

// storedCounts is how many messages the stream holds on each run's task
// subjects, keyed by the run's subject filter ([runFilter]).
func storedCounts(ctx context.Context, stream jetstream.Stream) (map[string]uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, sweepTimeout)
	defer cancel()
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter(queue.SubjectPrefix+">"))
	if err != nil {
		return nil, err
	}
	counts := make(map[string]uint64, len(info.State.Subjects))
	for subject, n := range info.State.Subjects {
		counts[runFilter(subject)] += n
	}
	return counts, nil
}
