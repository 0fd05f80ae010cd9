package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/skillfleet/skillfleet/coordinator/trainer"
	"github.com/skillfleet/skillfleet/pkg/pricing"
	"github.com/skillfleet/skillfleet/pkg/telemetry"
)

// Config is how one process serves a campaign.
type Config struct {
	Spec *Spec
	// Dir is the campaign dir: campaign.json and cells/<name>/, one run
	// dir per cell.
	Dir string
	// Store is the campaign's state. Nil: this process alone, in memory.
	Store Store
	// Member names this process among the processes serving the campaign
	// (the Owner of the cells it runs). Empty for a campaign run by one
	// process; required with a shared Store.
	Member string
	// LeaseTTL is how long a running cell's record may go unrewritten
	// before its owner counts as dead (its owner rewrites it every third
	// of that). Zero for a campaign run by one process.
	LeaseTTL time.Duration
	// Sticky leaves a dead member's cells to that member, which resumes
	// them when it comes back (run dirs on a volume only it mounts);
	// otherwise another process takes them (run dirs on a shared volume).
	Sticky bool
	// Select, when set, limits the cells this process takes.
	Select func(Cell) bool
	// Prices prices the campaign's spend ($ budget and columns); may be nil.
	Prices *pricing.Table
	Log    *slog.Logger
	// Out receives one line when a cell starts and one when it ends.
	Out io.Writer
	// Progress, when set, is called every ProgressEvery with the
	// campaign's status.
	Progress      func(Status)
	ProgressEvery time.Duration
	// Tracer, when set, traces the campaign: a campaign span, and one
	// trace per cell (its runs under its cell span) linked to it.
	Tracer trace.Tracer
}

// Deps are what a campaign runs its cells with.
type Deps struct {
	// Run runs one run of a cell (its training, the no-skill evaluation
	// of a training cell, or an eval-only cell's evaluation) in r.Dir and
	// returns when the run ends.
	Run func(ctx context.Context, r CellRun) error
}

// CellRun is one run of a cell.
type CellRun struct {
	Cell Cell
	// Config is the run config file; the run applies Cell.Sets to it.
	Config string
	// Dir is the run dir.
	Dir string
	// Log receives the run's output (the cell's cell.log).
	Log io.Writer
	// Eval, when set, makes the run an evaluation of a skill; nil trains.
	Eval *EvalRun
	// Started, called with the run's accounting once the run exists,
	// lets the campaign count the run's spend while it runs.
	Started func(*trainer.Accounting)
	// Stop is the campaign's stop rule (its budget): the run consults it
	// with its own at each phase boundary.
	Stop func() error
}

// EvalRun is the skill an evaluation measures.
type EvalRun struct {
	// Skill is the skill file (or package bundle) measured.
	Skill string
	Split string
	// Baseline measures the empty and the seed skill too.
	Baseline bool
}

// Status is a campaign's progress as one process sees it.
type Status struct {
	Counts  map[string]int
	Total   int
	Tokens  int64
	USD     float64
	Elapsed time.Duration
}

// Campaign is a campaign being served by this process.
type Campaign struct {
	cfg    Config
	deps   Deps
	cells  []Cell
	byName map[string]Cell
	store  Store
	log    *slog.Logger

	wake chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex
	board   map[string]*entry
	mine    map[string]*running
	started time.Time // the campaign's start (its wall budget)
	begun   time.Time // this process's start
	created time.Time // campaign.json's started
	stopped error     // the campaign's budget, once reached
	dirty   bool
	// busy holds cells whose run dir another process held, until when
	// this process leaves them alone.
	busy map[string]time.Time
	// halted holds the cells this process saw stop on their own (their
	// budget, a stop request) while the campaign went on: see halt.
	halted map[string]bool
	// beats are the other members' last beats.
	beats map[string]*beatEntry
	// beaten is when this member's last beat was written.
	beaten time.Time

	saveMu sync.Mutex
}

// entry is the last record of a cell this process has seen.
type entry struct {
	rec  Record
	seen time.Time // when this process saw the revision change
}

// beatEntry is the last beat of another member this process has seen.
type beatEntry struct {
	seen  time.Time
	cells map[string]Spend
}

// running is a cell this process runs.
type running struct {
	mu     sync.Mutex // orders the cell's writes
	rev    uint64
	status CellStatus
	lost   bool
	cancel context.CancelCauseFunc
	accts  []*trainer.Accounting
	// renewed is when the cell's record was last written by this
	// process (its claim, a rewrite); with the member's last beat it is
	// how recent the lease other members see is. c.mu is held.
	renewed time.Time
	// fenced is set once this process stopped the cell for a lease it
	// could not renew.
	fenced bool
}

