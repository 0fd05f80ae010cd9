package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillfleet/skillfleet/coordinator/campaign"
	"github.com/skillfleet/skillfleet/coordinator/trainer"
	"github.com/skillfleet/skillfleet/pkg/pricing"
	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/ui"
)

// exitCampaignFailed + N is the exit status of a campaign in which N cells
// failed (capped at 100 cells).
const exitCampaignFailed = 10

type campaignOpts struct {
	file        string
	out         string
	natsURL     string
	nats        natsFlags
	redis       redisFlags
	workers     int
	concurrency int
	optConc     int
	maxActive   int
	logLevel    string
	prices      string
	ackWait     time.Duration
	ui          uiFlags
	sets        multiFlag
	grpcHost    string
	advertise   string
	grpcTLS     grpcServerTLS
	insecure    bool
	ports       string
}

func runCampaign(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o campaignOpts
	fs := newFlagSet("campaign", "campaign --config campaign.yaml --out DIR [flags]", stderr)
	fs.StringVar(&o.file, "config", "", "campaign file (required; see docs/campaigns.md)")
	fs.StringVar(&o.file, "file", "", "same as --config")
	fs.StringVar(&o.out, "out", "", "campaign directory (default runs/campaigns/<name>); re-run with the same --out to resume every cell")
	fs.StringVar(&o.natsURL, "nats", "", "NATS URL of an external fleet (default: an embedded server and in-process workers)")
	o.nats.register(fs)
	o.redis.register(fs, "the rollout cache shared across cells and the cells' leader leases")
	fs.IntVar(&o.workers, "workers", -1, "in-process workers (default 2 all-in-one, 0 with --nats)")
	fs.IntVar(&o.concurrency, "concurrency", 24, "target tasks each in-process worker runs at once")
	fs.IntVar(&o.optConc, "optimizer-concurrency", 16, "optimizer tasks each in-process worker runs at once")
	fs.IntVar(&o.maxActive, "max-active-runs", 0, "cells running at once (default: the campaign file's max_active_runs, else 4)")
	fs.StringVar(&o.logLevel, "log-level", "warn", "log level of the campaign process: debug, info, warn, error (each cell logs to its cell.log)")
	fs.StringVar(&o.prices, "prices", "", "price table YAML for $ budgets and the $ column (default: the built-in table)")
	fs.DurationVar(&o.ackWait, "ack-wait", queue.DefaultAckWait, "how long a dead worker's task waits before another worker gets it")
	o.ui.register(fs)
	fs.Var(&o.sets, "set", "override a config key in every cell, section.key=value (repeatable; after the campaign file's own settings)")
	fs.StringVar(&o.grpcHost, "grpc-host", "127.0.0.1", "host the cells' coordinators listen on (each on its own port)")
	o.grpcTLS.register(fs)
	fs.StringVar(&o.ports, "grpc-ports", "", "port range FIRST-LAST the cells' coordinators listen on, one port per running cell (default: any free port; give a range as wide as --max-active-runs where a firewall or NetworkPolicy needs it)")
	fs.BoolVar(&o.insecure, "insecure-grpc", false, "let the cells' coordinators listen beyond loopback (--grpc-host) without mutual TLS")
	fs.StringVar(&o.advertise, "advertise-host", "", "host name workers dial to reach the cells' coordinators (default: the listen host; needed with --grpc-host 0.0.0.0)")
	if help, err := parse(fs, args); help || err != nil {
		return err
	}
	if o.file == "" {
		return usageError{errors.New("campaign: --config is required")}
	}
	spec, err := campaign.Load(o.file)
	if err != nil {
		return usageError{err}
	}
	cells, _ := spec.Expand()
	if o.maxActive > 0 {
		spec.MaxActiveRuns = o.maxActive
	}
	if o.out == "" {
		name := spec.Name
		if name == "" {
			name = strings.TrimSuffix(filepath.Base(o.file), filepath.Ext(o.file))
		}
		o.out = filepath.Join("runs", "campaigns", name)
	}
	dir, err := filepath.Abs(o.out)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "cells"), 0o755); err != nil {
		return fmt.Errorf("campaign dir: %w", err)
	}
	unlock, err := lockRunDir(dir)
	if err != nil {
		return err
	}
	defer unlock()
	log, err := newLogger(stderr, "text", o.logLevel)
	if err != nil {
		return err
	}
	prices := pricing.Default()
	if o.prices != "" {
		if prices, err = pricing.Load(o.prices); err != nil {
			return usageError{fmt.Errorf("campaign: --prices: %w", err)}
		}
	}
	if err := o.ui.check(); err != nil {
		return err
	}
	c := &campaignRun{o: o, spec: spec, dir: dir, log: log, prices: prices, stdout: stdout, active: map[string]*trainer.Trainer{}}
	if o.ports != "" {
		ports, err := portRange(o.ports)
		if err != nil {
			return usageError{fmt.Errorf("campaign: --grpc-ports: %w", err)}
		}
		if len(ports) < spec.MaxActiveRuns {
			return usageError{fmt.Errorf("campaign: --grpc-ports: %d ports for %d active runs; widen the range or lower --max-active-runs", len(ports), spec.MaxActiveRuns)}
		}
		c.ports = make(chan int, len(ports))
		for _, p := range ports {
			c.ports <- p
		}
	}
	c.state = c.initialState(cells)
	if err := c.save(); err != nil {
		return err
	}

	// The fleet: an embedded NATS server and in-process workers, or an
	// external NATS that workers elsewhere serve.
	natsURL := o.natsURL
	var nc *nats.Conn
	if natsURL == "" {
		emb, err := queue.StartEmbedded(queue.EmbeddedOptions{StoreDir: filepath.Join(dir, "nats"), Listen: true})
		if err != nil {
			return err
		}
		defer emb.Shutdown()
		natsURL = emb.URL()
		if o.workers < 0 {
			o.workers = 2
		}
	} else if o.workers < 0 {
		o.workers = 0
	}
	natsOpts, err := o.nats.options()
	if err != nil {
		return usageError{err}
	}
	nc, err = queue.Connect(ctx, natsURL, queue.ConnectOptions{Name: "skillfleet-campaign", Logger: log, Extra: natsOpts})
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	if _, err := queue.EnsureStream(ctx, js, queue.StreamOptions{Replicas: o.nats.replicas}); err != nil {
		return err
	}
	if err := queue.EnsureConsumers(ctx, js, queue.ConsumerOptions{AckWait: o.ackWait}); err != nil {
		return err
	}
	if _, err := queue.RunsKV(ctx, js, o.nats.replicas); err != nil {
		return err
	}
	if o.workers > 0 {
		stop, err := startLocalWorkers(ctx, log, workerSetup{
			nc: func() (*nats.Conn, error) {
				return queue.Connect(ctx, natsURL, queue.ConnectOptions{Name: "skillfleet-worker", Logger: log, Extra: natsOpts})
			},
			n: o.workers, concurrency: o.concurrency, optConcurrency: o.optConc, maxDeliver: 5,
		})
		if err != nil {
			return err
		}
		defer stop()
	}
	c.natsURL = natsURL
	if o.ui.addr != "" {
		srv, err := serveUI(ctx, o.ui, []string{dir}, prices, nil, log, stderr)
		if err != nil {
			return err
		}
		defer srv.Close()
	}
	fmt.Fprintf(stdout, "skillfleet: campaign %s: %d cells, up to %d at once; %s; campaign dir %s\n",
		c.name(), len(cells), spec.MaxActiveRuns, fleetLine(o, natsURL), dir)
	if isTTY(stdout) {
		// One live status line below the cells' lines (see ui.go).
		c.term = ui.NewTerminal(stdout)
		c.stdout = c.term
	}
	c.run(ctx)
	if c.term != nil {
		c.term.Close()
	}
	fmt.Fprintln(stdout)
	if err := c.state.WriteText(stdout); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "results: %s (skillfleet report %s [--csv|--html FILE])\n", filepath.Join(dir, campaign.FileName), dir)
	counts := c.state.Counts()
	if ctx.Err() != nil || c.stopErr() != nil {
		why := "stopped on request"
		if err := c.stopErr(); err != nil {
			why = err.Error()
		}
		return codedError{exitStopped, fmt.Errorf("campaign %s; re-run the same command to resume every cell", why)}
	}
	if n := counts[campaign.StateFailed]; n > 0 {
		return codedError{exitCampaignFailed + min(n, 100), fmt.Errorf("campaign: %d of %d cells failed (see each cell's cell.log)", n, len(cells))}
	}
	return nil
}

