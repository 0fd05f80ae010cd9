package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/coordinator/campaign"
	"github.com/skillfleet/skillfleet/internal/fleet"
	"github.com/skillfleet/skillfleet/internal/serve"
	"github.com/skillfleet/skillfleet/internal/ui"
	"github.com/skillfleet/skillfleet/pkg/config"
	"github.com/skillfleet/skillfleet/pkg/pricing"
	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/store/redisstore"
	"github.com/skillfleet/skillfleet/pkg/telemetry"
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
	// member, set, makes this process one of several serving the
	// campaign through its state on NATS (docs/campaigns.md).
	member   string
	leaseTTL time.Duration
	sticky   bool
	cells    string
	replicas int
	stay     bool
	// metricsAddr serves the campaign process's Prometheus metrics.
	metricsAddr string
	// noPreflight skips the credential check of the cells' models.
	noPreflight bool
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
	fs.DurationVar(&o.ackWait, "ack-wait", 0, "how long a dead worker's task waits before another worker gets it (default: the fleet's task consumers', "+queue.DefaultAckWait.String()+" when the campaign creates them)")
	o.ui.register(fs)
	fs.Var(&o.sets, "set", "override a config key in every cell, section.key=value (repeatable; after the campaign file's own settings)")
	fs.StringVar(&o.grpcHost, "grpc-host", "127.0.0.1", "host the campaign's gRPC endpoint listens on (one for all its cells)")
	o.grpcTLS.register(fs)
	fs.StringVar(&o.ports, "grpc-port", "", "port the campaign's gRPC endpoint listens on, one for all its cells (default: any free port)")
	fs.StringVar(&o.ports, "grpc-ports", "", "deprecated: same as --grpc-port; of a range FIRST-LAST only FIRST is used")
	fs.BoolVar(&o.insecure, "insecure-grpc", false, "let the campaign's gRPC endpoint listen beyond loopback (--grpc-host) without mutual TLS")
	fs.StringVar(&o.advertise, "advertise-host", "", "host name workers dial to reach the campaign's gRPC endpoint (default: the listen host; needed with --grpc-host 0.0.0.0)")
	fs.StringVar(&o.member, "member", "", "serve the campaign together with other campaign processes (on this host or others) that share its state on --nats: this process's name among them, stable across its restarts (e.g. the pod name)")
	fs.DurationVar(&o.leaseTTL, "lease-ttl", 15*time.Second, "with --member: a member that has not renewed a running cell for this long counts as gone, and another member takes the cell")
	fs.BoolVar(&o.sticky, "sticky", false, "with --member: a gone member's cells wait for it to come back (each member's run dirs on its own volume) instead of resuming elsewhere (run dirs on a shared volume)")
	fs.StringVar(&o.cells, "cells", "", "with --member: serve only the cells whose names match one of these comma-separated globs (e.g. 'eval-*')")
	fs.BoolVar(&o.stay, "stay", false, "once the campaign has ended (or stopped), stay up idle until stopped instead of exiting (a StatefulSet member that exits is restarted)")
	fs.StringVar(&o.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics (loopback only): each cell's spend, and the in-process workers' calls and tokens by stage")
	fs.BoolVar(&o.noPreflight, "no-preflight", false, "do not check each distinct model's credentials (key variable set, one GET /models) before the first cell starts; the check runs only with in-process workers")
	fs.IntVar(&o.replicas, "state-replicas", 1, "with --member: replicas of the campaign's state bucket on a clustered NATS (at least --nats-replicas)")
	if help, err := parse(fs, args); help || err != nil {
		return err
	}
	if o.file == "" {
		return usageError{errors.New("campaign: --config is required")}
	}
	if o.member != "" && o.natsURL == "" {
		return usageError{errors.New("campaign: --member needs --nats: the members share the campaign's state on one NATS")}
	}
	if o.member != "" && !campaign.ValidMember(o.member) {
		return usageError{fmt.Errorf("campaign: --member %q: use letters, digits, '.', '-' and '_'", o.member)}
	}
	if o.member == "" && (o.sticky || o.cells != "") {
		return usageError{errors.New("campaign: --sticky and --cells are for a member of a shared campaign (--member)")}
	}
	sel, err := campaign.SelectGlobs(o.cells)
	if err != nil {
		return usageError{fmt.Errorf("campaign: --cells: %w", err)}
	}
	spec, err := campaign.Load(o.file)
	if err != nil {
		return usageError{err}
	}
	// Every cell's config is checked before any cell starts, then every
	// distinct model the cells call, where this process's workers call
	// them (external workers have their own environment).
	cellCfgs, err := spec.CellConfigs(o.sets)
	if err != nil {
		return usageError{err}
	}
	if !o.noPreflight && (o.workers > 0 || (o.workers < 0 && o.natsURL == "")) {
		byCell := make(map[string]*config.Config, len(cellCfgs))
		for name, cfg := range cellCfgs {
			byCell["cell "+name+" "] = cfg
		}
		if err := preflightConfigs(ctx, byCell); err != nil {
			return err
		}
	}
	if o.maxActive > 0 {
		spec.MaxActiveRuns = o.maxActive
	}
	dir, unlock, err := campaign.OpenDir(cmp.Or(o.out, spec.DefaultDir()), o.member)
	if err != nil {
		return err
	}
	defer unlock()
	log, err := newLogger(stderr, "text", o.logLevel)
	if err != nil {
		return err
	}
	x := exposureFlags{insecure: serve.Insecure{GRPC: o.insecure}}
	if err := x.check(log, serve.Exposure{GRPCAddr: net.JoinHostPort(o.grpcHost, "0"), GRPCMutualTLS: o.grpcTLS.mutual(), Metrics: o.metricsAddr,
		Peers: []serve.Peer{natsPeer(o.natsURL, o.nats), redisPeer(o.redis)}}); err != nil {
		return usageError{err}
	}
	prices, err := pricing.LoadOrDefault(o.prices)
	if err != nil {
		return usageError{fmt.Errorf("campaign: --prices: %w", err)}
	}
	if err := o.ui.check(); err != nil {
		return err
	}
	port, err := campaign.ParsePort(o.ports)
	if err != nil {
		return usageError{fmt.Errorf("campaign: --grpc-port: %w", err)}
	}
	natsOpts, err := o.nats.options()
	if err != nil {
		return usageError{err}
	}
	grpcOpts, err := o.grpcTLS.options(log)
	if err != nil {
		return err
	}
	var shared *redisstore.Store
	if o.redis.url != "" {
		if shared, err = o.redis.open(ctx, log); err != nil {
			return usageError{err}
		}
		defer shared.Close()
	}
	// The campaign's own telemetry (each cell's run sets up its own): the
	// campaign and cell spans, the in-process workers' task and model-call
	// spans, and the shared endpoint's spans, exported where the
	// OTEL_EXPORTER_OTLP_* variables say.
	name := spec.Name
	if name == "" {
		name = filepath.Base(dir)
	}
	tel, stopTel, err := setupTelemetry(ctx, "skillfleet-campaign", name, o.metricsAddr, false, log)
	if err != nil {
		return err
	}
	defer stopTel()
	if err := telemetry.ObserveCampaign(tel.MeterProvider, name, func() []telemetry.CellSpend { return cellSpend(dir) }); err != nil {
		return err
	}
	// The fleet: an embedded NATS server and in-process workers, or an
	// external NATS that workers elsewhere serve.
	fl, err := fleet.StartCampaign(ctx, fleet.CampaignOptions{
		Dir: dir, NATSURL: o.natsURL, NATSOptions: natsOpts, Replicas: o.nats.replicas, AckWait: o.ackWait,
		GRPCHost: o.grpcHost, GRPCPort: port, Advertise: o.advertise, GRPCServerOptions: grpcOpts,
		Workers: o.workers, Concurrency: o.concurrency, OptimizerConcurrency: o.optConc, Logger: log, Telemetry: tel,
	})
	if err != nil {
		return err
	}
	defer fl.Close()
	if o.ui.addr != "" {
		srv, err := serveUI(ctx, o.ui, []string{dir}, prices, nil, log, stderr)
		if err != nil {
			return err
		}
		defer srv.Close()
	}

	// On a terminal, one live status line below the cells' lines.
	out := ui.NewConsole(stdout, ui.IsTerminal(stdout))
	cfg := campaign.Config{
		Spec: spec, Dir: dir, Prices: prices, Log: log, Out: out,
		Progress: func(s campaign.Status) { out.Status(s.Line(), s.String()) }, ProgressEvery: 10 * time.Second,
		Tracer: tel.Tracer,
	}
	if out.Terminal() != nil {
		cfg.ProgressEvery = time.Second
	}
	if o.member != "" {
		store, err := campaign.NewKVStore(ctx, fl.JS, spec.StateName(), max(o.replicas, o.nats.replicas))
		if err != nil {
			return err
		}
		cfg.Store, cfg.Member, cfg.LeaseTTL, cfg.Sticky, cfg.Select = store, o.member, o.leaseTTL, o.sticky, sel
	}
	cells := &campaign.Cells{
		Base: coordinator.Config{NATSURL: fl.URL, NATSOptions: natsOpts, NATSReplicas: o.nats.replicas, GRPCServerOptions: grpcOpts,
			Endpoint: fl.Endpoint, AckWait: o.ackWait, Shared: shared, Prices: prices},
		Deps: func(log *slog.Logger) coordinator.Deps { return trainOpts{}.runDeps(log) },
		Sets: o.sets,
	}
	camp, err := campaign.New(cfg, campaign.Deps{Run: cells.Run})
	if err != nil {
		return usageError{err}
	}
	if err := camp.WriteStart(stdout, fl.String()); err != nil {
		return err
	}
	f, runErr := camp.Run(ctx)
	out.Close()
	if f == nil {
		return runErr
	}
	fmt.Fprintln(stdout)
	if err := f.WriteEnd(stdout, dir); err != nil {
		return err
	}
	result := campaignExit(ctx, runErr, f)
	if o.stay && ctx.Err() == nil {
		fmt.Fprintln(stdout, "campaign ended; staying up (--stay) until stopped")
		<-ctx.Done()
	}
	return result
}