// New checks cfg and returns the campaign, ready to Run.
func New(cfg Config, deps Deps) (*Campaign, error) {
	if cfg.Spec == nil || cfg.Dir == "" || deps.Run == nil {
		return nil, errors.New("campaign: Config.Spec, Config.Dir and Deps.Run are required")
	}
	if cfg.Store != nil && cfg.Member == "" {
		return nil, errors.New("campaign: a shared store needs a member name for this process")
	}
	if cfg.Store != nil && cfg.LeaseTTL <= 0 {
		return nil, errors.New("campaign: a shared store needs a lease TTL")
	}
	cells, err := cfg.Spec.Expand()
	if err != nil {
		return nil, err
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.Store != nil && cfg.LeaseTTL-fenceMargin(cfg.LeaseTTL) < electionBound {
		cfg.Log.Warn("campaign: the lease TTL makes a member fence its cells sooner than a NATS cluster elects a leader: on a cluster, every election of the campaign bucket's leader stops this member's running cells and lets another member take them over",
			"lease_ttl", cfg.LeaseTTL.String(), "fences_after", (cfg.LeaseTTL - fenceMargin(cfg.LeaseTTL)).String(), "election_up_to", electionBound.String(),
			"hint", "use --lease-ttl 15s or more on a NATS cluster")
	}
	c := &Campaign{cfg: cfg, deps: deps, cells: cells, byName: map[string]Cell{}, store: cfg.Store, log: cfg.Log,
		wake: make(chan struct{}, 1), board: map[string]*entry{}, mine: map[string]*running{}, busy: map[string]time.Time{},
		halted: map[string]bool{}, beats: map[string]*beatEntry{}}
	for _, cell := range cells {
		c.byName[cell.Name] = cell
	}
	if c.store == nil {
		c.store = NewMemoryStore()
	}
	return c, nil
}

// Name is the campaign's name: the spec's, else the campaign dir's.
func (c *Campaign) Name() string {
	if c.cfg.Spec.Name != "" {
		return c.cfg.Spec.Name
	}
	return filepath.Base(c.cfg.Dir)
}

// Cells are the campaign's cells, in the spec's order.
func (c *Campaign) Cells() []Cell { return c.cells }

func (c *Campaign) shared() bool { return c.cfg.Store != nil }

// Run serves the campaign until every cell has ended (done or failed),
// the campaign's budget is reached, or ctx ends, and returns the
// campaign's state. The error is the budget reached, or ctx's.
func (c *Campaign) Run(ctx context.Context) (*File, error) {
	c.begun = time.Now()
	if c.cfg.Tracer != nil {
		var span trace.Span
		ctx, span = c.cfg.Tracer.Start(ctx, telemetry.SpanCampaign, trace.WithAttributes(telemetry.KeyCampaign.String(c.Name())))
		defer span.End()
	}
	if err := c.load(ctx); err != nil {
		return nil, err
	}
	if err := c.save(); err != nil {
		return nil, err
	}
	progressDone := make(chan struct{})
	var progressWG sync.WaitGroup
	if c.cfg.Progress != nil && c.cfg.ProgressEvery > 0 {
		progressWG.Add(1)
		go func() {
			defer progressWG.Done()
			t := time.NewTicker(c.cfg.ProgressEvery)
			defer t.Stop()
			for {
				select {
				case <-progressDone:
					return
				case <-t.C:
					c.cfg.Progress(c.Status())
				}
			}
		}()
	}
	beatDone := make(chan struct{})
	var beatWG sync.WaitGroup
	if c.shared() {
		beatWG.Go(func() { c.beat(ctx, beatDone) })
	}
	poll := time.Second
	if c.cfg.LeaseTTL > 0 {
		poll = min(poll, c.cfg.LeaseTTL/4)
	}
	tick := time.NewTicker(poll)
	done := ctx.Done()
	for {
		c.schedule(ctx)
		if c.finished(ctx) {
			break
		}
		select {
		case <-c.wake:
		case <-tick.C:
		case <-done:
			done = nil
		}
		if c.takeDirty() {
			if err := c.save(); err != nil {
				c.log.Error("write campaign.json", "err", err)
			}
		}
	}
	tick.Stop()
	c.wg.Wait()
	close(beatDone)
	beatWG.Wait()
	close(progressDone)
	progressWG.Wait()
	// The final view: every record as the store has it now.
	if recs, err := c.store.List(context.WithoutCancel(ctx)); err == nil {
		c.mu.Lock()
		for _, r := range recs {
			c.see(r)
		}
		c.mu.Unlock()
	}
	if err := c.save(); err != nil {
		return nil, err
	}
	f := c.file()
	if err := ctx.Err(); err != nil {
		return f, err
	}
	return f, c.stopErr()
}

// load seeds the store with the spec's cells (keeping the results of
// cells a previous invocation finished) and reads it.
func (c *Campaign) load(ctx context.Context) error {
	prev, _ := Read(c.cfg.Dir)
	c.created = time.Now().UTC()
	old := map[string]CellStatus{}
	if prev != nil {
		c.created = prev.Started
		for _, cs := range prev.Cells {
			old[cs.Name] = cs
		}
	}
	for _, cell := range c.cells {
		st := CellStatus{Cell: cell, State: StateQueued, Dir: filepath.ToSlash(filepath.Join("cells", cell.Name))}
		if p, ok := old[cell.Name]; ok && p.State == StateDone && sameCell(p.Cell, cell) {
			st = p
			st.Owner = ""
		}
		if err := c.store.Seed(ctx, st); err != nil {
			return fmt.Errorf("campaign: cell %s: %w", cell.Name, err)
		}
	}
	if err := c.store.Watch(ctx, c.onRecord, c.onBeat); err != nil {
		return fmt.Errorf("campaign: %w", err)
	}
	recs, err := c.store.List(ctx)
	if err != nil {
		return fmt.Errorf("campaign: %w", err)
	}
	started, err := c.store.Started(ctx, time.Now())
	if err != nil {
		return fmt.Errorf("campaign: %w", err)
	}
	c.mu.Lock()
	c.started = started
	if c.shared() && prev == nil {
		c.created = started.UTC()
	}
	for _, r := range recs {
		c.see(r)
	}
	c.mu.Unlock()
	// A shared record whose cell the spec now defines differently is run
	// again (a campaign run alone re-seeds from campaign.json instead).
	for _, cell := range c.cells {
		c.mu.Lock()
		e := c.board[cell.Name]
		c.mu.Unlock()
		if e == nil || sameCell(e.rec.Cell, cell) || (e.rec.Owner != "" && e.rec.Owner != c.cfg.Member) {
			continue
		}
		st := CellStatus{Cell: cell, State: StateQueued, Dir: e.rec.Dir}
		if rev, err := c.store.Put(ctx, st, e.rec.Rev); err == nil {
			c.mu.Lock()
			c.see(Record{CellStatus: st, Rev: rev})
			c.mu.Unlock()
		}
	}
	return nil
}

func sameCell(a, b Cell) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// onRecord is the store's watch: another process's (or this one's) write.
// A cell this process runs that another member now owns was taken over
// (this process was thought gone): its run stops here.
func (c *Campaign) onRecord(r Record) {
	c.mu.Lock()
	changed := c.see(r)
	mine := c.mine[r.Name]
	c.mu.Unlock()
	if mine != nil && r.Owner != "" && r.Owner != c.cfg.Member {
		mine.mu.Lock()
		if r.Rev > mine.rev {
			c.lose(r.Name, mine)
		}
		mine.mu.Unlock()
	}
	if changed {
		c.signal()
	}
}

// onBeat is the store's watch of the members' beats.
func (c *Campaign) onBeat(b Beat) {
	if b.Member == c.cfg.Member {
		return
	}
	c.mu.Lock()
	c.beats[b.Member] = &beatEntry{seen: time.Now(), cells: b.Cells}
	c.mu.Unlock()
}

// lastSign is when this process last heard that a cell's owner holds it:
// the cell's record changed, or its owner's beat listed it. c.mu is held.
func (c *Campaign) lastSign(e *entry) time.Time {
	t := e.seen
	if b := c.beats[e.rec.Owner]; b != nil && b.seen.After(t) {
		if _, ok := b.cells[e.rec.Name]; ok {
			t = b.seen
		}
	}
	return t
}

// reported is a cell's spend as the store has it: its record, or its
// owner's last beat while the owner runs it. c.mu is held.
func (c *Campaign) reported(e *entry) Spend {
	s := Spend{Calls: e.rec.Calls, Tokens: e.rec.Tokens}
	if e.rec.USD != nil {
		s.USD = *e.rec.USD
	}
	if b := c.beats[e.rec.Owner]; b != nil && e.rec.State == StateRunning {
		if bs, ok := b.cells[e.rec.Name]; ok {
			s = Spend{Calls: max(s.Calls, bs.Calls), Tokens: max(s.Tokens, bs.Tokens), USD: max(s.USD, bs.USD)}
		}
	}
	return s
}

// into writes s as st's spend (its USD only when st had one or s has one).
func (s Spend) into(st *CellStatus) {
	st.Calls, st.Tokens = s.Calls, s.Tokens
	if st.USD != nil || s.USD > 0 {
		usd := s.USD
		st.USD = &usd
	}
}

// see records r if it is newer than what this process has seen; it
// reports whether the cell's state or results changed (not a heartbeat).
// c.mu is held.
func (c *Campaign) see(r Record) bool {
	if _, ok := c.byName[r.Name]; !ok {
		return false
	}
	e := c.board[r.Name]
	if e != nil && r.Rev <= e.rec.Rev {
		return false
	}
	changed := e == nil || e.rec.State != r.State || e.rec.Owner != r.Owner || e.rec.Ended != r.Ended
	c.board[r.Name] = &entry{rec: r, seen: time.Now()}
	if changed {
		c.dirty = true
	}
	return changed
}

func (c *Campaign) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *Campaign) takeDirty() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.dirty
	c.dirty = false
	return d
}