func fleetLine(o campaignOpts, url string) string {
	if o.natsURL == "" {
		return fmt.Sprintf("all-in-one (embedded NATS, %d in-process workers)", o.workers)
	}
	if o.workers > 0 {
		return fmt.Sprintf("fleet on %s plus %d in-process workers", url, o.workers)
	}
	return "fleet on " + url
}

// campaignRun is a campaign in progress.
type campaignRun struct {
	o       campaignOpts
	spec    *campaign.Spec
	dir     string
	log     *slog.Logger
	prices  *pricing.Table
	stdout  io.Writer
	term    *ui.Terminal // the status line, when stdout is a terminal
	natsURL string
	started time.Time

	// ports, when set, is the pool of gRPC ports cells listen on.
	ports chan int

	mu     sync.Mutex
	state  *campaign.File
	active map[string]*trainer.Trainer
	// spentDone is the spend of cells that finished in this process.
	stopped error
}

func (c *campaignRun) name() string {
	if c.spec.Name != "" {
		return c.spec.Name
	}
	return filepath.Base(c.dir)
}

// initialState builds campaign.json's cells, keeping the results of cells
// a previous invocation finished.
func (c *campaignRun) initialState(cells []campaign.Cell) *campaign.File {
	prev, _ := campaign.Read(c.dir)
	f := &campaign.File{Name: c.name(), Spec: c.o.file, Started: time.Now().UTC()}
	old := map[string]campaign.CellStatus{}
	if prev != nil {
		f.Started = prev.Started
		for _, cs := range prev.Cells {
			old[cs.Name] = cs
		}
	}
	for _, cell := range cells {
		st := campaign.CellStatus{Cell: cell, State: campaign.StateQueued, Dir: filepath.ToSlash(filepath.Join("cells", cell.Name))}
		if p, ok := old[cell.Name]; ok && p.State == campaign.StateDone && sameCell(p.Cell, cell) {
			st = p
		}
		f.Cells = append(f.Cells, st)
	}
	return f
}