// campaignExit is the campaign command's outcome: stopped (exit 4), N
// cells failed (exit 10+N), or nil.
func campaignExit(ctx context.Context, runErr error, f *campaign.File) error {
	if ctx.Err() != nil || runErr != nil {
		why := "stopped on request"
		if runErr != nil && ctx.Err() == nil {
			why = runErr.Error()
		}
		return codedError{exitStopped, fmt.Errorf("campaign %s; re-run the same command to resume every cell", why)}
	}
	counts := f.Counts()
	if n := counts[campaign.StateFailed]; n > 0 {
		return codedError{exitCampaignFailed + min(n, 100), fmt.Errorf("campaign: %d of %d cells failed (see each cell's cell.log)", n, len(f.Cells))}
	}
	if n := counts[campaign.StateStopped]; n > 0 {
		// Cells that stopped on their own budget or a stop request.
		var why []string
		for _, c := range f.Cells {
			if c.State == campaign.StateStopped {
				why = append(why, "cell "+c.Name+": "+c.Error)
			}
		}
		return codedError{exitStopped, fmt.Errorf("campaign: %d of %d cells stopped (%s); raise the budget in the cell's config if it was reached, and re-run the same command to resume them", n, len(f.Cells), strings.Join(why, "; "))}
	}
	return nil
}

// cellSpend is each cell's spend as campaign.json records it (running
// cells' records carry their live spend).
func cellSpend(dir string) []telemetry.CellSpend {
	f, err := campaign.Read(dir)
	if err != nil {
		return nil
	}
	out := make([]telemetry.CellSpend, 0, len(f.Cells))
	for _, c := range f.Cells {
		s := telemetry.CellSpend{Cell: c.Name, Calls: c.Calls, Tokens: c.Tokens}
		if c.USD != nil {
			s.USD, s.Priced = *c.USD, true
		}
		out = append(out, s)
	}
	return out
}