// stopping reports whether this process starts no more cells.
func (c *Campaign) stopping(ctx context.Context) bool {
	return ctx.Err() != nil || c.stopErr() != nil
}

func (c *Campaign) stopErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopped
}

// claimable reports whether this process may take the cell now. c.mu is held.
func (c *Campaign) claimable(e *entry) bool {
	r := e.rec
	switch {
	case r.State == StateDone || r.State == StateFailed, c.halted[r.Name]:
		return false
	case c.mine[r.Name] != nil, time.Now().Before(c.busy[r.Name]):
		return false
	case r.Owner == "" || r.Owner == c.cfg.Member:
		return true
	case c.cfg.Sticky:
		return false
	}
	return time.Since(c.lastSign(e)) >= c.cfg.LeaseTTL
}

// live reports whether a running cell's owner still holds it. c.mu is held.
func (c *Campaign) live(e *entry) bool {
	if e.rec.State != StateRunning || e.rec.Owner == "" {
		return false
	}
	if c.mine[e.rec.Name] != nil {
		return true
	}
	return e.rec.Owner != c.cfg.Member && time.Since(c.lastSign(e)) < c.cfg.LeaseTTL
}

// schedule starts every cell this process may take now, in the spec's
// order, up to MaxActiveRuns of its own at once.
func (c *Campaign) schedule(ctx context.Context) {
	for _, cell := range c.cells {
		if c.stopping(ctx) {
			return
		}
		c.mu.Lock()
		e := c.board[cell.Name]
		ok := e != nil && c.claimable(e) && (c.cfg.Select == nil || c.cfg.Select(cell))
		full := len(c.mine) >= c.cfg.Spec.MaxActiveRuns
		var src *entry
		if ok && cell.EvalFrom != "" {
			src = c.board[cell.EvalFrom]
			if c.halted[cell.EvalFrom] {
				// Its source waits for the campaign to be run again: so does it.
				c.halted[cell.Name], ok = true, false
			}
		}
		c.mu.Unlock()
		if !ok {
			continue
		}
		failWith := ""
		if cell.EvalFrom != "" {
			switch {
			case src == nil:
				continue
			case src.rec.State == StateFailed:
				failWith = fmt.Sprintf("the cell it measures, %s, is %s", cell.EvalFrom, src.rec.State)
			case src.rec.State != StateDone:
				continue // it waits for its source
			}
		}
		if failWith == "" && full {
			return
		}
		if failWith == "" {
			if err := c.budgetErr(); err != nil {
				c.mu.Lock()
				c.stopped = err
				c.mu.Unlock()
				return
			}
		}
		now := time.Now().UTC()
		c.mu.Lock()
		st := e.rec.CellStatus
		if e.rec.Owner != "" && e.rec.Owner != c.cfg.Member {
			// A cell taken over keeps what its owner reported spending.
			c.reported(e).into(&st)
		}
		c.mu.Unlock()
		st.Cell, st.Owner, st.Error = cell, c.cfg.Member, ""
		if failWith != "" {
			st.Owner, st.State, st.Error, st.Ended = "", StateFailed, failWith, &now
		} else {
			st.State, st.Started, st.Ended = StateRunning, &now, nil
		}
		rev, err := c.store.Put(ctx, st, e.rec.Rev)
		if err != nil {
			if !errors.Is(err, ErrConflict) {
				c.log.Warn("campaign: claim a cell", "cell", cell.Name, "err", err)
			}
			continue // another process took it first, or the store is away
		}
		r := &running{rev: rev, status: st, renewed: time.Now()}
		c.mu.Lock()
		c.see(Record{CellStatus: st, Rev: rev})
		if failWith == "" {
			c.mine[cell.Name] = r
		}
		c.mu.Unlock()
		if err := c.save(); err != nil {
			c.log.Error("write campaign.json", "err", err)
		}
		if failWith != "" {
			continue
		}
		if e.rec.Owner != "" && e.rec.Owner != c.cfg.Member {
			c.log.Warn("campaign: took over a cell whose owner stopped renewing it", "cell", cell.Name, "owner", e.rec.Owner)
		}
		cctx, cancel := context.WithCancelCause(ctx)
		c.mu.Lock() // fence reads cancel under the lock once r is in c.mine
		r.cancel = cancel
		c.mu.Unlock()
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			defer cancel(nil)
			c.runCell(cctx, cell, r)
		}()
	}
}

