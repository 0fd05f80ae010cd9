package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillfleet/skillfleet/coordinator/trainer"
	"github.com/skillfleet/skillfleet/pkg/queue"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// fakeRuns stands in for the runs a campaign starts: a training run
// spends phases × perPhase tokens, one phase at a time, consults the
// campaign's stop rule between phases, and writes the files a campaign
// reads (tokens.json, best_skill.md; an evaluation eval_summary.json).
type fakeRuns struct {
	phases   int
	perPhase int64
	pause    time.Duration

	mu      sync.Mutex
	started map[string]int // runs started per run dir
	active  atomic.Int32
	peak    atomic.Int32
	// evalSkills is the skill text each evaluation measured, by run dir.
	evalSkills map[string]string
}

func newFakeRuns(phases int, pause time.Duration) *fakeRuns {
	return &fakeRuns{phases: phases, perPhase: 10, pause: pause, started: map[string]int{}, evalSkills: map[string]string{}}
}

func (f *fakeRuns) run(ctx context.Context, r CellRun) error {
	n := f.active.Add(1)
	defer f.active.Add(-1)
	for {
		p := f.peak.Load()
		if n <= p || f.peak.CompareAndSwap(p, n) {
			break
		}
	}
	f.mu.Lock()
	f.started[r.Dir]++
	f.mu.Unlock()
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		return err
	}
	acct := trainer.NewAccounting()
	r.Started(acct)
	for i := 0; i < f.phases; i++ {
		if err := r.Stop(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(f.pause):
		}
		acct.Add("step", "target", "m", &pb.Result{TaskId: fmt.Sprintf("%s-%d", r.Dir, i),
			Usage: &pb.Usage{InputTokens: f.perPhase, Calls: 1}})
	}
	// As a real run, tokens.json is written when the run ends.
	b, _ := json.Marshal(acct.Report())
	if err := os.WriteFile(filepath.Join(r.Dir, "tokens.json"), b, 0o644); err != nil {
		return err
	}
	if r.Eval != nil {
		text, err := os.ReadFile(r.Eval.Skill)
		if err != nil {
			return err
		}
		f.mu.Lock()
		f.evalSkills[r.Dir] = string(text)
		f.mu.Unlock()
		return os.WriteFile(filepath.Join(r.Dir, EvalSummaryFile),
			[]byte(`[{"name":"skill","split":"test","by_task_type":{"overall":{"hard":0.5}}}]`), 0o644)
	}
	return os.WriteFile(filepath.Join(r.Dir, "best_skill.md"), []byte("best skill of "+r.Cell.Name), 0o644)
}

func writeSpec(t *testing.T, body string) *Spec {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func specOf(n, maxActive int, budget string, evals ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: t\nmax_active_runs: %d\nno_skill: false\n%scells:\n", maxActive, budget)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  - {name: c%d, config: x.yaml}\n", i)
	}
	for _, from := range evals {
		fmt.Fprintf(&b, "  - {name: x-%s, eval: {from: %s}}\n", from, from)
	}
	return b.String()
}

// TestCampaignAloneRunsEveryCell: one process, its state in memory: every
// cell runs once, at most max_active_runs at once, an eval-only cell
// after the cell it measures, and campaign.json holds every result.
func TestCampaignAloneRunsEveryCell(t *testing.T) {
	runs := newFakeRuns(3, 5*time.Millisecond)
	dir := t.TempDir()
	c, err := New(Config{Spec: writeSpec(t, specOf(5, 2, "", "c4")), Dir: dir}, Deps{Run: runs.run})
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Counts()[StateDone]; got != 6 {
		t.Fatalf("%d of 6 cells done: %+v", got, f.Cells)
	}
	if p := runs.peak.Load(); p > 2 {
		t.Errorf("%d runs at once, max_active_runs 2", p)
	}
	for _, cs := range f.Cells {
		if cs.Tokens != 30 || cs.Owner != "" || cs.Member != "" {
			t.Errorf("cell %s: %d tokens, owner %q, member %q", cs.Name, cs.Tokens, cs.Owner, cs.Member)
		}
	}
	if s := runs.evalSkills[filepath.Join(dir, "cells", "x-c4")]; s != "best skill of c4" {
		t.Errorf("the eval cell measured %q", s)
	}
	onDisk, err := Read(dir)
	if err != nil || onDisk.Counts()[StateDone] != 6 {
		t.Errorf("campaign.json: %v %+v", err, onDisk)
	}
}

