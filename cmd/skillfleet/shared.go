package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/skillfleet/skillfleet/pkg/store"
	"github.com/skillfleet/skillfleet/pkg/store/redisstore"
)

// leadRun takes the run's leader lease in the shared store: a coordinator
// on another host (which the run-dir lock cannot see) running the same run
// is refused with exit 7 naming the holder, or waited for with wait. The
// returned fence confirms the lease before each decision: it blocks while
// the store cannot confirm it and fails for good once another coordinator
// has taken the run.
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
		if errors.As(err, &held) {
			return nil, nil, codedError{exitLocked, fmt.Errorf("%w (shared store %s); or start this one with --lease-wait", err, st)}
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
	return fence, func() { cancel(); <-done }, nil
}