func sameCell(a, b campaign.Cell) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func (c *campaignRun) save() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return campaign.Write(c.dir, c.state)
}

func (c *campaignRun) update(name string, fn func(*campaign.CellStatus)) {
	c.mu.Lock()
	for i := range c.state.Cells {
		if c.state.Cells[i].Name == name {
			fn(&c.state.Cells[i])
		}
	}
	err := campaign.Write(c.dir, c.state)
	c.mu.Unlock()
	if err != nil {
		c.log.Error("write campaign.json", "err", err)
	}
}

func (c *campaignRun) stopErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopped
}

// spend is the campaign's spend so far: finished cells from their
// results, running cells from their trainers.
func (c *campaignRun) spend() (tokens int64, usd float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cs := range c.state.Cells {
		if tr, ok := c.active[cs.Name]; ok {
			tot := tr.Accounting().Total()
			tokens += tot.Tokens()
			usd += c.prices.Price(tr.Accounting().PriceRows()).Total
			continue
		}
		tokens += cs.Tokens
		if cs.USD != nil {
			usd += *cs.USD
		}
	}
	return tokens, usd
}

// budgetErr is non-nil once the campaign's own budget is spent.
func (c *campaignRun) budgetErr() error {
	b := c.spec.Budget
	if b.MaxWall > 0 && time.Since(c.started) >= time.Duration(b.MaxWall) {
		return fmt.Errorf("%w: the campaign's budget.max_wall (%s elapsed)", trainer.ErrBudget, time.Since(c.started).Round(time.Second))
	}
	if b.MaxTokens == 0 && b.MaxUSD == 0 {
		return nil
	}
	tok, usd := c.spend()
	switch {
	case b.MaxTokens > 0 && tok >= b.MaxTokens:
		return fmt.Errorf("%w: the campaign's budget.max_tokens (%d tokens spent, limit %d)", trainer.ErrBudget, tok, b.MaxTokens)
	case b.MaxUSD > 0 && usd >= b.MaxUSD:
		return fmt.Errorf("%w: the campaign's budget.max_usd ($%.4f spent, limit $%.4f)", trainer.ErrBudget, usd, b.MaxUSD)
	}
	return nil
}