// TestCampaignAloneBudget: the campaign's token budget stops it: no cell
// starts once it is spent, and running cells stop at a phase boundary. A
// stopped run writes no tokens.json: its spend still counts.
func TestCampaignAloneBudget(t *testing.T) {
	runs := newFakeRuns(4, 5*time.Millisecond)
	c, err := New(Config{Spec: writeSpec(t, specOf(6, 1, "budget: {max_tokens: 100}\n")), Dir: t.TempDir()}, Deps{Run: runs.run})
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.Run(context.Background())
	if !errors.Is(err, trainer.ErrBudget) {
		t.Fatalf("err %v, want the budget", err)
	}
	var spent int64
	for _, cs := range f.Cells {
		spent += cs.Tokens
	}
	// Cells of 40 tokens one at a time: two done (80), the third stopped
	// at 100, the rest never started.
	if spent != 100 || f.Counts()[StateDone] != 2 || f.Counts()[StateStopped] != 1 || f.Counts()[StateQueued] != 3 {
		t.Errorf("spent %d; counts %v", spent, f.Counts())
	}
}

// member is one of several campaign processes in this test, each with its
// own NATS connection.
type member struct {
	name   string
	nc     *nats.Conn
	cancel context.CancelFunc
	c      *Campaign
	f      *File
	err    error
	done   chan struct{}
}

func startMember(t *testing.T, emb *queue.Embedded, spec *Spec, dir, name string, runs *fakeRuns, sel func(Cell) bool) *member {
	t.Helper()
	return startMemberWith(t, emb, spec, dir, name, runs, Config{LeaseTTL: 600 * time.Millisecond, Select: sel})
}

// startMemberTTL starts a member with a lease TTL and an Out of its own.
func startMemberTTL(t *testing.T, emb *queue.Embedded, spec *Spec, dir, name string, runs *fakeRuns, ttl time.Duration, out io.Writer) *member {
	t.Helper()
	return startMemberWith(t, emb, spec, dir, name, runs, Config{LeaseTTL: ttl, Out: out})
}

