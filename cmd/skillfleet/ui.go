package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/coordinator/campaign"
	"github.com/skillfleet/skillfleet/coordinator/rpcserver"
	"github.com/skillfleet/skillfleet/coordinator/trainer"
	"github.com/skillfleet/skillfleet/internal/ui"
	"github.com/skillfleet/skillfleet/pkg/pricing"
	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/store"
	"github.com/skillfleet/skillfleet/pkg/store/redisstore"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// uiFlags are the dashboard flags of train, coordinator (and campaign).
type uiFlags struct {
	addr     string
	insecure bool
}

func (u *uiFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&u.addr, "ui", "", "serve the live dashboard on this address, e.g. 127.0.0.1:8080 (off by default; beyond loopback it needs "+ui.TokenEnv+" or --ui-insecure)")
	fs.BoolVar(&u.insecure, "ui-insecure", false, "let --ui listen beyond loopback without "+ui.TokenEnv+" (anyone who can reach it sees the run)")
}

// check refuses a --ui address beyond loopback without a token, before
// any work starts.
func (u uiFlags) check() error {
	if u.addr == "" {
		return nil
	}
	if err := ui.CheckBind(u.addr, os.Getenv(ui.TokenEnv), u.insecure); err != nil {
		return usageError{err}
	}
	return nil
}

// serveUI starts the dashboard for dirs and prints where it is. The lead's
// campaign command calls it with the campaign dir. fleet may be nil.
func serveUI(ctx context.Context, u uiFlags, dirs []string, prices *pricing.Table, fleet func(context.Context) (*ui.Fleet, error), log *slog.Logger, stderr io.Writer) (*ui.Server, error) {
	if err := u.check(); err != nil {
		return nil, err
	}
	srv, err := ui.Serve(ctx, ui.Options{Addr: u.addr, Token: os.Getenv(ui.TokenEnv), Insecure: u.insecure, Prices: prices, Fleet: fleet, Log: log}, dirs...)
	if err != nil {
		return nil, usageError{err}
	}
	how := "read-only"
	if os.Getenv(ui.TokenEnv) != "" {
		how = "open it once as " + srv.URL() + "?token=$" + ui.TokenEnv + "; stopping enabled"
	}
	fmt.Fprintf(stderr, "dashboard: %s (%s)\n", srv.URL(), how)
	return srv, nil
}

// progressWiring routes a run's progress: on a terminal, one status line
// below the plain lines; with --ui, progress.json in the run dir for the
// dashboard.
type progressWiring struct {
	out       io.Writer
	term      *ui.Terminal
	file      *ui.ProgressFile
	listeners []func(ui.Progress)
}

func newProgressWiring(stdout io.Writer, tty bool) *progressWiring {
	pw := &progressWiring{out: stdout}
	if tty {
		pw.term = ui.NewTerminal(stdout)
		pw.out = pw.term
		pw.listeners = append(pw.listeners, pw.term.Update)
	}
	return pw
}

func (pw *progressWiring) listen(p ui.Progress) {
	for _, f := range pw.listeners {
		f(p)
	}
}

// attach connects the trainer's progress and spend (priced with the
// --prices table, else the built-in one) and, with --ui, starts the
// dashboard on the run dir with the hub's fleet.
func (pw *progressWiring) attach(ctx context.Context, u uiFlags, pricesFile, runDir string, prog *coordinator.Progress, tr *trainer.Trainer,
	hub *coordinator.Hub, reg store.Registry, levels bucketLevels, log *slog.Logger, stderr io.Writer) error {
	prices := pricing.Default()
	if pricesFile != "" {
		var err error
		if prices, err = pricing.Load(pricesFile); err != nil {
			return usageError{fmt.Errorf("--prices: %w", err)}
		}
	}
	if pw.term != nil {
		pw.term.SetSpend(func() (int64, *float64) {
			b := prices.Price(tr.Accounting().PriceRows())
			tok := tr.Accounting().Total().Tokens()
			if !b.Complete() {
				return tok, nil
			}
			return tok, &b.Total
		})
	}
	if u.addr != "" {
		pw.file = ui.NewProgressFile(runDir, 0)
		pw.file.SetSpend(func() any {
			rows, _ := tr.Accounting().Report()["rows"].([]trainer.Row)
			out := make([]ui.ProgressRow, len(rows))
			for i, r := range rows {
				out[i] = ui.NewProgressRow(r.Stage, r.Role, r.Model, r.Totals)
			}
			return out
		})
		pw.listeners = append(pw.listeners, pw.file.Update)
		if _, err := serveUI(ctx, u, []string{runDir}, prices, fleetStatus(hub, reg, levels), log, stderr); err != nil {
			return err
		}
	}
	prog.Listen(pw.listen)
	return nil
}

func (pw *progressWiring) close() {
	if pw.file != nil {
		_ = pw.file.Close()
	}
	if pw.term != nil {
		pw.term.Close()
	}
}

