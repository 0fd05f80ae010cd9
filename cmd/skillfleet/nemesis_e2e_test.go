package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillfleet/skillfleet/coordinator/campaign"
	"github.com/skillfleet/skillfleet/pkg/queue"
)

// The nemesis test: a campaign served by two campaign processes and three
// worker processes on a three-node NATS cluster (real nats-server
// processes on loopback), run once undisturbed and once under a seeded
// random schedule of faults: kill -9 and restart of workers, of a campaign
// member, of the NATS node leading the task stream and of the one leading
// the run directory's bucket; a partition of one NATS node and of one
// worker, made by pausing the process (SIGSTOP, then SIGCONT: its peers
// see a silent process, as behind a cut link); and a sim-llm answering
// 500s, malformed replies and stalls throughout. docs/deploy.md ("Every
// fault at once: the nemesis test") says how
// to replay a seed and how to run a long schedule
// (scripts/bench/nemesis.sh).
//
//	SKILLFLEET_NEMESIS_SEED      the schedule's seed (default: drawn, and printed)
//	SKILLFLEET_NEMESIS_DURATION  how long the schedule injects faults (default: the CI schedule)
//	SKILLFLEET_NEMESIS_CELLS     cells in the campaign (default 8, and 8 a minute of a long schedule)

// nemesisProc is a process of the nemesis fleet whose end is watched: a
// process that ends without the nemesis having killed it is a death the
// test reports.
type nemesisProc struct {
	name   string
	p      *proc
	exited chan struct{}
	err    error
	killed bool
}

func watchProc(name string, p *proc) *nemesisProc {
	w := &nemesisProc{name: name, p: p, exited: make(chan struct{})}
	go func() {
		w.err = <-p.done
		p.done <- w.err // startCmdIn's cleanup waits on it too
		close(w.exited)
	}()
	return w
}

func (w *nemesisProc) alive() bool {
	select {
	case <-w.exited:
		return false
	default:
		return true
	}
}

// kill9 ends the process with SIGKILL and waits for it.
func (w *nemesisProc) kill9(t *testing.T) {
	t.Helper()
	w.killed = true
	_ = w.p.cmd.Process.Signal(syscall.SIGCONT) // a paused process is killed all the same; no harm either way
	if err := w.p.cmd.Process.Signal(syscall.SIGKILL); err != nil && w.alive() {
		t.Fatalf("kill %s: %v", w.name, err)
	}
	<-w.exited
}

// drain keeps reading a process's stdout, so that it never blocks on a
// full pipe, into a buffer for the failure report.
func drain(p *proc) *syncBuf {
	b := &syncBuf{}
	go func() { _, _ = io.Copy(b, p.stdout) }()
	return b
}

// nemesisEnv reads the test's settings from the environment.
func nemesisEnv(t *testing.T) (seed uint64, duration time.Duration, cells int) {
	t.Helper()
	seed = rand.Uint64() % 1_000_000
	if s := os.Getenv("SKILLFLEET_NEMESIS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SKILLFLEET_NEMESIS_SEED=%q: not a non-negative integer", s)
		}
		seed = v
	}
	if s := os.Getenv("SKILLFLEET_NEMESIS_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("SKILLFLEET_NEMESIS_DURATION=%q: not a positive duration (e.g. 5m)", s)
		}
		duration = d
	}
	cells = 8
	if duration > 0 {
		// Eight cells for every minute of schedule (started) keep the
		// campaign going for about as long as faults are injected.
		cells = 8 * int((duration+time.Minute-1)/time.Minute)
	}
	if s := os.Getenv("SKILLFLEET_NEMESIS_CELLS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 2 || n%2 != 0 {
			t.Fatalf("SKILLFLEET_NEMESIS_CELLS=%q: not an even number of at least 2", s)
		}
		cells = n
	}
	return seed, duration, cells
}

// nemesisFleet is the cluster, the worker processes and the campaign
// members of one campaign, with what the nemesis did to them.
type nemesisFleet struct {
	t       *testing.T
	cl      *natsCluster
	js      jetstream.JetStream
	nodes   map[string]*nemesisProc
	workers []*nemesisProc
	members []*nemesisProc
	outs    map[string]*syncBuf // member name -> its stdout
	spec    string
	out     string
	sim     string
	dead    []*nemesisProc // every process the nemesis ended, and those it replaced
	started time.Time
}