// run runs every cell not yet done, at most MaxActiveRuns at once; an
// eval-only cell starts once the cell it measures is done.
func (c *campaignRun) run(ctx context.Context) {
	c.started = time.Now()
	sem := make(chan struct{}, c.spec.MaxActiveRuns)
	done := map[string]chan struct{}{}
	for _, cs := range c.state.Cells {
		done[cs.Name] = make(chan struct{})
		if cs.State == campaign.StateDone {
			close(done[cs.Name])
		}
	}
	every := 10 * time.Second
	if c.term != nil {
		every = time.Second
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	progressDone := make(chan struct{})
	go func() {
		for {
			select {
			case <-progressDone:
				return
			case <-tick.C:
				c.printProgress()
			}
		}
	}()
	var wg sync.WaitGroup
	for _, cs := range c.state.Cells {
		if cs.State == campaign.StateDone {
			continue
		}
		cell := cs.Cell
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done[cell.Name])
			if cell.EvalFrom != "" {
				select {
				case <-done[cell.EvalFrom]:
				case <-ctx.Done():
					return
				}
				if st := c.cellState(cell.EvalFrom); st != campaign.StateDone {
					c.update(cell.Name, func(s *campaign.CellStatus) {
						s.State, s.Error = campaign.StateFailed, fmt.Sprintf("the cell it measures, %s, is %s", cell.EvalFrom, st)
					})
					return
				}
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			if ctx.Err() != nil || c.stopErr() != nil {
				return
			}
			if err := c.budgetErr(); err != nil {
				c.mu.Lock()
				c.stopped = err
				c.mu.Unlock()
				return
			}
			c.runCell(ctx, cell)
		}()
	}
	wg.Wait()
	close(progressDone)
}

func (c *campaignRun) cellState(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cs := range c.state.Cells {
		if cs.Name == name {
			return cs.State
		}
	}
	return ""
}

func (c *campaignRun) printProgress() {
	c.mu.Lock()
	counts, total := c.state.Counts(), len(c.state.Cells)
	c.mu.Unlock()
	tok, usd := c.spend()
	if c.term != nil {
		c.term.SetText(campaignLine(counts, total, tok, usd, time.Since(c.started)))
		return
	}
	fmt.Fprintf(c.stdout, "campaign: %d done, %d running, %d queued, %d failed; %s tokens, $%.2f; %s\n",
		counts[campaign.StateDone], counts[campaign.StateRunning], counts[campaign.StateQueued], counts[campaign.StateFailed],
		fmtTokens(tok), usd, time.Since(c.started).Round(time.Second))
}