// bucketLevels reads the rate buckets shared in Redis (redisstore's
// Limiter), which the workers cannot tell the levels of.
type bucketLevels interface {
	Level(ctx context.Context, key string, ratePerMin, burst int64) (float64, error)
}

// redisLevels is st's shared buckets, or nil without a shared store.
func redisLevels(st *redisstore.Store) bucketLevels {
	if st == nil {
		return nil
	}
	return st.Limiter()
}

// fleetStatus reports the hub's workers, queues and the shared registry
// (reg may be nil), as /status does, and the levels of the rate buckets
// shared in Redis (levels may be nil).
func fleetStatus(hub *coordinator.Hub, reg store.Registry, levels bucketLevels) func(context.Context) (*ui.Fleet, error) {
	return func(ctx context.Context) (*ui.Fleet, error) {
		if hub == nil {
			return nil, errors.New("no coordinator in this process")
		}
		f := &ui.Fleet{Pending: hub.D.Pending(), Recorded: hub.D.Recorded(), Workers: []ui.FleetWorker{}}
		for _, w := range hub.RPC.Workers(30 * time.Second) {
			f.Workers = append(f.Workers, ui.FleetWorker{ID: w.ID, Host: w.Hostname, Concurrency: w.Concurrency, InFlight: w.InFlight, Completed: w.Completed, LastSeen: w.LastSeen})
		}
		if hub.Stream != nil {
			for _, c := range queue.Classes {
				q := ui.QueueDepth{Class: string(c)}
				cons, err := hub.Stream.Consumer(ctx, c.Consumer())
				if err == nil {
					info, ierr := cons.Info(ctx)
					if ierr == nil {
						q.Waiting, q.InDelivery = info.NumPending, info.NumAckPending
					}
					err = ierr
				}
				if err != nil {
					q.Error = err.Error()
				}
				f.Queues = append(f.Queues, q)
			}
		}
		if reg != nil {
			list, err := reg.List(ctx)
			if err != nil {
				f.RegistryError = err.Error()
			} else {
				f.Registry = list
			}
		}
		f.Limits = headrooms(hub.RPC.Workers(30 * time.Second))
		if note := sharedLevels(ctx, f.Limits, levels); note != "" {
			f.Notes = append(f.Notes, note)
		}
		if len(f.Limits) == 0 {
			f.Notes = append(f.Notes, "no worker has reported a rate limit: none is configured (model.*_options rpm, tpm, max_concurrency), or no call has been made yet")
		}
		return f, nil
	}
}

// headrooms lists the workers' rate limiters, by worker then endpoint.
func headrooms(workers []rpcserver.WorkerInfo) []ui.Headroom {
	sort.Slice(workers, func(i, j int) bool { return workers[i].ID < workers[j].ID })
	var out []ui.Headroom
	for _, w := range workers {
		for _, l := range w.Limits {
			if l.GetRequestsPerMin() == 0 && l.GetTokensPerMin() == 0 && l.GetMaxConcurrency() == 0 {
				continue // an endpoint called without limits
			}
			h := ui.Headroom{Worker: w.ID, Backend: l.GetBackend(), Endpoint: l.GetEndpoint(), Model: l.GetModel(),
				RPM: l.GetRequestsPerMin(), TPM: l.GetTokensPerMin(), MaxConcurrency: int(l.GetMaxConcurrency()), Cap: int(l.GetConcurrencyCap()),
				InFlight: int(l.GetInFlight()), Waiting: int(l.GetWaiting()), Shared: l.GetShared()}
			if !h.Shared {
				rl, tl := l.GetRequestsLeft(), l.GetTokensLeft()
				h.RequestsLeft, h.TokensLeft = &rl, &tl
			}
			out = append(out, h)
		}
	}
	return out
}

// sharedLevels fills in the levels of the limits whose buckets are shared
// in Redis, reading each bucket once however many workers draw from it.
// The bucket keys are the workers' (backends.Limiter: backend|endpoint|
// model|rpm or |tpm), with the endpoint as the worker reported it; an
// endpoint shown without its credentials or query (see shownEndpoint)
// names no bucket, and its levels stay unknown. It returns a note when the
// store cannot be read.
func sharedLevels(ctx context.Context, limits []ui.Headroom, levels bucketLevels) string {
	if levels == nil {
		return ""
	}
	read := map[string]*float64{}
	var firstErr error
	level := func(key string, perMin int64) *float64 {
		if perMin <= 0 {
			return nil
		}
		if v, ok := read[key]; ok {
			return v
		}
		var out *float64
		if v, err := levels.Level(ctx, key, perMin, perMin); err == nil {
			out = &v
		} else if firstErr == nil {
			firstErr = err
		}
		read[key] = out
		return out
	}
	for i := range limits {
		h := &limits[i]
		if !h.Shared || strings.HasSuffix(h.Endpoint, endpointTrimmed) || h.Endpoint == endpointHidden {
			continue
		}
		key := backends.LimitKey{Backend: h.Backend, Endpoint: h.Endpoint, Model: h.Model}.String()
		h.RequestsLeft, h.TokensLeft = level(key+"|rpm", h.RPM), level(key+"|tpm", h.TPM)
		if h.RPM > 0 && h.RequestsLeft == nil || h.TPM > 0 && h.TokensLeft == nil {
			// Either both levels or none, as for a worker's own buckets.
			h.RequestsLeft, h.TokensLeft = nil, nil
		}
	}
	if firstErr != nil {
		return "the rate buckets shared in Redis could not be read: " + firstErr.Error()
	}
	return ""
}