const (
	nemesisWorkerSlots = 12 + 8
	nemesisLeaseTTL    = 3 * time.Second
)

func (f *nemesisFleet) startWorker(i int) *nemesisProc {
	p := start(f.t, "worker", "--nats", f.cl.urls, "--nats-replicas", "3", "--concurrency", "12",
		"--optimizer-concurrency", "8", "--log-level", "warn")
	return watchProc(fmt.Sprintf("worker %d", i+1), p)
}

// startMember starts campaign member name and waits until it has
// opened the campaign's state and printed its start line.
func (f *nemesisFleet) startMember(name string) *nemesisProc {
	f.t.Helper()
	m, err := f.startMemberErr(name)
	if err != nil {
		f.t.Fatal(err)
	}
	return m
}

func (f *nemesisFleet) startMemberErr(name string) (*nemesisProc, error) {
	p := startMember(f.t, f.spec, f.out, f.cl.urls, name, "--nats-replicas", "3", "--state-replicas", "3",
		"--log-level", "warn",
		"--set", "runtime.sim_llm=false", "--set", "model.optimizer_base_url="+f.sim, "--set", "model.target_base_url="+f.sim)
	first := make(chan error, 1)
	go func() {
		for {
			s, err := p.stdout.ReadString('\n')
			if err != nil {
				first <- err
				return
			}
			if strings.HasPrefix(s, "skillfleet: campaign ") {
				first <- nil
				return
			}
		}
	}()
	select {
	case err := <-first:
		if err != nil {
			werr := <-p.done
			p.done <- werr
			return nil, fmt.Errorf("member %s ended (%v) before its campaign started: %v\n%s", name, werr, err, p.stderr.String())
		}
	case <-time.After(2 * time.Minute):
		return nil, fmt.Errorf("member %s: no campaign start line in 2 minutes\n%s", name, p.stderr.String())
	}
	m := watchProc("member "+name, p)
	f.outs[name] = drain(p)
	return m, nil
}

func (f *nemesisFleet) restartNode(name string) {
	node := f.cl.node(f.t, name)
	f.cl.start(f.t, node)
	f.nodes[name] = watchProc("nats "+name, node.p)
}

// runCampaign starts the two members on a campaign of cells against the
// sim-llm at sim and returns once both are up.
func (f *nemesisFleet) runCampaign(name string, cells []testCell, sim string) {
	f.spec = writeMemberCampaign(f.t, name, cells, nil, 4, "")
	f.out = filepath.Join(f.t.TempDir(), name)
	f.sim = sim
	f.outs = map[string]*syncBuf{}
	// One after the other: each creates the campaign's state bucket
	// if it is not there yet.
	f.members = []*nemesisProc{f.startMember("a")}
	f.members = append(f.members, f.startMember("b"))
	f.started = time.Now()
}

// wait waits for both members to end and fails unless both exit 0.
func (f *nemesisFleet) wait(timeout time.Duration) {
	f.t.Helper()
	deadline := time.After(timeout)
	for _, m := range f.members {
		select {
		case <-m.exited:
			if m.err != nil {
				f.t.Fatalf("%s: %v\n%s\n%s", m.name, m.err, f.outs[strings.TrimPrefix(m.name, "member ")].String(), m.p.stderr.String())
			}
		case <-deadline:
			f.t.Fatalf("campaign %s not done %s after it started\n%s", filepath.Base(f.out), timeout, f.cellStates())
		}
	}
}

func (f *nemesisFleet) cellStates() string {
	var b strings.Builder
	c, err := campaign.Read(f.out)
	if err != nil {
		return err.Error()
	}
	for _, cs := range c.Cells {
		fmt.Fprintf(&b, "cell %s: %s (member %s) %s\n", cs.Name, cs.State, cs.Member, cs.Error)
	}
	return b.String()
}

