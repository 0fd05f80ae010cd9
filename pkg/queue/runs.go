package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The run directory ([RunsBucket]) holds one entry per coordinator
// process, not per run: its gRPC address, the runs it serves and the sum
// of their weights ([ProcessInfo], key "proc.<process token>"). Each
// process refreshes its one entry at a fixed rate whatever the number of
// runs it serves, so what a watcher of the bucket receives grows with the
// processes, not the runs. Entries of one run each ([RunInfo], key: the
// run token) are what coordinators of wire version 2 and before write;
// readers still understand them.

// RunInfo is one live run as the directory shows it: its coordinator's
// address and its weight.
type RunInfo struct {
	RunID string `json:"run_id"`
	// Addr is the coordinator's gRPC address (HOST:PORT).
	Addr string `json:"addr"`
	// Weight is the run's share of the fleet relative to other runs (default 1).
	Weight float64 `json:"weight,omitempty"`
	// Started is when this coordinator process started.
	Started time.Time `json:"started"`
}

// ProcessInfo is a coordinator process's entry: where it listens and the
// runs it serves there. Addr and Weight have RunInfo's names, so a reader
// that knows only run entries counts the process's weight and dials its
// address.
type ProcessInfo struct {
	// Process names the process (host, pid and a random part).
	Process string `json:"process"`
	// Addr is the process's one gRPC address, for every run it serves.
	Addr string `json:"addr"`
	// Weight is the sum of the weights of Runs.
	Weight float64      `json:"weight"`
	Runs   []ProcessRun `json:"runs"`
	// Started is when the process started.
	Started time.Time `json:"started"`
}

// ProcessRun is one run a process serves.
type ProcessRun struct {
	RunID  string  `json:"run_id"`
	Weight float64 `json:"weight,omitempty"`
}

// processPrefix starts the key of a process's entry; run tokens have no
// dot, so the two kinds of key never meet.
const processPrefix = "proc."

// Announcement timing: a live coordinator process refreshes its entry
// every AnnounceEvery; an entry not refreshed for StaleAfter belongs to a
// process that is gone (crashed, or stopped without a goodbye).
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
		Description: "skillfleet: live coordinator processes and their runs",
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

// Announcer keeps one coordinator process's entry in the run directory:
// put when a run is added or removed, refreshed every AnnounceEvery,
// deleted while the process serves no run.
type Announcer struct {
	kv  jetstream.KeyValue
	key string
	log *slog.Logger

	mu      sync.Mutex
	info    ProcessInfo
	runs    map[string]float64
	gen     uint64 // changes to runs so far
	present bool   // the entry is in the bucket (as far as we know)

	// putMu orders puts; putGen is the generation the last put carried.
	putMu  sync.Mutex
	putGen uint64
}

// NewAnnouncer returns the keeper of the entry of the process named
// process, which listens on addr. It starts nothing and puts nothing until
// the first run is added; [Announcer.Run] refreshes the entry.
func NewAnnouncer(kv jetstream.KeyValue, process, addr string, log *slog.Logger) *Announcer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Announcer{
		kv: kv, key: ProcessKey(process), log: log, runs: map[string]float64{},
		info: ProcessInfo{Process: process, Addr: addr, Started: time.Now().UTC()},
	}
}

// ProcessKey is the directory key of a process's entry.
func ProcessKey(process string) string { return processPrefix + RunToken(process) }

// Key is this process's directory key.
func (a *Announcer) Key() string { return a.key }

// Add lists a run (weight <= 0 counts as 1) and returns once an entry
// listing it is in the bucket, so a worker that looks the run up finds it
// before its first task is published.
func (a *Announcer) Add(ctx context.Context, runID string, weight float64) error {
	if weight <= 0 {
		weight = 1
	}
	a.mu.Lock()
	a.runs[runID] = weight
	a.gen++
	gen := a.gen
	a.mu.Unlock()
	if err := a.flush(ctx, gen, true); err != nil {
		return fmt.Errorf("announce run %s: %w", runID, err)
	}
	return nil
}

// Remove withdraws a run; the entry without it is put at once (deleted
// when it was the last run).
func (a *Announcer) Remove(runID string) {
	a.mu.Lock()
	delete(a.runs, runID)
	a.gen++
	gen := a.gen
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := a.flush(ctx, gen, false); err != nil {
		a.log.Warn("withdraw run from the run directory", "run_id", runID, "err", err)
	}
}

// Weight is the sum of the weights of the runs listed now.
func (a *Announcer) Weight() float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	sum := 0.0
	for _, w := range a.runs {
		sum += w
	}
	return sum
}