// limiterStatus reports a worker's limiter for its heartbeats.
func limiterStatus(l *backends.Limiter) func() []*pb.LimitStatus {
	return func() []*pb.LimitStatus {
		var out []*pb.LimitStatus
		for _, s := range l.Status() {
			ls := &pb.LimitStatus{Backend: s.Key.Backend, Endpoint: shownEndpoint(s.Key.Endpoint), Model: s.Key.Model,
				RequestsPerMin: s.Limits.RequestsPerMin, TokensPerMin: s.Limits.TokensPerMin,
				MaxConcurrency: int32(s.Limits.MaxConcurrency), ConcurrencyCap: int32(s.Cap), InFlight: int32(s.InFlight), Waiting: int32(s.Waiting),
				Shared: !s.LevelsKnown}
			if s.LevelsKnown {
				ls.RequestsLeft, ls.TokensLeft = s.RequestsLeft, s.TokensLeft
			}
			out = append(out, ls)
		}
		return out
	}
}

// endpointHidden stands for an endpoint that cannot be shown safely.
const endpointHidden = "(endpoint not shown)"

// endpointTrimmed marks an endpoint shown without parts of it (credentials,
// query, fragment): it no longer names the endpoint's rate buckets.
const endpointTrimmed = " (credentials or query not shown)"

// shownEndpoint is an endpoint as a worker reports it: safeEndpoint's
// form, marked when that dropped something, so that the coordinator does
// not look its shared buckets up under a name no worker draws from.
func shownEndpoint(e string) string {
	s := safeEndpoint(e)
	if s != e && s != endpointHidden {
		s += endpointTrimmed
	}
	return s
}

// safeEndpoint is an endpoint address without credentials, query or
// fragment, fit to show.
func safeEndpoint(e string) string {
	u, err := url.Parse(e)
	if err != nil || (u.Scheme == "" && u.Host == "") {
		if strings.ContainsAny(e, "@?") {
			return endpointHidden
		}
		return e
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}

// campaignLine is a campaign's terminal status line: its cells done,
// running and queued (and failed, stopped) of all, its spend and time so
// far, and an ETA from the pace at which cells end.
func campaignLine(counts map[string]int, total int, tokens int64, usd float64, elapsed time.Duration) string {
	done, failed, stopped := counts[campaign.StateDone], counts[campaign.StateFailed], counts[campaign.StateStopped]
	s := fmt.Sprintf("campaign: cells %d/%d done · %d running · %d queued", done, total, counts[campaign.StateRunning], counts[campaign.StateQueued])
	if failed > 0 {
		s += fmt.Sprintf(" · %d failed", failed)
	}
	if stopped > 0 {
		s += fmt.Sprintf(" · %d stopped", stopped)
	}
	s += fmt.Sprintf(" · %s tok $%.2f · %s", fmtTokens(tokens), usd, elapsed.Round(time.Second))
	if ended, left := done+failed, total-done-failed; ended > 0 && left > 0 {
		s += " · ETA " + (elapsed / time.Duration(ended) * time.Duration(left)).Round(time.Second).String()
	}
	return s
}

// runUI serves the dashboard for finished (or running) runs and campaigns.
func runUI(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("ui", "ui [--addr ADDR] [--prices FILE] DIR...", stderr)
	var u uiFlags
	fs.StringVar(&u.addr, "addr", "127.0.0.1:8080", "listen address (beyond loopback it needs "+ui.TokenEnv+" or --ui-insecure)")
	fs.BoolVar(&u.insecure, "ui-insecure", false, "let --addr listen beyond loopback without "+ui.TokenEnv)
	pricesFile := fs.String("prices", "", "price table YAML (default: the built-in table, see configs/prices.yaml)")
	// Directories may come before, between or after the flags.
	var dirs []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil
			}
			return usageError{err}
		}
		if fs.NArg() == 0 {
			break
		}
		dirs = append(dirs, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(dirs) == 0 {
		return usageError{errors.New("ui: want one or more run or campaign directories")}
	}
	prices := pricing.Default()
	if *pricesFile != "" {
		var err error
		if prices, err = pricing.Load(*pricesFile); err != nil {
			return usageError{fmt.Errorf("ui: --prices: %w", err)}
		}
	}
	srv, err := serveUI(ctx, u, dirs, prices, nil, nil, stdout)
	if err != nil {
		return err
	}
	<-ctx.Done()
	srv.Close()
	return nil
}
