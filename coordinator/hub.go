package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/propagation"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"

	"github.com/skillfleet/skillfleet/coordinator/dispatch"
	"github.com/skillfleet/skillfleet/coordinator/rpcserver"
	"github.com/skillfleet/skillfleet/pkg/objstore"
	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/rundir"
	"github.com/skillfleet/skillfleet/pkg/telemetry"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// HubOptions configures the coordinator's dispatch side.
type HubOptions struct {
	Logger *slog.Logger
	NC     *nats.Conn
	// RunDir holds the result journal (results.journal).
	RunDir string
	// RunID prefixes every task id of this run.
	RunID string
	// Endpoint is the process's gRPC endpoint and run directory entry,
	// shared by every run of the process. Nil: the hub makes its own on
	// GRPCListener, with GRPCServerOptions and Advertise, and closes it
	// when it stops.
	Endpoint *Endpoint
	// GRPCListener serves the Coordinator service of a hub without an
	// Endpoint (the hub closes it).
	GRPCListener net.Listener
	// GRPCServerOptions (TLS credentials, stats handlers).
	GRPCServerOptions []grpc.ServerOption
	// Consumer tunes the shared worker consumer.
	Consumer queue.ConsumerOptions
	// Replicas is how many servers of a NATS cluster keep the task stream
	// and the run directory (0 = their current count, 1 when new).
	Replicas int
	// NoSync skips fsync of the journal (tests, benchmarks).
	NoSync     bool
	OnResult   func(*pb.Result)
	Propagator propagation.TextMapPropagator
	// Cache, if set, serves rollouts measured before (see [RolloutCache]).
	Cache *dispatch.Cache
	// Meters, if set, receive the queue depth and the number of live
	// workers every few seconds.
	Meters *telemetry.Meters
	// Advertise is the gRPC address workers dial (default: the listener's
	// address). Give it when the coordinator listens on 0.0.0.0 or behind
	// a service name; a host without a port takes the listener's port.
	Advertise string
	// Weight is the run's share of the fleet relative to other runs (default 1).
	Weight float64
	// OnFatal, if set, is called once when the result journal fails (a
	// full disk): no result can be recorded any more, so the run must stop.
	OnFatal func(error)
}

// Hub is the coordinator's dispatch side of one run: the task stream,
// the result journal and the dispatcher, served to workers by its
// process's [Endpoint].
type Hub struct {
	D *dispatch.Dispatcher
	// RPC is the endpoint's Coordinator service (shared by the process's
	// runs, as are the workers it knows).
	RPC    *rpcserver.Server
	JS     jetstream.JetStream
	Stream jetstream.Stream

	o       HubOptions
	journal *dispatch.Journal
	ep      *Endpoint
	// ownEndpoint is set when the hub made its endpoint (and closes it).
	ownEndpoint bool
	// withdraw stops serving the run and lists it no more.
	withdraw func()

	mu     sync.RWMutex
	skills map[string]string
}

// NewHub sets up the stream and consumer, opens the journal and builds the
// dispatcher and gRPC server. Run serves them.
func NewHub(ctx context.Context, o HubOptions) (*Hub, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if err := WaitForJetStream(ctx, o.NC, o.Logger); err != nil {
		return nil, err
	}
	js, err := jetstream.New(o.NC, jetstream.WithPublishAsyncMaxPending(8192), jetstream.WithPublishAsyncTimeout(queue.PublishAckWait))
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	stream, err := queue.EnsureStream(ctx, js, queue.StreamOptions{Replicas: o.Replicas})
	if err != nil {
		return nil, err
	}
	if err := queue.EnsureConsumers(ctx, js, o.Consumer); err != nil {
		return nil, err
	}
	// The run dir's format is checked (and a legacy one migrated) before
	// the journal or any other of its files is read.
	mig, err := rundir.Prepare(o.RunDir)
	if err != nil {
		return nil, err
	}
	if mig != nil {
		o.Logger.Info("run dir migrated", "run_dir", mig.Dir, "from_format", mig.From, "to_format", mig.To)
	}
	j, err := dispatch.OpenJournalIndex(filepath.Join(o.RunDir, "results.journal"), o.NoSync)
	if err != nil {
		return nil, err
	}
	ep, own := o.Endpoint, false
	if ep == nil {
		if o.GRPCListener == nil {
			_ = j.Close()
			return nil, errors.New("coordinator: a hub needs an endpoint or a gRPC listener")
		}
		ep, err = NewEndpoint(ctx, EndpointOptions{
			Logger: o.Logger, NC: o.NC, Listener: o.GRPCListener, ServerOptions: o.GRPCServerOptions,
			Advertise: o.Advertise, Replicas: o.Replicas,
		})
		if err != nil {
			_ = j.Close()
			return nil, err
		}
		own = true
	}
	o.Advertise = ep.Advertised()
	h := &Hub{JS: js, Stream: stream, o: o, journal: j, skills: map[string]string{}, ep: ep, ownEndpoint: own}
	prefix := ""
	if o.RunID != "" {
		prefix = o.RunID + "/"
	}
	h.D = dispatch.New(dispatch.Options{
		Logger: o.Logger, NC: o.NC, JS: js, Stream: stream, Journal: j,
		RunPrefix: prefix, OnResult: o.OnResult, Propagator: o.Propagator,
		Cache: o.Cache, Addr: o.Advertise, BulkWindow: h.bulkWindow, OnFatal: o.OnFatal,
		Sweeper: ep.sweeper, Payloads: objstore.New(js, o.Replicas),
	})
	h.RPC = ep.RPC()
	if n := h.D.Recorded(); n > 0 {
		o.Logger.Info("results recovered from journal", "results", n)
	}
	// The run is in the run directory before its first task is published
	// and until the hub stops: workers find the coordinator by the run.
	h.withdraw, err = ep.serve(ctx, o.RunID, o.Weight, h.D, h)
	if err != nil {
		_ = j.Close()
		if own {
			_ = ep.Close()
		}
		return nil, err
	}
	return h, nil
}