// runCell trains (or evaluates) one cell in its own run dir, logging to
// the cell's cell.log, and records its results.
func (c *campaignRun) runCell(ctx context.Context, cell campaign.Cell) {
	cellDir := filepath.Join(c.dir, "cells", cell.Name)
	start := time.Now()
	now := start.UTC()
	c.update(cell.Name, func(s *campaign.CellStatus) {
		s.State, s.Error, s.Started, s.Ended = campaign.StateRunning, "", &now, nil
	})
	fmt.Fprintf(c.stdout, "cell %s: started\n", cell.Name)
	if err := os.MkdirAll(cellDir, 0o755); err != nil {
		c.finish(cell, start, fmt.Errorf("cell dir: %w", err))
		return
	}
	logf, err := os.OpenFile(filepath.Join(cellDir, "cell.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.finish(cell, start, fmt.Errorf("cell log: %w", err))
		return
	}
	defer logf.Close()
	fmt.Fprintf(logf, "== %s campaign cell %s\n", time.Now().UTC().Format(time.RFC3339), cell.Name)
	port := 0
	if c.ports != nil {
		port = <-c.ports // as many ports as active cells: never blocks long
		defer func() { c.ports <- port }()
	}
	if cell.EvalFrom != "" {
		err = c.evalCell(ctx, cell, cellDir, logf, port)
	} else {
		err = c.trainCell(ctx, cell, cellDir, logf, port)
	}
	c.finish(cell, start, err)
}

func (c *campaignRun) baseOpts(cell campaign.Cell, out string, port int) trainOpts {
	o := trainOpts{
		config: c.spec.ConfigPath(cell.Config), sets: multiFlag(append(append([]string(nil), cell.Sets...), c.o.sets...)), out: out,
		natsURL: c.natsURL, nats: c.o.nats, redis: c.o.redis, grpcAddr: net.JoinHostPort(c.o.grpcHost, strconv.Itoa(port)), advertise: c.o.advertise, workers: 0,
		logFormat: "text", logLevel: "info", prices: c.o.prices, ackWait: c.o.ackWait, weight: cell.Weight,
		grpcTLS: c.o.grpcTLS,
	}
	o.exposure.insecureGRPC = c.o.insecure
	return o
}

func (c *campaignRun) trainCell(ctx context.Context, cell campaign.Cell, cellDir string, logf io.Writer, port int) error {
	o := c.baseOpts(cell, cellDir, port)
	o.hooks = &runHooks{
		started: func(tr *trainer.Trainer) {
			c.mu.Lock()
			c.active[cell.Name] = tr
			c.mu.Unlock()
		},
		stop: c.budgetErr,
	}
	defer func() {
		c.mu.Lock()
		delete(c.active, cell.Name)
		c.mu.Unlock()
	}()
	if err := train(ctx, o, logf, logf); err != nil {
		return err
	}
	if !c.spec.MeasureNoSkill() {
		return nil
	}
	// The no-skill column: the test split with an empty skill, in the
	// cell's own eval dir (resumable like any run).
	empty := filepath.Join(cellDir, "no_skill.md")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		return err
	}
	eo := c.baseOpts(cell, filepath.Join(cellDir, "no_skill"), port)
	return evalSkill(ctx, eo, empty, "test", false, logf, logf)
}

func (c *campaignRun) evalCell(ctx context.Context, cell campaign.Cell, cellDir string, logf io.Writer, port int) error {
	src := filepath.Join(c.dir, "cells", cell.EvalFrom, "best_skill.md")
	if _, err := os.Stat(src); err != nil {
		return fmt.Errorf("the best skill of %s: %w", cell.EvalFrom, err)
	}
	cfgCell := cell
	if cfgCell.Config == "" {
		cfgCell.Config = c.cellConfig(cell.EvalFrom)
	}
	eo := c.baseOpts(cfgCell, cellDir, port)
	return evalSkill(ctx, eo, src, cell.EvalSplit, true, logf, logf)
}

func (c *campaignRun) cellConfig(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cs := range c.state.Cells {
		if cs.Name == name {
			return cs.Config
		}
	}
	return ""
}