// flush puts the entry as of generation gen or later unless a put already
// carried it, so concurrent changes share one put; patient retries the put
// through a NATS cluster's failover.
func (a *Announcer) flush(ctx context.Context, gen uint64, patient bool) error {
	a.putMu.Lock()
	defer a.putMu.Unlock()
	if a.putGen >= gen {
		return nil
	}
	if patient {
		_, err := retry(ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, a.put(ctx) })
		return err
	}
	return a.put(ctx)
}

// put writes the current entry (or deletes it when no run is listed);
// putMu is held.
func (a *Announcer) put(ctx context.Context) error {
	a.mu.Lock()
	gen := a.gen
	info := a.info
	info.Runs = make([]ProcessRun, 0, len(a.runs))
	info.Weight = 0
	for id, w := range a.runs {
		info.Runs = append(info.Runs, ProcessRun{RunID: id, Weight: w})
		info.Weight += w
	}
	present := a.present
	a.mu.Unlock()
	sort.Slice(info.Runs, func(i, j int) bool { return info.Runs[i].RunID < info.Runs[j].RunID })
	var err error
	switch {
	case len(info.Runs) > 0:
		var b []byte
		if b, err = json.Marshal(info); err == nil {
			_, err = a.kv.Put(ctx, a.key, b)
		}
		present = err == nil || present
	case present:
		err = a.kv.Delete(ctx, a.key)
		present = err != nil
	}
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.present = present
	a.mu.Unlock()
	a.putGen = max(a.putGen, gen)
	return nil
}

// Run puts the entry every AnnounceEvery while it lists a run, until ctx
// ends; it then withdraws every run (see [Announcer.Stop]) and returns
// nil.
func (a *Announcer) Run(ctx context.Context) error {
	defer a.Stop()
	t := time.NewTicker(AnnounceEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		a.mu.Lock()
		listed := len(a.runs) > 0
		a.mu.Unlock()
		if !listed {
			continue
		}
		a.putMu.Lock()
		if err := a.put(ctx); err != nil && ctx.Err() == nil {
			a.log.Warn("refresh the run directory entry", "process", a.info.Process, "err", err)
		}
		a.putMu.Unlock()
	}
}

// Stop withdraws every run and deletes the entry (Run does when its
// context ends; an announcer that never ran is stopped by calling it).
func (a *Announcer) Stop() {
	a.mu.Lock()
	a.runs = map[string]float64{}
	a.gen++
	gen := a.gen
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	a.putMu.Lock()
	defer a.putMu.Unlock()
	if a.putGen < gen {
		_ = a.kv.Delete(ctx, a.key)
		a.putGen = gen
	}
}

