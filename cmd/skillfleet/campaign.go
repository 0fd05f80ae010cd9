package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/coordinator/campaign"
	"github.com/skillfleet/skillfleet/internal/fleet"
	"github.com/skillfleet/skillfleet/internal/serve"
	"github.com/skillfleet/skillfleet/internal/ui"
	"github.com/skillfleet/skillfleet/pkg/pricing"
	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/store/redisstore"
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
	// One process per campaign dir; one per member name when members
	// share the dir.
	lockDir := dir
	if o.member != "" {
		lockDir = filepath.Join(dir, "members", o.member)
		if err := os.MkdirAll(lockDir, 0o755); err != nil {
			return fmt.Errorf("campaign dir: %w", err)
		}
	}
	unlock, err := lockRunDir(lockDir)
	if err != nil {
		return err
	}
	defer unlock()
	log, err := newLogger(stderr, "text", o.logLevel)
	if err != nil {
		return err
	}
	x := exposureFlags{insecure: serve.Insecure{GRPC: o.insecure}}
	if err := x.check(log, serve.Exposure{GRPCAddr: net.JoinHostPort(o.grpcHost, "0"), GRPCMutualTLS: o.grpcTLS.mutual(),
		Peers: []serve.Peer{natsPeer(o.natsURL, o.nats), redisPeer(o.redis)}}); err != nil {
		return usageError{err}
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
	port, err := endpointPort(o.ports)
	if err != nil {
		return usageError{fmt.Errorf("campaign: --grpc-port: %w", err)}
	}

	// The fleet: an embedded NATS server and in-process workers, or an
	// external NATS that workers elsewhere serve.
	natsURL := o.natsURL
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
	grpcOpts, err := o.grpcTLS.options()
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
	nc, err := queue.Connect(ctx, natsURL, queue.ConnectOptions{Name: "skillfleet-campaign", Logger: log, Extra: natsOpts})
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
	ep, err := o.endpoint(ctx, nc, port, grpcOpts, log)
	if err != nil {
		return err
	}
	defer func() { _ = ep.Close() }()
	if o.workers > 0 {
		stop, err := fleet.StartLocal(ctx, log, coordinator.WorkerSpec{
			N: o.workers, Concurrency: o.concurrency, OptimizerConcurrency: o.optConc, MaxDeliver: 5,
			Connect: func(name string) (*nats.Conn, error) {
				return queue.Connect(ctx, natsURL, queue.ConnectOptions{Name: name, Logger: log, Extra: natsOpts})
			},
		})
		if err != nil {
			return err
		}
		defer stop()
	}
	if o.ui.addr != "" {
		srv, err := serveUI(ctx, o.ui, []string{dir}, prices, nil, log, stderr)
		if err != nil {
			return err
		}
		defer srv.Close()
	}

	out := stdout
	var term *ui.Terminal
	if isTTY(stdout) {
		// One live status line below the cells' lines (see ui.go).
		term = ui.NewTerminal(stdout)
		out = term
	}
	cfg := campaign.Config{
		Spec: spec, Dir: dir, Prices: prices, Log: log, Out: out,
		Progress: func(s campaign.Status) { printCampaignStatus(out, term, s) }, ProgressEvery: 10 * time.Second,
	}
	if term != nil {
		cfg.ProgressEvery = time.Second
	}
	if o.member != "" {
		store, err := campaign.NewKVStore(ctx, js, cmp.Or(spec.Name, strings.TrimSuffix(filepath.Base(o.file), filepath.Ext(o.file))), max(o.replicas, o.nats.replicas))
		if err != nil {
			return err
		}
		cfg.Store, cfg.Member, cfg.LeaseTTL, cfg.Sticky, cfg.Select = store, o.member, o.leaseTTL, o.sticky, sel
	}
	cells := &campaign.Cells{
		Base: coordinator.Config{NATSURL: natsURL, NATSOptions: natsOpts, NATSReplicas: o.nats.replicas, GRPCServerOptions: grpcOpts,
			Endpoint: ep, AckWait: o.ackWait, Shared: shared, Prices: prices},
		Deps: func(log *slog.Logger) coordinator.Deps { return trainOpts{}.runDeps(log) },
		Sets: o.sets,
	}
	camp, err := campaign.New(cfg, campaign.Deps{Run: cells.Run})
	if err != nil {
		return usageError{err}
	}
	fmt.Fprintf(stdout, "skillfleet: campaign %s: %d cells, up to %d at once%s; %s; campaign dir %s\n",
		camp.Name(), len(camp.Cells()), spec.MaxActiveRuns, memberLine(o), fleetLine(o, natsURL), dir)
	f, runErr := camp.Run(ctx)
	if term != nil {
		term.Close()
	}
	if f == nil {
		return runErr
	}
	fmt.Fprintln(stdout)
	if err := f.WriteText(stdout); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "results: %s (skillfleet report %s [--csv|--html FILE])\n", filepath.Join(dir, campaign.FileName), dir)
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
	if n := f.Counts()[campaign.StateFailed]; n > 0 {
		return codedError{exitCampaignFailed + min(n, 100), fmt.Errorf("campaign: %d of %d cells failed (see each cell's cell.log)", n, len(f.Cells))}
	}
	return nil
}

// printCampaignStatus shows the campaign's progress: the terminal's status
// line, or a plain line.
func printCampaignStatus(out io.Writer, term *ui.Terminal, s campaign.Status) {
	if term != nil {
		term.SetText(s.Line())
		return
	}
	fmt.Fprintln(out, s)
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

func memberLine(o campaignOpts) string {
	if o.member == "" {
		return ""
	}
	return " in this process, member " + o.member + " of those sharing the campaign"
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
