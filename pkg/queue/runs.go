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
	cfg := jetstream.KeyValueConfig{
		Bucket:      RunsBucket,
		Description: "skillfleet: live runs and their coordinators",
		History:     1,
		TTL:         time.Hour,
		Replicas:    n,
	}
	kv, err := place(ctx, func(ctx context.Context) (jetstream.KeyValue, error) { return js.CreateOrUpdateKeyValue(ctx, cfg) })
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
	if _, err := retry(ctx, func(ctx context.Context) (uint64, error) { return kv.Put(ctx, key, b) }); err != nil {
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
//
// An entry ages only while the directory is known to be current: when the
// bucket does not answer (a NATS cluster electing its leader) or the watch
// lags behind the bucket, the clock of every entry stops, so a failover
// does not make live runs look abandoned.
type RunTable struct {
	mu     sync.RWMutex
	runs   map[string]runEntry
	notify chan struct{}
	ready  chan struct{}
	now    func() time.Time
	// lastRev is the bucket revision the watch delivered last.
	lastRev uint64
	// paused is how long the directory was unsure before downSince, the
	// start of the current unsure spell (zero while it is current).
	paused    time.Duration
	downSince time.Time
}

type runEntry struct {
	info RunInfo
	seen time.Time
	// pausedAt is the table's paused time when the entry was seen.
	pausedAt time.Duration
	// gone marks a run whose coordinator withdrew it (ended or stopped).
	gone bool
}

// NewRunTable returns an empty table; Watch fills it.
func NewRunTable() *RunTable {
	return &RunTable{runs: map[string]runEntry{}, notify: make(chan struct{}, 1), ready: make(chan struct{}), now: time.Now}
}

// Directory checks: how often the bucket is asked for its last revision,
// and how many checks in a row may find the watch behind before it is
// started again.
const (
	checkEvery    = time.Second
	lagsToRewatch = 5
)

// Watch follows the bucket until ctx ends. Entries are timestamped when
// this process sees them, so no clocks need to agree. A watch that ends
// or falls behind (its consumer lost with a server) is started again.
func (rt *RunTable) Watch(ctx context.Context, kv jetstream.KeyValue) error {
	readyOnce := sync.OnceFunc(func() { close(rt.ready) })
	defer readyOnce()
	rewatch := make(chan struct{}, 1)
	go rt.check(ctx, kv, rewatch)
	for ctx.Err() == nil {
		if w, err := kv.WatchAll(ctx); err == nil {
			rt.follow(ctx, w, readyOnce, rewatch)
			_ = w.Stop()
		}
		select {
		case <-ctx.Done():
		case <-time.After(checkEvery):
		}
	}
	return nil
}

// follow applies one watch's updates until it ends, ctx ends or a rewatch
// is asked for.
func (rt *RunTable) follow(ctx context.Context, w jetstream.KeyWatcher, ready func(), rewatch <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-rewatch:
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e == nil { // initial values delivered
				ready()
				continue
			}
			rt.apply(e)
		}
	}
}

// check asks the bucket for its last revision every checkEvery. The table
// is current when the bucket answers and the watch has delivered what the
// bucket held one check ago; otherwise its entries stop ageing. A watch
// behind for lagsToRewatch checks in a row is started again.
func (rt *RunTable) check(ctx context.Context, kv jetstream.KeyValue, rewatch chan<- struct{}) {
	var prev uint64
	lags := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(checkEvery):
		}
		cctx, cancel := context.WithTimeout(ctx, 2*checkEvery)
		st, err := kv.Status(cctx)
		cancel()
		var last uint64
		if b, ok := st.(*jetstream.KeyValueBucketStatus); ok && err == nil {
			last = b.StreamInfo().State.LastSeq
		} else {
			err = errors.New("no bucket status")
		}
		rt.mu.Lock()
		behind := err == nil && prev > rt.lastRev
		rt.setCurrentLocked(err == nil && !behind)
		rt.mu.Unlock()
		if behind {
			if lags++; lags >= lagsToRewatch {
				lags = 0
				select {
				case rewatch <- struct{}{}:
				default:
				}
			}
		} else {
			lags = 0
		}
		if err == nil {
			prev = last
		}
	}
}

// setCurrentLocked starts or ends an unsure spell.
func (rt *RunTable) setCurrentLocked(current bool) {
	now := rt.now()
	switch {
	case current && !rt.downSince.IsZero():
		rt.paused += now.Sub(rt.downSince)
		rt.downSince = time.Time{}
	case !current && rt.downSince.IsZero():
		rt.downSince = now
	}
}

// pausedLocked is the time the directory has been unsure so far.
func (rt *RunTable) pausedLocked() time.Duration {
	if rt.downSince.IsZero() {
		return rt.paused
	}
	return rt.paused + rt.now().Sub(rt.downSince)
}

// ageLocked is how long e has gone without a refresh while the directory
// was current.
func (rt *RunTable) ageLocked(e runEntry) time.Duration {
	return rt.now().Sub(e.seen) - (rt.pausedLocked() - e.pausedAt)
}

func (rt *RunTable) apply(e jetstream.KeyValueEntry) {
	rt.mu.Lock()
	rt.lastRev = max(rt.lastRev, e.Revision())
	switch e.Operation() {
	case jetstream.KeyValueDelete, jetstream.KeyValuePurge:
		rt.runs[e.Key()] = runEntry{seen: rt.now(), pausedAt: rt.pausedLocked(), gone: true}
	default:
		var info RunInfo
		if json.Unmarshal(e.Value(), &info) == nil && info.Addr != "" {
			rt.runs[e.Key()] = runEntry{info: info, seen: rt.now(), pausedAt: rt.pausedLocked()}
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
	defer rt.mu.RUnlock()
	e, ok := rt.runs[RunToken(runID)]
	if !ok {
		return RunInfo{}, false, false
	}
	return e.info, true, !e.gone && rt.ageLocked(e) < StaleAfter
}

// Live returns the runs whose coordinators are live.
func (rt *RunTable) Live() []RunInfo {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	var out []RunInfo
	for _, e := range rt.runs {
		if !e.gone && rt.ageLocked(e) < StaleAfter {
			out = append(out, e.info)
		}
	}
	return out
}