// Announce lists one run in a directory entry of its own process (named
// after the run) until the returned stop is called, which deletes it and
// returns once the refreshes have ended.
func Announce(ctx context.Context, kv jetstream.KeyValue, info RunInfo, log *slog.Logger) (stop func(), err error) {
	a := NewAnnouncer(kv, info.RunID, info.Addr, log)
	if err := a.Add(ctx, info.RunID, info.Weight); err != nil {
		a.Stop()
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { _ = a.Run(rctx); close(done) }()
	return func() { cancel(); <-done }, nil
}

// RunTable is a process's live view of the run directory: workers look
// runs up in it, coordinators sum the weights of other processes' runs.
//
// An entry ages only while the directory is known to be current: when the
// bucket does not answer (a NATS cluster electing its leader) or the watch
// lags behind the bucket, the clock of every entry stops, so a failover
// does not make live runs look abandoned.
type RunTable struct {
	mu sync.RWMutex
	// entries are the bucket's entries by key: processes and runs.
	entries map[string]dirEntry
	// byRun is the key of the process entry that last listed each run.
	byRun  map[string]string
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

// dirEntry is one key of the directory as this process last saw it.
type dirEntry struct {
	// run is set for a run's own entry, proc for a process entry.
	run  RunInfo
	proc *ProcessInfo
	// listed are the run tokens proc lists.
	listed map[string]ProcessRun
	seen   time.Time
	// pausedAt is the table's paused time when the entry was seen.
	pausedAt time.Duration
	// gone marks an entry its coordinator withdrew (ended or stopped).
	gone bool
}

// NewRunTable returns an empty table; Watch fills it.
func NewRunTable() *RunTable {
	return &RunTable{entries: map[string]dirEntry{}, byRun: map[string]string{}, notify: make(chan struct{}, 1), ready: make(chan struct{}), now: time.Now}
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
// Watch returns once its goroutines have ended.
func (rt *RunTable) Watch(ctx context.Context, kv jetstream.KeyValue) error {
	readyOnce := sync.OnceFunc(func() { close(rt.ready) })
	defer readyOnce()
	rewatch := make(chan struct{}, 1)
	var checks sync.WaitGroup
	defer checks.Wait()
	checks.Go(func() { rt.check(ctx, kv, rewatch) })
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
func (rt *RunTable) ageLocked(e dirEntry) time.Duration {
	return rt.now().Sub(e.seen) - (rt.pausedLocked() - e.pausedAt)
}

func (rt *RunTable) apply(e jetstream.KeyValueEntry) {
	rt.mu.Lock()
	rt.lastRev = max(rt.lastRev, e.Revision())
	key := e.Key()
	now, paused := rt.now(), rt.pausedLocked()
	switch {
	case e.Operation() == jetstream.KeyValueDelete || e.Operation() == jetstream.KeyValuePurge:
		old := rt.entries[key]
		rt.entries[key] = dirEntry{proc: old.proc, listed: old.listed, seen: now, pausedAt: paused, gone: true}
	case strings.HasPrefix(key, processPrefix):
		var info ProcessInfo
		if json.Unmarshal(e.Value(), &info) == nil && info.Addr != "" {
			listed := make(map[string]ProcessRun, len(info.Runs))
			for _, r := range info.Runs {
				tok := RunToken(r.RunID)
				listed[tok] = r
				if cur, ok := rt.byRun[tok]; !ok || cur == key || !rt.listsLocked(cur, tok) || rt.entries[cur].proc.Started.Before(info.Started) {
					rt.byRun[tok] = key
				}
			}
			rt.entries[key] = dirEntry{proc: &info, listed: listed, seen: now, pausedAt: paused}
		}
	default:
		var info RunInfo
		if json.Unmarshal(e.Value(), &info) == nil && info.Addr != "" {
			rt.entries[key] = dirEntry{run: info, seen: now, pausedAt: paused}
		}
	}
	rt.mu.Unlock()
	select {
	case rt.notify <- struct{}{}:
	default:
	}
}

// listsLocked reports whether the process entry at key is live and lists
// the run token tok.
func (rt *RunTable) listsLocked(key, tok string) bool {
	e, ok := rt.entries[key]
	if !ok || e.gone || e.proc == nil || rt.ageLocked(e) >= StaleAfter {
		return false
	}
	_, listed := e.listed[tok]
	return listed
}

// liveLocked reports whether e was refreshed recently and not withdrawn.
func (rt *RunTable) liveLocked(e dirEntry) bool {
	return !e.gone && rt.ageLocked(e) < StaleAfter
}

// Ready is closed once the bucket's current entries are loaded.
func (rt *RunTable) Ready() <-chan struct{} { return rt.ready }

// Lookup returns a run's coordinator by run id, whether the directory
// knows the run (it was listed since this process watches), and whether
// its coordinator is live: its process's entry was refreshed recently and
// still lists it.
func (rt *RunTable) Lookup(runID string) (info RunInfo, known, live bool) {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	tok := RunToken(runID)
	if key, ok := rt.byRun[tok]; ok {
		e := rt.entries[key]
		r, listed := e.listed[tok]
		if listed && rt.liveLocked(e) {
			return RunInfo{RunID: runID, Addr: e.proc.Addr, Weight: r.Weight, Started: e.proc.Started}, true, true
		}
		if re, ok := rt.entries[tok]; ok && rt.liveLocked(re) {
			return re.run, true, true
		}
		return RunInfo{RunID: runID, Addr: e.proc.Addr}, true, false
	}
	e, ok := rt.entries[tok]
	if !ok {
		return RunInfo{}, false, false
	}
	return e.run, true, rt.liveLocked(e)
}

// Weights is the sum of the weights of every live run except those of
// the process entry at skip (a process counts its own runs itself).
func (rt *RunTable) Weights(skip string) float64 {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	sum := 0.0
	for key, e := range rt.entries {
		if key == skip || !rt.liveLocked(e) {
			continue
		}
		if e.proc != nil {
			sum += e.proc.Weight
			continue
		}
		w := e.run.Weight
		if w <= 0 {
			w = 1
		}
		sum += w
	}
	return sum
}

// Live returns the runs whose coordinators are live.
func (rt *RunTable) Live() []RunInfo {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	var out []RunInfo
	for key, e := range rt.entries {
		if !rt.liveLocked(e) {
			continue
		}
		if e.proc == nil {
			out = append(out, e.run)
			continue
		}
		for tok, r := range e.listed {
			if rt.byRun[tok] == key {
				out = append(out, RunInfo{RunID: r.RunID, Addr: e.proc.Addr, Weight: r.Weight, Started: e.proc.Started})
			}
		}
	}
	return out
}