// leader is the current leader of a stream, waiting up to a minute for
// one other than not (the node just lost) to be elected; it returns the
// leader and the time from since.
func (f *nemesisFleet) leader(ctx context.Context, stream, not string, since time.Time) (string, time.Duration) {
	f.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if l, _, err := streamState(ctx, f.js, stream); err == nil && l != "" && l != not {
			return l, time.Since(since)
		}
		time.Sleep(50 * time.Millisecond)
	}
	f.t.Fatalf("no leader of %s for a minute (lost: %q)", stream, not)
	return "", 0
}

// streams are the replicated streams whose replicas must be current
// before the nemesis takes another node away.
func (f *nemesisFleet) streams(campaignName string) []string {
	return []string{queue.StreamName, "KV_" + queue.RunsBucket, "KV_" + campaign.BucketName(campaignName)}
}

// caughtUp waits until every replica of every stream is current again.
func (f *nemesisFleet) caughtUp(ctx context.Context, streams []string) time.Duration {
	f.t.Helper()
	began := time.Now()
	for _, s := range streams {
		for {
			if _, cur, err := streamState(ctx, f.js, s); err == nil && cur {
				break
			}
			if time.Since(began) > 2*time.Minute {
				f.t.Fatalf("the replicas of %s not current 2 minutes after a node came back", s)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return time.Since(began)
}

func startNemesisFleet(t *testing.T) *nemesisFleet {
	t.Helper()
	f := &nemesisFleet{t: t, cl: startNatsCluster(t, 3), nodes: map[string]*nemesisProc{}}
	for _, n := range f.cl.nodes {
		f.nodes[n.name] = watchProc("nats "+n.name, n.p)
	}
	// Short pings: the test's own connection leaves a paused node within
	// seconds, as the fleet's do.
	nc, err := nats.Connect(f.cl.urls, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond),
		nats.PingInterval(time.Second), nats.MaxPingsOutstanding(2))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if f.js, err = jetstream.New(nc); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		f.workers = append(f.workers, f.startWorker(i))
	}
	return f
}

// The faults the schedule draws, on two tracks that run at once: the NATS
// track takes nodes away one at a time (a majority must stay), the process
// track kills and pauses skillfleet processes. Every schedule has each
// fault once, in a seeded order on its track; a long schedule then draws
// more on both tracks until its duration is spent.
const (
	faultKillWorker       = "kill -9 worker"
	faultKillMember       = "kill -9 campaign member"
	faultPauseWorker      = "partition worker"
	faultKillStreamLeader = "kill -9 task stream leader"
	faultKillBucketLeader = "kill -9 run bucket leader"
	faultPauseNode        = "partition NATS node"
)

var (
	natsFaults    = []string{faultKillStreamLeader, faultKillBucketLeader, faultPauseNode}
	processFaults = []string{faultKillWorker, faultKillMember, faultPauseWorker}
	nemesisFaults = append(slices.Clone(processFaults), natsFaults...)
)

// nemesis injects one schedule's faults into a running campaign.
type nemesis struct {
	f        *nemesisFleet
	seed     uint64
	campaign string
	// growth is when the campaign's journals grew: a NATS fault ends
	// only once a result is recorded after its recovery.
	growth *journalGrowth

	mu    sync.Mutex // guards what follows and f's process lists
	log   []string
	count map[string]int
	// elections are the NATS leader elections the faults caused: from the
	// node's loss to a new leader of a stream it led.
	elections []time.Duration
	// disruptions counts the faults after which work in flight may be
	// done again (every fault but the sim-llm's).
	disruptions int
}

func (n *nemesis) logf(format string, args ...any) {
	s := fmt.Sprintf("%7s  ", time.Since(n.f.started).Round(100*time.Millisecond)) + fmt.Sprintf(format, args...)
	n.mu.Lock()
	n.log = append(n.log, s)
	n.mu.Unlock()
	n.f.t.Log(s)
}

// between draws a duration in [lo, hi).
func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.Int64N(int64(hi-lo)))
}

// running reports whether some member still serves the campaign.
func (n *nemesis) running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, m := range n.f.members {
		if m.alive() {
			return true
		}
	}
	return false
}

// sleep waits d, or less if the campaign ends first; it reports whether
// the campaign still runs.
func (n *nemesis) sleep(d time.Duration) bool {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if !n.running() {
			return false
		}
		time.Sleep(min(100*time.Millisecond, time.Until(end)))
	}
	return n.running()
}

