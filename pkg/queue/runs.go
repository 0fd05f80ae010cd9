package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// RunInfo is what a live run announces in the [RunsBucket]: where its
// coordinator listens. Workers find a run's coordinator here, so a
// coordinator restarted on another address is found again.
type RunInfo struct {
	RunID string `json:"run_id"`
	// Addr is the coordinator's gRPC address (HOST:PORT).
	Addr string `json:"addr"`
	// Weight is the run's share of the fleet relative to other runs (default 1).
	Weight float64 `json:"weight,omitempty"`
	// Started is when this coordinator process started.
	Started time.Time `json:"started"`
}

// Announcement timing: a live coordinator refreshes its entry every
// AnnounceEvery; an entry not refreshed for StaleAfter belongs to a
// coordinator that is gone (crashed, or stopped without a goodbye).
const (
	AnnounceEvery = 2 * time.Second
	StaleAfter    = 8 * time.Second
)

// RunsKV opens (creating if needed) the run directory bucket, kept on
// replicas servers of a JetStream cluster (0 = the bucket's current
// count, 1 for a new bucket; see [StreamOptions.Replicas]).
func RunsKV(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.KeyValue, error) {
	n, err := replicasFor(ctx, js, "KV_"+RunsBucket, replicas)
	if err != nil {
		return nil, fmt.Errorf("run directory %s: %w", RunsBucket, err)
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      RunsBucket,
		Description: "skillfleet: live runs and their coordinators",
		History:     1,
		TTL:         time.Hour,
		Replicas:    n,
	})
	if err != nil {
		return nil, replicasErr("run directory "+RunsBucket, n, err)
	}
	return kv, nil
}

// Announce puts the run's entry now and refreshes it until the returned
// stop is called, which deletes it (the run ended or stopped cleanly).
func Announce(ctx context.Context, kv jetstream.KeyValue, info RunInfo, log *slog.Logger) (stop func(), err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if info.Started.IsZero() {
		info.Started = time.Now().UTC()
	}
	key := RunToken(info.RunID)
	b, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	if _, err := kv.Put(ctx, key, b); err != nil {
		return nil, fmt.Errorf("announce run %s: %w", info.RunID, err)
	}
	actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(AnnounceEvery)
		defer t.Stop()
		for {
			select {
			case <-actx.Done():
				return
			case <-t.C:
				if _, err := kv.Put(actx, key, b); err != nil && actx.Err() == nil {
					log.Warn("refresh run announcement", "run_id", info.RunID, "err", err)
				}
			}
		}
	}()
	return func() {
		cancel()
		<-done
		dctx, dcancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer dcancel()
		_ = kv.Delete(dctx, key)
	}, nil
}

// RunTable is a worker's live view of the run directory.
type RunTable struct {
	mu     sync.RWMutex
	runs   map[string]runEntry
	notify chan struct{}
	ready  chan struct{}
	now    func() time.Time
}

type runEntry struct {
	info RunInfo
	seen time.Time
	// gone marks a run whose coordinator withdrew it (ended or stopped).
	gone bool
}

// NewRunTable returns an empty table; Watch fills it.
func NewRunTable() *RunTable {
	return &RunTable{runs: map[string]runEntry{}, notify: make(chan struct{}, 1), ready: make(chan struct{}), now: time.Now}
}

// Watch follows the bucket until ctx ends. Entries are timestamped when
// this process sees them, so no clocks need to agree.
func (rt *RunTable) Watch(ctx context.Context, kv jetstream.KeyValue) error {
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("watch run directory: %w", err)
	}
	defer func() { _ = w.Stop() }()
	readyOnce := sync.OnceFunc(func() { close(rt.ready) })
	defer readyOnce()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("run directory watch ended")
			}
			if e == nil { // initial values delivered
				readyOnce()
				continue
			}
			rt.apply(e)
		}
	}
}

func (rt *RunTable) apply(e jetstream.KeyValueEntry) {
	rt.mu.Lock()
	switch e.Operation() {
	case jetstream.KeyValueDelete, jetstream.KeyValuePurge:
		rt.runs[e.Key()] = runEntry{seen: rt.now(), gone: true}
	default:
		var info RunInfo
		if json.Unmarshal(e.Value(), &info) == nil && info.Addr != "" {
			rt.runs[e.Key()] = runEntry{info: info, seen: rt.now()}
		}
	}
	rt.mu.Unlock()
	select {
	case rt.notify <- struct{}{}:
	default:
	}
}

// Ready is closed once the bucket's current entries are loaded.
func (rt *RunTable) Ready() <-chan struct{} { return rt.ready }

// Lookup returns a run's entry by run id and whether its coordinator is
// live (its entry was refreshed recently).
func (rt *RunTable) Lookup(runID string) (info RunInfo, known, live bool) {
	rt.mu.RLock()
	e, ok := rt.runs[RunToken(runID)]
	rt.mu.RUnlock()
	if !ok {
		return RunInfo{}, false, false
	}
	return e.info, true, !e.gone && rt.now().Sub(e.seen) < StaleAfter
}

// Live returns the runs whose coordinators are live.
func (rt *RunTable) Live() []RunInfo {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	var out []RunInfo
	for _, e := range rt.runs {
		if !e.gone && rt.now().Sub(e.seen) < StaleAfter {
			out = append(out, e.info)
		}
	}
	return out
}