func startMemberWith(t *testing.T, emb *queue.Embedded, spec *Spec, dir, name string, runs *fakeRuns, cfg Config) *member {
	t.Helper()
	nc, err := emb.Connect("member-" + name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	store, err := NewKVStore(context.Background(), js, spec.Name, 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Spec, cfg.Dir, cfg.Store, cfg.Member = spec, dir, store, name
	c, err := New(cfg, Deps{Run: runs.run})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &member{name: name, nc: nc, c: c, cancel: cancel, done: make(chan struct{})}
	t.Cleanup(func() { cancel(); <-m.done })
	go func() {
		defer close(m.done)
		m.f, m.err = c.Run(ctx)
	}()
	return m
}

func embeddedNATS(t *testing.T) *queue.Embedded {
	t.Helper()
	emb, err := queue.StartEmbedded(queue.EmbeddedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emb.Shutdown)
	return emb
}

func wait(t *testing.T, m *member) {
	t.Helper()
	select {
	case <-m.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("member %s did not end", m.name)
	}
}

// TestMembersShareACampaign: three processes serve one campaign through
// its records on NATS. One loses NATS mid-campaign (as a process killed
// or cut off): the others take its cells once its leases lapse. Every
// cell ends done exactly once in the merged view; the eval-only cells,
// served by one member only, measure skills trained by the others.
func TestMembersShareACampaign(t *testing.T) {
	emb := embeddedNATS(t)
	spec := writeSpec(t, specOf(10, 2, "", "c0", "c9"))
	dir := t.TempDir()
	runs := newFakeRuns(6, 40*time.Millisecond)
	trainOnly := func(c Cell) bool { return c.EvalFrom == "" }
	evalOnly := func(c Cell) bool { return c.EvalFrom != "" }
	a := startMember(t, emb, spec, dir, "a", runs, trainOnly)
	b := startMember(t, emb, spec, dir, "b", runs, trainOnly)
	x := startMember(t, emb, spec, dir, "x", runs, evalOnly)
	// a is cut off while it runs cells.
	deadline := time.Now().Add(30 * time.Second)
	for len(ownedBy(a.c, "a")) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	held := ownedBy(a.c, "a")
	if len(held) == 0 {
		t.Fatal("member a never ran a cell")
	}
	a.nc.Close()
	wait(t, b)
	wait(t, x)
	if b.err != nil || x.err != nil {
		t.Fatalf("members b, x: %v, %v", b.err, x.err)
	}
	f := b.f
	if got := f.Counts()[StateDone]; got != 12 {
		t.Fatalf("%d of 12 cells done: %+v", got, f.Cells)
	}
	member := map[string]string{}
	for _, cs := range f.Cells {
		member[cs.Name] = cs.Member
		if cs.Owner != "" {
			t.Errorf("cell %s still owned by %s", cs.Name, cs.Owner)
		}
	}
	for _, name := range held {
		if member[name] != "b" {
			t.Errorf("cell %s, held by a when it was cut off, ended by %q", name, member[name])
		}
	}
	for _, from := range []string{"c0", "c9"} {
		if member["x-"+from] != "x" || member[from] == "x" {
			t.Errorf("eval cell x-%s by %q, its source by %q", from, member["x-"+from], member[from])
		}
		if s := runs.evalSkills[filepath.Join(dir, "cells", "x-"+from)]; s != "best skill of "+from {
			t.Errorf("eval cell x-%s measured %q", from, s)
		}
	}
	onDisk, err := Read(dir)
	if err != nil || onDisk.Counts()[StateDone] != 12 {
		t.Errorf("the merged campaign.json: %v %v", err, onDisk.Counts())
	}
	// a, cut off, would wait for NATS to come back: it is stopped.
	a.cancel()
	wait(t, a)
}

func ownedBy(c *Campaign, m string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for name, e := range c.board {
		if e.rec.Owner == m && e.rec.State == StateRunning {
			out = append(out, name)
		}
	}
	return out
}

// TestMembersShareOneBudget: three members, one token budget: the
// campaign stops once the spend of all of them reaches it, not once each
// one's own does.
func TestMembersShareOneBudget(t *testing.T) {
	emb := embeddedNATS(t)
	// Six cells of 100 tokens; each member runs one at a time; 200 tokens
	// for the whole campaign. Budgets per member would let all six end.
	spec := writeSpec(t, specOf(6, 1, "budget: {max_tokens: 200}\n"))
	dir := t.TempDir()
	runs := newFakeRuns(10, 100*time.Millisecond)
	ms := []*member{
		startMember(t, emb, spec, dir, "a", runs, nil),
		startMember(t, emb, spec, dir, "b", runs, nil),
		startMember(t, emb, spec, dir, "c", runs, nil),
	}
	for _, m := range ms {
		wait(t, m)
		if !errors.Is(m.err, trainer.ErrBudget) {
			t.Errorf("member %s: %v, want the budget", m.name, m.err)
		}
	}
	f, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	var spent int64
	for _, cs := range f.Cells {
		spent += cs.Tokens
	}
	// Three cells at once, each stopping at its next phase once the
	// members see the total (a renewal, a third of the lease TTL, late).
	if spent < 200 || spent >= 400 || f.Counts()[StateDone] == 6 {
		t.Errorf("spent %d tokens of a 200-token budget; counts %v", spent, f.Counts())
	}
}

// TestRunningCellsAreRenewedByOneBeatPerMember: a member renews all the
// cells it runs with one beat, so a cell's record is written when it is
// seeded, claimed and ended however long it runs. Cells that run for
// three lease TTLs are not taken over, each runs once, and the beats
// are what kept them.
func TestRunningCellsAreRenewedByOneBeatPerMember(t *testing.T) {
	emb := embeddedNATS(t)
	spec := writeSpec(t, specOf(4, 2, ""))
	dir := t.TempDir()
	tap, err := emb.Connect("tap")
	if err != nil {
		t.Fatal(err)
	}
	defer tap.Close()
	var cellWrites, beats atomic.Int32
	for prefix, n := range map[string]*atomic.Int32{cellKeyPrefix: &cellWrites, memberKeyPrefix: &beats} {
		if _, err := tap.Subscribe("$KV."+BucketName(spec.Name)+"."+prefix+">", func(*nats.Msg) { n.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := tap.Flush(); err != nil {
		t.Fatal(err)
	}
	// Six phases of 300 ms: each cell runs three lease TTLs (600 ms).
	runs := newFakeRuns(6, 300*time.Millisecond)
	a := startMember(t, emb, spec, dir, "a", runs, nil)
	b := startMember(t, emb, spec, dir, "b", runs, nil)
	wait(t, a)
	wait(t, b)
	if a.err != nil || b.err != nil {
		t.Fatalf("members: %v, %v", a.err, b.err)
	}
	if got := b.f.Counts()[StateDone]; got != 4 {
		t.Fatalf("%d of 4 cells done", got)
	}
	for d, n := range runs.started {
		if n != 1 {
			t.Errorf("cell %s ran %d times", d, n)
		}
	}
	// Per cell: a seed by each member (one refused), a claim by each (one
	// refused) and the end.
	if n := cellWrites.Load(); n > 4*5 {
		t.Errorf("%d writes of 4 cells' records, want at most %d", n, 4*5)
	}
	if beats.Load() == 0 {
		t.Error("no member beat")
	}
}

// TestTakenOverCellStopsWhereItRan: when another member takes over a cell
// this process runs (this one was thought gone), the run here stops as
// soon as the takeover is seen, without a write of its own to find it.
func TestTakenOverCellStopsWhereItRan(t *testing.T) {
	emb := embeddedNATS(t)
	spec := writeSpec(t, specOf(1, 1, ""))
	runs := newFakeRuns(1000, 50*time.Millisecond)
	a := startMember(t, emb, spec, t.TempDir(), "a", runs, nil)
	deadline := time.Now().Add(30 * time.Second)
	for runs.active.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if runs.active.Load() == 0 {
		t.Fatal("the cell never started")
	}
	a.c.mu.Lock()
	rec := a.c.board["c0"].rec
	a.c.mu.Unlock()
	st := rec.CellStatus
	st.Owner = "z"
	if _, err := a.c.store.Put(context.Background(), st, rec.Rev); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for runs.active.Load() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if runs.active.Load() != 0 {
		t.Error("the run went on after another member took its cell over")
	}
	a.cancel()
	wait(t, a)
}
