package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/skillfleet/skillfleet/coordinator/trainer"
	"github.com/skillfleet/skillfleet/pkg/store"
	"github.com/skillfleet/skillfleet/pkg/store/redisstore"
	"github.com/skillfleet/skillfleet/pkg/usage"
)

// leadRun takes the run's leader lease in the shared store: a coordinator
// on another host (which the run-dir lock cannot see) running the same run
// is refused with an error wrapping [ErrLocked] naming the holder, or
// waited for with wait. The returned fence confirms the lease before each
// decision: it blocks while the store cannot confirm it and fails for good
// once another coordinator has taken the run.
func leadRun(ctx context.Context, st *redisstore.Store, runID string, wait bool, log *slog.Logger) (fence func() error, stop func(), err error) {
	host, _ := os.Hostname()
	owner := host + "/pid-" + strconv.Itoa(os.Getpid())
	leader := store.NewLeader(st.Leases(), store.LeaderConfig{Run: runID, Owner: owner, Wait: wait, Logger: log})
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- leader.Run(lctx) }()
	if wait {
		log.Info("waiting for the run's leader lease", "run", runID)
	}
	if err := leader.Wait(ctx); err != nil {
		cancel()
		<-done
		var held *store.LeaseHeldError
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("%w while waiting for the run's leader lease (nothing was written)", trainer.ErrStopped)
		}
		if errors.As(err, &held) {
			return nil, nil, &lockedError{fmt.Errorf("%w (shared store %s); or start this one with --lease-wait", err, st)}
		}
		return nil, nil, fmt.Errorf("leader lease: %w", err)
	}
	log.Info("leading the run", "run", runID, "owner", owner, "fencing_token", leader.Token())
	fence = func() error {
		warned := false
		for {
			err := leader.Fence(ctx)
			switch {
			case err == nil:
				if warned {
					log.Warn("leader lease confirmed again; decisions resume", "run", runID)
				}
				return nil
			case errors.Is(err, store.ErrLeaseLost), errors.Is(err, store.ErrNotLeader):
				return fmt.Errorf("this coordinator no longer leads run %q: %w", runID, err)
			case ctx.Err() != nil:
				return ctx.Err()
			}
			if !warned {
				log.Warn("cannot confirm the leader lease (shared store unreachable); decisions wait until it is confirmed", "run", runID, "err", err)
				warned = true
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Second):
			}
		}
	}
	stop = func() { cancel(); <-done }
	return fence, stop, nil
}

// publishCounters adds the run's task, call and token totals to the shared
// counters every few seconds and once more when it is stopped, so every
// process (and an operator with redis-cli) sees the run's spend.
func publishCounters(ctx context.Context, c store.Counters, run string, total func() usage.Totals, log *slog.Logger) (stop func()) {
	p := &counterPush{c: c, run: run, log: log, sent: map[string]int64{}}
	flush := func(fctx context.Context) { p.push(fctx, total()) }
	done := make(chan struct{})
	lctx, cancel := context.WithCancel(ctx)
	go func() {
		defer close(done)
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-lctx.Done():
				fctx, c2 := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
				flush(fctx)
				c2()
				return
			case <-t.C:
				flush(lctx)
			}
		}
	}()
	return func() { cancel(); <-done }
}

// counterPush adds a run's spend to its shared counters. sent is what
// each counter was given so far: a push that fails part way sends again
// only what the counters it did not reach miss, never a delta twice.
type counterPush struct {
	c    store.Counters
	run  string
	log  *slog.Logger
	sent map[string]int64
}

func (p *counterPush) push(ctx context.Context, now usage.Totals) {
	for _, kv := range []struct {
		name string
		v    int64
	}{{"tasks", now.Tasks}, {"calls", now.Calls}, {"input_tokens", now.Input}, {"output_tokens", now.Output}, {"cache_hits", now.CacheHits}} {
		d := kv.v - p.sent[kv.name]
		if d == 0 {
			continue
		}
		if _, err := p.c.Incr(ctx, store.RunCounter(p.run, kv.name), d); err != nil {
			p.log.Debug("shared counters not updated", "err", err)
			return // the rest is retried next time
		}
		p.sent[kv.name] = kv.v
	}
}