// finished reports whether this process is done serving the campaign.
func (c *Campaign) finished(ctx context.Context) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.mine) > 0 {
		return false
	}
	if ctx.Err() != nil {
		return true
	}
	ended, liveLeft := true, false
	for _, cell := range c.cells {
		e := c.board[cell.Name]
		if e == nil {
			return false
		}
		if e.rec.State != StateDone && e.rec.State != StateFailed && !c.halted[cell.Name] {
			ended = false
		}
		if c.live(e) {
			liveLeft = true
		}
	}
	if !c.shared() {
		return ended || c.stopped != nil
	}
	// Processes sharing a campaign stay until no cell is left to take
	// over, so each one's campaign.json ends complete.
	return (ended || c.stopped != nil) && !liveLeft
}

// spend is the campaign's spend: the cells this process runs from their
// live accounting, every other cell as the store reports it. c.mu is held.
func (c *Campaign) spend() (tokens int64, usd float64) {
	for _, cell := range c.cells {
		if r := c.mine[cell.Name]; r != nil {
			s := c.liveSpend(r)
			tokens += s.Tokens
			usd += s.USD
			continue
		}
		e := c.board[cell.Name]
		if e == nil {
			continue
		}
		s := c.reported(e)
		tokens += s.Tokens
		usd += s.USD
	}
	return tokens, usd
}