// AddSkill makes a skill text available to workers by hash.
func (h *Hub) AddSkill(hash, text string) {
	h.mu.Lock()
	h.skills[hash] = text
	h.mu.Unlock()
}

// Skill implements rpcserver.SkillSource.
func (h *Hub) Skill(hash string) (string, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	t, ok := h.skills[hash]
	if !ok {
		return "", fmt.Errorf("%w: %s", rpcserver.ErrSkillNotFound, hash)
	}
	return t, nil
}

// Addr is the gRPC listen address (the endpoint's).
func (h *Hub) Addr() string { return h.ep.Addr() }

// Advertised is the gRPC address workers are told to dial.
func (h *Hub) Advertised() string { return h.ep.Advertised() }

// advertised turns a listen address into one a worker can dial: an
// unspecified host (0.0.0.0, ::) becomes this machine's host name.
func advertised(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if name, err := os.Hostname(); err == nil && name != "" {
			return net.JoinHostPort(name, port)
		}
	}
	return listen
}

// minBulkWindow is the smallest bulk window, so a run that starts before
// any worker registered still keeps a fleet busy.
const minBulkWindow = 48

// bulkWindow is this run's fair share of bulk work in flight: twice the
// target slots of the workers serving it, times its weight over the
// weights of every live run.
func (h *Hub) bulkWindow() int {
	slots := 0
	for _, w := range h.RPC.Workers(30 * time.Second) {
		slots += w.Concurrency
	}
	own := h.o.Weight
	if own <= 0 {
		own = 1
	}
	total := max(h.ep.totalWeight(), own)
	return max(minBulkWindow, int(2*float64(slots)*own/total+0.999))
}

// sample records the queue depth and live workers until ctx ends.
func (h *Hub) sample(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n, err := h.ep.queueDepth(ctx, h.Stream, every); err == nil {
			h.o.Meters.SetQueueDepth(ctx, int64(n))
		}
		h.o.Meters.SetWorkers(ctx, int64(len(h.RPC.Workers(30*time.Second))))
	}
}

// Run serves the run until ctx ends (or the gRPC server of an endpoint
// the hub made fails) and returns once everything it started has ended.
// The journal's writer and an endpoint the hub made run until the very
// end; the shutdown order is this one, and only this one:
//
//  1. the dispatcher and the meter sampler end (Run waits for them:
//     nothing is published, republished or swept after);
//  2. the run is withdrawn from its endpoint once the results being
//     recorded are acknowledged;
//  3. an endpoint the hub made stops (see [Endpoint.Run]);
//  4. the journal writes what is queued and closes.
func (h *Hub) Run(ctx context.Context) error {
	// What outlives the run's work: the journal's writer and an endpoint
	// the hub made. They end in steps 3 and 4, not with ctx.
	var last errgroup.Group
	last.Go(func() error { return h.journal.Run(context.WithoutCancel(ctx)) })
	if h.ownEndpoint {
		last.Go(func() error { return h.ep.Run(context.WithoutCancel(ctx)) })
	}

	g, gctx := errgroup.WithContext(ctx)
	if h.ownEndpoint {
		g.Go(func() error {
			select {
			case <-h.ep.ran:
				// A server that fails ends the run's work too.
				if h.ep.runErr != nil {
					return h.ep.runErr
				}
				return errors.New("coordinator: the run's gRPC endpoint stopped")
			case <-gctx.Done():
				return nil
			}
		})
	}
	g.Go(func() error { return h.D.Run(gctx) })
	if h.o.Meters != nil {
		g.Go(func() error { h.sample(gctx, 2*time.Second); return nil })
	}
	err := g.Wait() // 1
	h.withdraw()    // 2
	if h.ownEndpoint {
		if cerr := h.ep.Close(); err == nil && cerr != nil { // 3
			err = cerr
		}
	}
	if cerr := h.journal.Close(); err == nil && cerr != nil { // 4
		err = cerr
	}
	if lerr := last.Wait(); err == nil && lerr != nil {
		err = lerr
	}
	return err
}