// finish records a cell's outcome and results.
func (c *campaignRun) finish(cell campaign.Cell, start time.Time, err error) {
	cellDir := filepath.Join(c.dir, "cells", cell.Name)
	state := campaign.StateDone
	msg := ""
	switch {
	case err == nil:
	case errors.Is(err, trainer.ErrBudget), errors.Is(err, trainer.ErrStopped), errors.Is(err, context.Canceled):
		state, msg = campaign.StateStopped, firstLine(err.Error())
	default:
		state, msg = campaign.StateFailed, firstLine(err.Error())
	}
	res := readCellResults(cellDir, cell, c.prices)
	end := time.Now().UTC()
	c.update(cell.Name, func(s *campaign.CellStatus) {
		s.State, s.Error, s.Ended = state, msg, &end
		s.WallS = time.Since(start).Seconds()
		s.NoSkill, s.SeedSkill, s.Best = res.noSkill, res.seed, res.best
		s.SelectionCurrent, s.SelectionBest = res.selCurrent, res.selBest
		s.Accepted, s.Calls, s.Tokens, s.USD = res.accepted, res.calls, res.tokens, res.usd
	})
	line := fmt.Sprintf("cell %s: %s", cell.Name, state)
	if res.best != nil && res.seed != nil {
		line += fmt.Sprintf(" (test %.3f → %.3f)", *res.seed, *res.best)
	}
	if msg != "" {
		line += ": " + msg
	}
	fmt.Fprintln(c.stdout, line)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

type cellResults struct {
	noSkill, seed, best *float64
	selCurrent, selBest *float64
	accepted            int
	calls, tokens       int64
	usd                 *float64
}

// readCellResults reads a cell's results from its run dir (summary.json,
// or eval_summary.json for an eval-only cell, and the no-skill eval).
func readCellResults(cellDir string, cell campaign.Cell, prices *pricing.Table) cellResults {
	var r cellResults
	if cell.EvalFrom != "" {
		scores := readEvalScores(cellDir)
		r.noSkill, r.seed, r.best = scores["no_skill"], scores["seed_skill"], scores["skill"]
	} else {
		var sum trainer.Summary
		if b, err := os.ReadFile(filepath.Join(cellDir, "summary.json")); err == nil && json.Unmarshal(b, &sum) == nil {
			if v, ok := sum.TestHard["baseline"]; ok {
				r.seed = &v
			}
			if v, ok := sum.TestHard["best"]; ok {
				r.best = &v
			}
			r.selBest = &sum.BestScore
			r.selCurrent = sum.FinalScore
			r.accepted = sum.Accepts
		}
		if scores := readEvalScores(filepath.Join(cellDir, "no_skill")); scores["skill"] != nil {
			r.noSkill = scores["skill"]
		}
	}
	for _, d := range []string{cellDir, filepath.Join(cellDir, "no_skill")} {
		calls, toks, usd, ok := readSpend(d, prices)
		r.calls += calls
		r.tokens += toks
		if ok {
			if r.usd == nil {
				r.usd = new(float64)
			}
			*r.usd += usd
		}
	}
	return r
}

func readEvalScores(dir string) map[string]*float64 {
	out := map[string]*float64{}
	b, err := os.ReadFile(filepath.Join(dir, "eval_summary.json"))
	if err != nil {
		return out
	}
	var res []trainer.EvalResult
	if json.Unmarshal(b, &res) != nil {
		return out
	}
	for _, e := range res {
		if ts, ok := e.ByType["overall"]; ok {
			v := ts.Hard
			out[e.Name] = &v
		}
	}
	return out
}

// readSpend totals a run dir's tokens.json (calls, tokens and, when the
// price table prices every model, dollars).
func readSpend(dir string, prices *pricing.Table) (calls, tokens int64, usd float64, priced bool) {
	b, err := os.ReadFile(filepath.Join(dir, "tokens.json"))
	if err != nil {
		return 0, 0, 0, false
	}
	var tf struct {
		Rows  []pricing.Row `json:"rows"`
		Total struct {
			Calls        int64 `json:"calls"`
			InputTokens  int64 `json:"input_tokens"`
			OutputTokens int64 `json:"output_tokens"`
		} `json:"total"`
	}
	if json.Unmarshal(b, &tf) != nil {
		return 0, 0, 0, false
	}
	rows := tf.Rows
	models := map[string]bool{}
	for _, r := range rows {
		models[r.Model] = true
	}
	priced = len(rows) > 0
	for m := range models {
		if _, _, ok := prices.Lookup(m); !ok {
			priced = false
		}
	}
	if priced {
		usd = prices.Price(rows).Total
	}
	return tf.Total.Calls, tf.Total.InputTokens + tf.Total.OutputTokens, usd, priced
}

// portRange parses FIRST-LAST.
func portRange(s string) ([]int, error) {
	a, b, ok := strings.Cut(s, "-")
	lo, err1 := strconv.Atoi(strings.TrimSpace(a))
	hi, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || lo < 1 || hi > 65535 || hi < lo {
		return nil, fmt.Errorf("%q is not a port range FIRST-LAST", s)
	}
	out := make([]int, 0, hi-lo+1)
	for p := lo; p <= hi; p++ {
		out = append(out, p)
	}
	return out, nil
}