func (c *Campaign) liveSpend(r *running) Spend {
	var s Spend
	for _, a := range r.accts {
		tot := a.Total()
		s.Calls += tot.Calls
		s.Tokens += tot.Tokens()
		if c.cfg.Prices != nil {
			s.USD += c.cfg.Prices.Price(a.PriceRows()).Total
		}
	}
	return s
}

// budgetErr is non-nil once the campaign's own budget is spent (by every
// process serving it).
func (c *Campaign) budgetErr() error {
	b := c.cfg.Spec.Budget
	c.mu.Lock()
	started := c.started
	c.mu.Unlock()
	if b.MaxWall > 0 && time.Since(started) >= time.Duration(b.MaxWall) {
		return fmt.Errorf("%w: the campaign's budget.max_wall (%s elapsed)", trainer.ErrBudget, time.Since(started).Round(time.Second))
	}
	if b.MaxTokens == 0 && b.MaxUSD == 0 {
		return nil
	}
	c.mu.Lock()
	tok, usd := c.spend()
	c.mu.Unlock()
	switch {
	case b.MaxTokens > 0 && tok >= b.MaxTokens:
		return fmt.Errorf("%w: the campaign's budget.max_tokens (%d tokens spent, limit %d)", trainer.ErrBudget, tok, b.MaxTokens)
	case b.MaxUSD > 0 && usd >= b.MaxUSD:
		return fmt.Errorf("%w: the campaign's budget.max_usd ($%.4f spent, limit $%.4f)", trainer.ErrBudget, usd, b.MaxUSD)
	}
	return nil
}

// Status is the campaign's progress as this process sees it.
func (c *Campaign) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Status{Counts: map[string]int{}, Total: len(c.cells), Elapsed: time.Since(c.begun)}
	for _, cell := range c.cells {
		if e := c.board[cell.Name]; e != nil {
			s.Counts[e.rec.State]++
		}
	}
	s.Tokens, s.USD = c.spend()
	return s
}

// file is campaign.json as this process sees the campaign.
func (c *Campaign) file() *File {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := &File{Name: c.Name(), Spec: c.cfg.Spec.File, Started: c.created}
	for _, cell := range c.cells {
		e := c.board[cell.Name]
		if e == nil {
			continue
		}
		cs := e.rec.CellStatus
		if _, ok := c.beats[cs.Owner]; ok && cs.State == StateRunning {
			c.reported(e).into(&cs)
		}
		f.Cells = append(f.Cells, cs)
	}
	return f
}

func (c *Campaign) save() error {
	c.saveMu.Lock()
	defer c.saveMu.Unlock()
	return Write(c.cfg.Dir, c.file())
}

