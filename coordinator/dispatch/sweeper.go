package dispatch

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillfleet/skillfleet/pkg/queue"
)

// Sweeper looks after the tasks of every dispatcher of a process that
// left the stream without a result.
//
// It looks for lost tasks of every dispatcher at once. A round first
// takes each dispatcher's queued tasks, then asks the stream once how
// many messages it holds on each task subject, and gives every
// dispatcher that answer: however many runs the process coordinates, a
// round where nothing is lost costs one request.
//
// It hears JetStream's max-deliveries advisories once for the process (one
// subscription per NATS connection its dispatchers use) and hands each to
// the dispatcher whose message it names, by stream sequence: only the run
// that owns a task deletes its exhausted message and queues it again.
//
// A dispatcher joins by naming the sweeper in [Options.Sweeper], for as
// long as its Run runs.
type Sweeper struct {
	log *slog.Logger

	mu   sync.Mutex
	ds   map[*Dispatcher]struct{}
	subs map[*nats.Conn]*advisories
}

// advisories is the sweeper's max-deliveries subscription on one
// connection, shared by n dispatchers; handling counts the advisories
// being handled, which the last dispatcher to leave waits for.
type advisories struct {
	stop     func()
	n        int
	handling sync.WaitGroup
}

// NewSweeper returns a sweeper with no dispatcher; Run sweeps.
func NewSweeper(log *slog.Logger) *Sweeper {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Sweeper{log: log, ds: map[*Dispatcher]struct{}{}, subs: map[*nats.Conn]*advisories{}}
}

// add makes d one of the sweeper's dispatchers until the returned func
// is called; the first dispatcher on a NATS connection subscribes to the
// advisories there, and the last to leave ends the subscription.
func (s *Sweeper) add(d *Dispatcher) (remove func(), err error) {
	nc := d.o.NC
	s.mu.Lock()
	defer s.mu.Unlock()
	if nc != nil && s.subs[nc] == nil {
		a := &advisories{}
		a.stop, err = queue.SubscribeMaxDeliveries(nc, func(m queue.MaxDeliveriesExceeded) {
			s.mu.Lock()
			if s.subs[nc] != a {
				s.mu.Unlock()
				return
			}
			a.handling.Add(1)
			s.mu.Unlock()
			defer a.handling.Done()
			s.advise(nc, m)
		})
		if err != nil {
			return nil, err
		}
		s.subs[nc] = a
	}
	if nc != nil {
		s.subs[nc].n++
	}
	s.ds[d] = struct{}{}
	return func() {
		s.mu.Lock()
		delete(s.ds, d)
		var last *advisories
		if a := s.subs[nc]; a != nil {
			if a.n--; a.n == 0 {
				delete(s.subs, nc)
				last = a
			}
		}
		s.mu.Unlock()
		if last != nil {
			last.stop()
			last.handling.Wait()
		}
	}, nil
}

// advise hands the advisory of a message that ran out of deliveries to
// the dispatcher on nc whose message it is; a message no dispatcher of
// this process owns belongs to another process's run.
func (s *Sweeper) advise(nc *nats.Conn, a queue.MaxDeliveriesExceeded) {
	s.mu.Lock()
	ds := make([]*Dispatcher, 0, len(s.ds))
	for d := range s.ds {
		if d.o.NC == nc {
			ds = append(ds, d)
		}
	}
	s.mu.Unlock()
	for _, d := range ds {
		if d.deliveriesExhausted(context.Background(), a) {
			return
		}
	}
}

// Run sweeps every [SweepEvery] until ctx ends, then returns nil once
// the round under way has ended. The sweeper starts nothing else: the
// advisory subscriptions belong to the dispatchers that join it.
func (s *Sweeper) Run(ctx context.Context) error {
	t := time.NewTicker(SweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
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
	// Each class consumer's ack floor is read at most once a round, by
	// the first run with a queued message the stream still holds.
	var fmu sync.Mutex
	floors := map[queue.Class]uint64{}
	floor := func(ctx context.Context, c queue.Class) (uint64, error) {
		fmu.Lock()
		defer fmu.Unlock()
		if f, ok := floors[c]; ok {
			return f, nil
		}
		f, err := jobs[0].d.consumerFloor(ctx, c)
		if err != nil {
			return 0, err
		}
		floors[c] = f
		return f, nil
	}
	n := 0
	for _, j := range jobs {
		if ctx.Err() != nil {
			break
		}
		n += j.d.sweepWith(ctx, j.r, stored, floor)
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