func (n *nemesis) died(p *nemesisProc) {
	n.mu.Lock()
	n.f.dead = append(n.f.dead, p)
	n.mu.Unlock()
}

// led are the streams (of those the nemesis watches) that node leads.
func (n *nemesis) led(ctx context.Context, node string) []string {
	var out []string
	for _, s := range n.f.streams(n.campaign) {
		if l, _, err := streamState(ctx, n.f.js, s); err == nil && l == node {
			out = append(out, s)
		}
	}
	return out
}

// lose takes a NATS node away (killed, or paused when pause is set), holds
// it away, brings it back, waits until every replica is current again and
// then until the fleet records a result (see progress).
func (n *nemesis) lose(ctx context.Context, node string, pause bool, hold time.Duration) {
	t := n.f.t
	led := n.led(ctx, node)
	p := n.f.nodes[node]
	at := time.Now()
	if pause {
		if err := p.p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	} else {
		p.kill9(t)
		n.died(p)
	}
	for _, s := range led {
		l, d := n.f.leader(ctx, s, node, at)
		n.mu.Lock()
		n.elections = append(n.elections, d)
		n.mu.Unlock()
		n.logf("    %s: %s leads after %s", s, l, d.Round(10*time.Millisecond))
	}
	n.sleep(max(hold-time.Since(at), 0))
	if pause {
		if err := p.p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
	} else {
		n.f.restartNode(node)
	}
	cu := n.f.caughtUp(ctx, n.f.streams(n.campaign))
	n.logf("    %s back after %s; every replica current %s later", node, time.Since(at).Round(100*time.Millisecond), cu.Round(100*time.Millisecond))
	n.progress(time.Now())
}

// progressWait bounds the wait for a result after a NATS node's recovery:
// far past any pause the test allows, which its check then reports.
const progressWait = 2 * time.Minute

// progress waits until a result is recorded after since (a NATS node's
// recovery: every replica current again), or the campaign ends. The NATS
// track's next fault waits for it: the pause check bounds a pause by the
// slowest single recovery plus nemesisMargin, which assumes that the
// fleet makes progress between two recoveries. Without the wait, faults
// that come back to back — each before the fleet has recorded a result
// since the last recovery — add their elections up in one pause (seed 23
// once paused 20.7 s across three leader changes, against 18.3 s).
func (n *nemesis) progress(since time.Time) {
	for n.growth.after(since).IsZero() {
		if !n.running() {
			return
		}
		if time.Since(since) > progressWait {
			n.logf("    no result recorded %s after the recovery; the next NATS fault comes anyway", progressWait)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	n.logf("    a result recorded %s after it", n.growth.after(since).Sub(since).Round(100*time.Millisecond))
}

// inject runs one fault to its end (the process back, the node caught
// up). The NATS faults run on the test's goroutine; the process faults
// on another, so they report trouble with Errorf.
func (n *nemesis) inject(ctx context.Context, rng *rand.Rand, kind string) {
	t := n.f.t
	n.mu.Lock()
	n.count[kind]++
	n.disruptions++
	n.mu.Unlock()
	switch kind {
	case faultKillWorker, faultPauseWorker:
		i := rng.IntN(len(n.f.workers))
		n.mu.Lock()
		w := n.f.workers[i]
		n.mu.Unlock()
		if kind == faultKillWorker {
			hold := between(rng, 500*time.Millisecond, 3*time.Second)
			n.logf("%s %d, back after %s", kind, i+1, hold.Round(100*time.Millisecond))
			w.kill9(t)
			n.died(w)
			time.Sleep(hold)
			w = n.f.startWorker(i)
			n.mu.Lock()
			n.f.workers[i] = w
			n.mu.Unlock()
			return
		}
		hold := between(rng, 2*time.Second, 6*time.Second)
		n.logf("%s %d (SIGSTOP) for %s", kind, i+1, hold.Round(100*time.Millisecond))
		if err := w.p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Errorf("pause %s: %v", w.name, err)
			return
		}
		time.Sleep(hold)
		if err := w.p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Errorf("resume %s: %v", w.name, err)
		}
	case faultKillMember:
		i := rng.IntN(len(n.f.members))
		n.mu.Lock()
		m := n.f.members[i]
		n.mu.Unlock()
		hold := between(rng, 500*time.Millisecond, 2*nemesisLeaseTTL)
		n.logf("%s %s, back after %s", kind, m.name, hold.Round(100*time.Millisecond))
		if !m.alive() {
			n.logf("    %s had already ended: the campaign is done", m.name)
			return
		}
		m.kill9(t)
		n.died(m)
		time.Sleep(hold)
		m2, err := n.f.startMemberErr(strings.TrimPrefix(m.name, "member "))
		if err != nil {
			t.Errorf("restart of %s after kill -9: %v", m.name, err)
			return
		}
		n.mu.Lock()
		n.f.members[i] = m2
		n.mu.Unlock()
	case faultKillStreamLeader, faultKillBucketLeader, faultPauseNode:
		var node string
		switch kind {
		case faultKillStreamLeader:
			node, _ = n.f.leader(ctx, queue.StreamName, "", time.Now())
		case faultKillBucketLeader:
			node, _ = n.f.leader(ctx, "KV_"+queue.RunsBucket, "", time.Now())
		default:
			node = n.f.cl.nodes[rng.IntN(len(n.f.cl.nodes))].name
		}
		pause := kind == faultPauseNode
		hold := between(rng, 2*time.Second, 5*time.Second)
		if pause {
			n.logf("%s %s (SIGSTOP) for %s", kind, node, hold.Round(100*time.Millisecond))
		} else {
			n.logf("%s: %s, back after %s", kind, node, hold.Round(100*time.Millisecond))
		}
		n.lose(ctx, node, pause, hold)
	default:
		t.Fatalf("unknown fault %q", kind)
	}
}