// putMine rewrites a cell this process runs; a conflict means another
// process took the cell over (this one was thought dead): the run stops.
func (c *Campaign) putMine(ctx context.Context, name string, r *running, fn func(*CellStatus)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lost {
		return ErrConflict
	}
	st := r.status
	fn(&st)
	rev, err := c.store.Put(context.WithoutCancel(ctx), st, r.rev)
	if err != nil {
		if errors.Is(err, ErrConflict) {
			c.lose(name, r)
		}
		return err
	}
	r.rev, r.status = rev, st
	c.mu.Lock()
	r.renewed = time.Now()
	c.see(Record{CellStatus: st, Rev: rev})
	c.mu.Unlock()
	return nil
}

// endMine writes a cell's end (putMine), retrying a store error that is
// not a conflict: a NATS cluster that lost the leader of the campaign's
// bucket answers with errors until it has elected another, and a cell
// whose end is not recorded would be run again. It gives up on a
// conflict (another process took the cell over) or once twice the lease
// TTL has passed (by then another member may have).
func (c *Campaign) endMine(ctx context.Context, name string, r *running, fn func(*CellStatus)) error {
	giveUp := time.Now().Add(max(2*c.cfg.LeaseTTL, 10*time.Second))
	delay := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := c.putMine(ctx, name, r, fn)
		if err == nil || errors.Is(err, ErrConflict) || time.Now().After(giveUp) {
			return err
		}
		if attempt == 1 || attempt%10 == 0 {
			c.log.Warn("campaign: record a cell's end; retrying until the store answers", "cell", name, "attempt", attempt, "err", err)
		}
		time.Sleep(delay)
		delay = min(2*delay, 2*time.Second)
	}
}

// errFenced stops the cells of a member that could not renew its lease
// in time, before another member may take them over.
var errFenced = errors.New("campaign: this member could not renew its lease in time (self-fencing): the cell stops here so that another member can take it over")

// fenceMargin is how long before its lease would lapse a member that
// could not renew it stops its cells: past the TTL another member may
// take them, so this one must have stopped by then.
func fenceMargin(ttl time.Duration) time.Duration { return ttl / 3 }

// electionBound is how long a NATS cluster may take to elect the leader of
// a stream or bucket whose leader was lost (its raft election timeout, 4
// to 9 s, and a loaded machine). No member can renew a lease in that time:
// a lease whose fence comes sooner stops every running cell at each such
// election.
const electionBound = 10 * time.Second

// fence stops every cell this member runs whose lease it has not renewed
// for the lease TTL less the margin, and says so.
func (c *Campaign) fence() {
	c.mu.Lock()
	var names []string
	var stop []*running
	for name, r := range c.mine {
		last := r.renewed
		if c.beaten.After(last) {
			last = c.beaten
		}
		if !r.fenced && r.cancel != nil && time.Since(last) >= c.cfg.LeaseTTL-fenceMargin(c.cfg.LeaseTTL) {
			r.fenced = true
			names, stop = append(names, name), append(stop, r)
		}
	}
	c.mu.Unlock()
	for i, r := range stop {
		c.log.Error("campaign: could not renew this member's lease on a cell within its TTL less a margin; stopping the cell here (self-fencing) so that another member can take it over",
			"cell", names[i], "member", c.cfg.Member, "lease_ttl", c.cfg.LeaseTTL.String(), "margin", fenceMargin(c.cfg.LeaseTTL).String())
		fmt.Fprintf(c.cfg.Out, "cell %s: stopped here: this member could not renew its lease (self-fencing)\n", names[i])
		r.cancel(errFenced)
	}
}

// lose stops a cell this process ran that another process took over
// (this one was thought gone). r.mu is held.
func (c *Campaign) lose(name string, r *running) {
	if r.lost {
		return
	}
	r.lost = true
	c.log.Error("campaign: another process took over this process's cell; stopping it here", "cell", name)
	if r.cancel != nil {
		r.cancel(nil)
	}
}

// beat writes this member's beat, with the spend of every cell it runs,
// every third of the lease TTL until stop closes. A beat that fails is
// tried again sooner, and a cell whose lease could not be renewed in time
// is stopped here ([Campaign.fence]).
func (c *Campaign) beat(ctx context.Context, stop <-chan struct{}) {
	every := c.cfg.LeaseTTL / 3
	retry := max(c.cfg.LeaseTTL/12, time.Millisecond)
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		next := every
		b := Beat{Member: c.cfg.Member, Cells: map[string]Spend{}}
		c.mu.Lock()
		for name, r := range c.mine {
			b.Cells[name] = c.liveSpend(r)
		}
		c.mu.Unlock()
		if len(b.Cells) > 0 {
			// A beat that hangs must not keep the fence from being checked:
			// with the retry it ends within the margin.
			bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.LeaseTTL/6)
			at := time.Now()
			err := c.store.Beat(bctx, b)
			cancel()
			if err != nil {
				c.log.Warn("campaign: renew this member's cells", "err", err)
				next = retry
			} else {
				c.mu.Lock()
				c.beaten = at
				c.mu.Unlock()
			}
			c.fence()
		}
		t.Reset(next)
	}
}

// runCell trains (or evaluates) one cell in its run dir, logging to the
// cell's cell.log, and records its results.
func (c *Campaign) runCell(ctx context.Context, cell Cell, r *running) {
	if c.cfg.Tracer != nil {
		// A trace of its own, linked both ways with the campaign's span:
		// a cell's spend is one trace, a campaign's is one search.
		// The campaign and cell names travel with the cell's context (as
		// baggage to the workers), so that every span of the cell, model
		// calls included, can be searched for by cell.
		campaignSpan := trace.SpanFromContext(ctx)
		ctx = telemetry.WithCell(ctx, c.Name(), cell.Name)
		var span trace.Span
		ctx, span = c.cfg.Tracer.Start(ctx, telemetry.SpanCell, trace.WithNewRoot(),
			trace.WithLinks(trace.LinkFromContext(ctx)),
			trace.WithAttributes(telemetry.KeyCampaign.String(c.Name()), telemetry.KeyCell.String(cell.Name)))
		campaignSpan.AddLink(trace.Link{SpanContext: span.SpanContext()})
		defer span.End()
	}
	cellDir := filepath.Join(c.cfg.Dir, "cells", cell.Name)
	start := time.Now()
	fmt.Fprintf(c.cfg.Out, "cell %s: started\n", cell.Name)
	err := func() error {
		if err := os.MkdirAll(cellDir, 0o755); err != nil {
			return fmt.Errorf("cell dir: %w", err)
		}
		logf, err := os.OpenFile(filepath.Join(cellDir, "cell.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("cell log: %w", err)
		}
		defer logf.Close()
		fmt.Fprintf(logf, "== %s campaign cell %s%s\n", time.Now().UTC().Format(time.RFC3339), cell.Name, c.memberNote())
		if cell.EvalFrom != "" {
			return c.evalCell(ctx, cell, cellDir, logf, r)
		}
		return c.trainCell(ctx, cell, cellDir, logf, r)
	}()
	c.finish(ctx, cell, r, start, err)
}

func (c *Campaign) memberNote() string {
	if c.cfg.Member == "" {
		return ""
	}
	return " (member " + c.cfg.Member + ")"
}

func (c *Campaign) cellRun(cell Cell, dir string, logf io.Writer, r *running) CellRun {
	return CellRun{
		Cell: cell, Config: c.cfg.Spec.ConfigPath(cell.Config), Dir: dir, Log: logf,
		Started: func(a *trainer.Accounting) {
			c.mu.Lock()
			r.accts = append(r.accts, a)
			c.mu.Unlock()
		},
		Stop: c.stopRule,
	}
}

// stopRule is the campaign's stop rule for its runs: once the budget is
// reached, the campaign stops (a stopped cell's spend is not all in its
// run dir, so a later look at the records could undercount it).
func (c *Campaign) stopRule() error {
	err := c.budgetErr()
	if err != nil {
		c.mu.Lock()
		if c.stopped == nil {
			c.stopped = err
		}
		c.mu.Unlock()
	}
	return err
}

func (c *Campaign) trainCell(ctx context.Context, cell Cell, cellDir string, logf io.Writer, r *running) error {
	if err := c.deps.Run(ctx, c.cellRun(cell, cellDir, logf, r)); err != nil {
		return err
	}
	// Eval-only cells elsewhere may measure this cell's best skill.
	if b, err := os.ReadFile(filepath.Join(cellDir, "best_skill.md")); err == nil {
		if err := c.store.PutSkill(context.WithoutCancel(ctx), cell.Name, b); err != nil {
			c.log.Warn("campaign: store the best skill", "cell", cell.Name, "err", err)
		}
	}
	if !c.cfg.Spec.MeasureNoSkill() {
		return nil
	}
	// The no-skill column: the test split with an empty skill, in the
	// cell's own eval dir (resumable like any run).
	empty := filepath.Join(cellDir, "no_skill.md")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		return err
	}
	run := c.cellRun(cell, filepath.Join(cellDir, NoSkillDir), logf, r)
	run.Eval = &EvalRun{Skill: empty, Split: "test"}
	return c.deps.Run(ctx, run)
}

// SourceSkillFile is where an eval-only cell keeps the best skill it
// measures when the cell that trained it ran on another host.
const SourceSkillFile = "source_skill.md"