// track injects one track's faults: each once in a seeded order, then,
// until duration has passed since the campaign started, more drawn at
// random; between faults a drawn gap. It stops when the campaign ends.
func (n *nemesis) track(ctx context.Context, rng *rand.Rand, kinds []string, duration time.Duration) {
	order := slices.Clone(kinds)
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	for i := 0; ; i++ {
		var kind string
		switch {
		case i < len(order):
			kind = order[i]
		case time.Since(n.f.started) < duration:
			kind = kinds[rng.IntN(len(kinds))]
		default:
			return
		}
		if !n.sleep(between(rng, 500*time.Millisecond, 2500*time.Millisecond)) {
			n.logf("the campaign ended; %s and what follows on its track not injected", kind)
			return
		}
		n.inject(ctx, rng, kind)
	}
}

// run runs both tracks, each with its own generator drawn from the seed,
// and returns when both have ended.
func (n *nemesis) run(ctx context.Context, duration time.Duration) {
	var wg sync.WaitGroup
	wg.Go(func() { n.track(ctx, rand.New(rand.NewPCG(n.seed, 2)), processFaults, duration) })
	n.track(ctx, rand.New(rand.NewPCG(n.seed, 1)), natsFaults, duration)
	wg.Wait()
}

// TestNemesis: see the comment at the top of this file. The invariants,
// checked once the disturbed campaign has ended:
//   - every cell ends done with the events.jsonl and best_skill.md of the
//     same cell run alone;
//   - every task id is recorded once in each cell's journal;
//   - the sim-llm bills at most the undisturbed campaign's calls plus its
//     hedging ceiling (nemesisHedge), one call per malformed reply (each is
//     retried) and, for each fault that takes a process or node away, the
//     fleet's slots (the work in flight that may be done again);
//   - no pause between recorded results (all cells together) outlasts the
//     slowest recovery the schedule caused (a NATS leader election, or the
//     members' lease TTL when a member was killed) by more than
//     nemesisMargin. The bound is for one recovery at a time: the NATS
//     track's next fault waits until every replica is current and the
//     fleet has recorded a result since (see progress);
//   - every process the nemesis did not kill is still running (workers,
//     NATS nodes, the sim-llm), and every campaign member exits 0.
func TestNemesis(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster and a fleet and runs two campaigns")
	}
	t.Parallel()
	seed, duration, ncells := nemesisEnv(t)
	// Printed at once (a hung test still shows it) and again in the log.
	fmt.Fprintf(os.Stderr, "nemesis: seed %d (replay: SKILLFLEET_NEMESIS_SEED=%d)\n", seed, seed)
	t.Logf("nemesis: seed %d (replay: SKILLFLEET_NEMESIS_SEED=%d), %d cells", seed, seed, ncells)
	seeds := make([]string, ncells/2)
	for i := range seeds {
		seeds[i] = strconv.Itoa(i + 1)
	}
	cells := demoCells("", seeds...)
	// The references first: each cell alone, all-in-one.
	for _, c := range cells {
		aloneRef(t, c.sets...)
	}
	f := startNemesisFleet(t)

	// The undisturbed campaign: the same fleet and latency, no faults.
	const latency = "80ms"
	clean := simServer(t, "--latency", latency)
	f.runCampaign("nemesis-ref", cells, clean)
	f.wait(10 * time.Minute)
	undisturbedWall := time.Since(f.started)
	for _, c := range cells {
		dir := filepath.Join(f.out, "cells", c.name)
		sameDecisions(t, "undisturbed "+c.name, dir, aloneRef(t, c.sets...))
		recordedOnce(t, "undisturbed "+c.name, dir)
	}
	undisturbed := settledBill(t, clean)
	t.Logf("undisturbed campaign: %d cells in %s, %d calls billed", len(cells), undisturbedWall.Round(100*time.Millisecond), undisturbed.Billed)
	if t.Failed() {
		return
	}

	// The disturbed campaign: a sim-llm that fails calls, and the schedule.
	faulty := simServer(t, "--latency", latency, "--fault-seed", strconv.FormatUint(seed, 10),
		"--fault-500", "0.01", "--fault-malformed", "0.01", "--stall-rate", "0.002", "--stall-for", "1m")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const name = "nemesis"
	f.runCampaign(name, cells, faulty)
	var growth journalGrowth
	go growth.watch(ctx, f.out)
	n := &nemesis{f: f, seed: seed, campaign: name, count: map[string]int{}, growth: &growth}
	n.run(ctx, duration)
	f.wait(15 * time.Minute)
	wall := time.Since(f.started)
	cancel()
	bill := settledBill(t, faulty)

	// Every fault ran while the campaign did.
	for _, k := range nemesisFaults {
		if n.count[k] == 0 {
			t.Errorf("the campaign ended before the schedule's %q: it shows nothing of that fault", k)
		}
	}
	// The cells.
	identical := 0
	c, err := campaign.Read(f.out)
	if err != nil {
		t.Fatal(err)
	}
	for i, cell := range cells {
		if c.Cells[i].State != campaign.StateDone {
			t.Errorf("cell %s: %s (%s)", cell.name, c.Cells[i].State, c.Cells[i].Error)
			continue
		}
		dir := filepath.Join(f.out, "cells", cell.name)
		before := t.Failed()
		ref := aloneRef(t, cell.sets...)
		sameDecisions(t, cell.name, dir, ref)
		recordedOnce(t, cell.name, dir)
		if !t.Failed() || before {
			identical++
		} else {
			t.Logf("cell %s: %s", cell.name, firstDifference(t, filepath.Join(dir, "events.jsonl"), filepath.Join(ref, "events.jsonl")))
			keepCell(t, seed, cell.name, dir, ref)
		}
	}
	// The bill.
	slack := int64(n.disruptions)*3*nemesisWorkerSlots + bill.Faults["malformed"] + int64(float64(undisturbed.Billed)*nemesisHedge)
	// The pauses.
	slowest := slices.Max(append(slices.Clone(n.elections), 0))
	recovery := slowest
	if n.count[faultKillMember] > 0 {
		recovery = max(recovery, nemesisLeaseTTL)
	}
	gap, at := growth.longest()
	// Deaths.
	var died []string
	for _, p := range append(slices.Collect(maps.Values(f.nodes)), f.workers...) {
		if !p.alive() {
			died = append(died, fmt.Sprintf("%s (%v)\n%s", p.name, p.err, p.p.stderr.String()))
		}
	}
	faults := 0
	for _, k := range nemesisFaults {
		faults += n.count[k]
	}
	t.Logf("nemesis summary: seed %d; %d cells, %d identical to the cell alone; %d faults (%s) + sim-llm %v; "+
		"longest pause %s (at %s; slowest election %s, recovery bound %s + %s); billed %d calls vs %d undisturbed (%+.1f%%, bound +%d); wall %s vs %s undisturbed",
		seed, len(cells), identical, faults, n.counts(), bill.Faults, gap.Round(10*time.Millisecond), at.Sub(f.started).Round(100*time.Millisecond),
		slowest.Round(10*time.Millisecond), recovery.Round(10*time.Millisecond), nemesisMargin,
		bill.Billed, undisturbed.Billed, 100*float64(bill.Billed-undisturbed.Billed)/float64(undisturbed.Billed), slack,
		wall.Round(100*time.Millisecond), undisturbedWall.Round(100*time.Millisecond))
	if bill.Billed > undisturbed.Billed+slack {
		t.Errorf("the sim-llm billed %d calls, more than the undisturbed campaign's %d plus %d for %d disruptions, %d malformed replies and hedging",
			bill.Billed, undisturbed.Billed, slack, n.disruptions, bill.Faults["malformed"])
	}
	if gap > recovery+nemesisMargin {
		t.Errorf("results stalled %s (from %s into the campaign), longer than the slowest recovery (%s) plus %s", gap, at.Sub(f.started), recovery, nemesisMargin)
	}
	if len(died) > 0 {
		t.Errorf("processes the nemesis did not kill ended:\n%s", strings.Join(died, "\n"))
	}
	if t.Failed() {
		t.Logf("schedule (seed %d):\n%s\ncells:\n%s", seed, strings.Join(n.log, "\n"), f.cellStates())
		for name, o := range f.outs {
			t.Logf("member %s stdout:\n%s", name, o.String())
		}
		for _, p := range append(slices.Clone(f.members), f.dead...) {
			t.Logf("%s stderr:\n%s", p.name, p.p.stderr.String())
		}
	}
}