func (c *Campaign) evalCell(ctx context.Context, cell Cell, cellDir string, logf io.Writer, r *running) error {
	src := filepath.Join(c.cfg.Dir, "cells", cell.EvalFrom, "best_skill.md")
	if _, err := os.Stat(src); err != nil {
		// Not on this host's volume: the copy the training process stored.
		b, serr := c.store.Skill(ctx, cell.EvalFrom)
		if serr != nil {
			return fmt.Errorf("the best skill of %s: %w (and from the campaign's store: %w)", cell.EvalFrom, err, serr)
		}
		src = filepath.Join(cellDir, SourceSkillFile)
		if err := os.WriteFile(src, b, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(logf, "the best skill of %s, trained on another host, read from the campaign's store\n", cell.EvalFrom)
	}
	cfgCell := cell
	if cfgCell.Config == "" {
		cfgCell.Config = c.byName[cell.EvalFrom].Config
	}
	run := c.cellRun(cfgCell, cellDir, logf, r)
	run.Eval = &EvalRun{Skill: src, Split: cell.EvalSplit, Baseline: true}
	return c.deps.Run(ctx, run)
}

// finish records a cell's outcome and results and releases it.
func (c *Campaign) finish(ctx context.Context, cell Cell, r *running, start time.Time, err error) {
	cellDir := filepath.Join(c.cfg.Dir, "cells", cell.Name)
	state, msg := StateDone, ""
	switch {
	case err == nil:
	case errors.Is(context.Cause(ctx), errFenced):
		// Fenced before anything else: its run ends with whatever the
		// cancel made of it (context.Canceled, most often), and the cell
		// is another member's to take over, not stopped.
		state, msg = StateQueued, errFenced.Error()
	case errors.Is(err, trainer.ErrBudget), errors.Is(err, trainer.ErrStopped), errors.Is(err, context.Canceled):
		state, msg = StateStopped, firstLine(err.Error())
	case errors.Is(err, ErrBusy):
		state, msg = StateQueued, firstLine(err.Error())
	default:
		state, msg = StateFailed, firstLine(err.Error())
	}
	res := ReadResults(cellDir, cell, c.cfg.Prices)
	if state != StateDone {
		// A run that did not finish wrote no tokens.json: its spend is
		// what its accounting counted (and never less than recorded).
		c.mu.Lock()
		live := c.liveSpend(r)
		c.mu.Unlock()
		r.mu.Lock()
		prev := r.status
		r.mu.Unlock()
		res.Calls = max(res.Calls, live.Calls, prev.Calls)
		res.Tokens = max(res.Tokens, live.Tokens, prev.Tokens)
		if prev.USD != nil || c.cfg.Prices != nil {
			usd := live.USD
			if res.USD != nil {
				usd = max(usd, *res.USD)
			}
			if prev.USD != nil {
				usd = max(usd, *prev.USD)
			}
			res.USD = &usd
		}
	}
	end := time.Now().UTC()
	perr := c.endMine(ctx, cell.Name, r, func(s *CellStatus) {
		s.State, s.Error, s.Ended, s.Owner = state, msg, &end, ""
		s.WallS = time.Since(start).Seconds()
		s.NoSkill, s.SeedSkill, s.Best = res.NoSkill, res.Seed, res.Best
		s.SelectionCurrent, s.SelectionBest = res.SelectionCurrent, res.SelectionBest
		s.Accepted, s.Calls, s.Tokens, s.USD = res.Accepted, res.Calls, res.Tokens, res.USD
		if c.shared() {
			s.Member = c.cfg.Member
		}
	})
	c.mu.Lock()
	delete(c.mine, cell.Name)
	c.halt(ctx, cell.Name, state)
	if state == StateQueued {
		// Another member takes it first (a fenced cell: once its lease lapses).
		c.busy[cell.Name] = time.Now().Add(max(c.cfg.LeaseTTL, time.Second))
	}
	c.mu.Unlock()
	c.signal()
	switch {
	case errors.Is(perr, ErrConflict):
		fmt.Fprintf(c.cfg.Out, "cell %s: handed over to another process\n", cell.Name)
		return
	case perr != nil:
		c.log.Error("campaign: record a cell's end", "cell", cell.Name, "err", perr)
		fmt.Fprintf(c.cfg.Out, "cell %s: %s, but the campaign's store did not take its end (%v): the cell will be run again\n", cell.Name, state, perr)
		return
	}
	if err := c.save(); err != nil {
		c.log.Error("write campaign.json", "err", err)
	}
	line := fmt.Sprintf("cell %s: %s", cell.Name, state)
	if res.Best != nil && res.Seed != nil {
		line += fmt.Sprintf(" (test %.3f → %.3f)", *res.Seed, *res.Best)
	}
	if msg != "" {
		line += ": " + msg
	}
	fmt.Fprintln(c.cfg.Out, line)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