const (
	// nemesisMargin is what a pause in recorded results may last beyond
	// the slowest recovery the schedule caused.
	nemesisMargin = 10 * time.Second
	// nemesisHedge is runtime.hedge_max_extra: the share of calls a run
	// may hedge, which stragglers and stalls make it spend.
	nemesisHedge = 0.05
)

func (n *nemesis) counts() string {
	var parts []string
	for _, k := range nemesisFaults {
		parts = append(parts, fmt.Sprintf("%s x%d", k, n.count[k]))
	}
	return strings.Join(parts, ", ")
}

// firstDifference says where the events of a cell and of the cell alone
// part: the first line that differs, with both versions.
func firstDifference(t *testing.T, got, ref string) string {
	t.Helper()
	g := strings.Split(string(readFile(t, got)), "\n")
	r := strings.Split(string(readFile(t, ref)), "\n")
	for i := 0; i < max(len(g), len(r)); i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(r) {
			b = r[i]
		}
		if a != b {
			return fmt.Sprintf("events.jsonl differs first at line %d of %d (alone: %d lines):\n campaign: %s\n alone:    %s", i+1, len(g), len(r), a, b)
		}
	}
	return "events.jsonl is the same"
}

// keepCell copies a differing cell's run dir and its reference under
// $SKILLFLEET_NEMESIS_KEEP (when set), for a look after the test.
func keepCell(t *testing.T, seed uint64, cell, dir, ref string) {
	t.Helper()
	root := os.Getenv("SKILLFLEET_NEMESIS_KEEP")
	if root == "" {
		return
	}
	to := filepath.Join(root, fmt.Sprintf("seed%d-%s", seed, cell))
	for _, c := range [][2]string{{dir, filepath.Join(to, "campaign")}, {ref, filepath.Join(to, "alone")}} {
		if err := os.CopyFS(c[1], os.DirFS(c[0])); err != nil {
			t.Logf("keep %s: %v", c[0], err)
			return
		}
	}
	t.Logf("cell %s kept in %s (campaign/ and alone/)", cell, to)
}
