package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"

	"github.com/skillfleet/skillfleet/coordinator/dispatch"
	"github.com/skillfleet/skillfleet/coordinator/rpcserver"
	"github.com/skillfleet/skillfleet/pkg/queue"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// EndpointOptions configures a coordinator process's [Endpoint].
type EndpointOptions struct {
	Logger *slog.Logger
	// NC is the NATS connection of the fleet the runs use: the run
	// directory lives there, and runs started with the endpoint
	// ([Config.Endpoint]) use it for their tasks too.
	NC *nats.Conn
	// Listener serves the Coordinator service (the endpoint closes it).
	Listener net.Listener
	// ServerOptions are the gRPC server's (TLS credentials, stats handlers).
	ServerOptions []grpc.ServerOption
	// Advertise is the gRPC address workers dial (default: the listener's
	// address; a host without a port takes the listener's port).
	Advertise string
	// Replicas is how many servers of a NATS cluster keep the run
	// directory (0 = its current count, 1 when new).
	Replicas int
}

// Endpoint is a coordinator process's face to its fleet: one gRPC server
// on one listener serves every run the process coordinates (each result
// goes to the run its task id names), one entry in the run directory
// lists them, and one watch of the directory gives every run the other
// processes' weights. However many runs the process serves, a worker
// holds one connection to it, and the directory carries one refresh of
// it per [queue.AnnounceEvery].
type Endpoint struct {
	log       *slog.Logger
	nc        *nats.Conn
	ln        net.Listener
	advertise string
	grpc      *grpc.Server
	rpc       *rpcserver.Server
	ann       *queue.Announcer
	peers     *queue.RunTable
	// sweeper looks for every run's lost tasks in one round.
	sweeper *dispatch.Sweeper
	// depth is the task stream's last sampled message count, shared by
	// the runs' meters.
	depth struct {
		sync.Mutex
		at   time.Time
		msgs uint64
	}

	cancel context.CancelFunc
	// bg runs the directory watch and the sweeper until cancel.
	bg sync.WaitGroup
	// served is closed when the gRPC server stops serving, serveErr
	// then says why (nil: it was stopped).
	served   chan struct{}
	serveErr error
	once     sync.Once
}

// NewEndpoint starts serving on o.Listener and following the run
// directory; Close stops both.
func NewEndpoint(ctx context.Context, o EndpointOptions) (*Endpoint, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.NC == nil || o.Listener == nil {
		return nil, errors.New("coordinator: an endpoint needs a NATS connection and a listener")
	}
	if err := WaitForJetStream(ctx, o.NC, o.Logger); err != nil {
		return nil, err
	}
	js, err := jetstream.New(o.NC)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	kv, err := queue.RunsKV(ctx, js, o.Replicas)
	if err != nil {
		return nil, err
	}
	adv := o.Advertise
	if adv == "" {
		adv = advertised(o.Listener.Addr().String())
	} else if _, _, err := net.SplitHostPort(adv); err != nil {
		// A host alone: the port is the listener's.
		_, port, _ := net.SplitHostPort(o.Listener.Addr().String())
		adv = net.JoinHostPort(adv, port)
	}
	host, _ := os.Hostname()
	process := fmt.Sprintf("%s-%d-%04x", host, os.Getpid(), rand.IntN(1<<16))
	e := &Endpoint{
		log: o.Logger, nc: o.NC, ln: o.Listener, advertise: adv,
		grpc:    grpc.NewServer(o.ServerOptions...),
		rpc:     rpcserver.New(process, nil, nil, o.Logger, 5*time.Second),
		ann:     queue.NewAnnouncer(kv, process, adv, o.Logger),
		peers:   queue.NewRunTable(),
		sweeper: dispatch.NewSweeper(o.Logger),
		served:  make(chan struct{}),
	}
	pb.RegisterCoordinatorServer(e.grpc, e.rpc)
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e.cancel = cancel
	e.bg.Go(func() { _ = e.peers.Watch(wctx, kv) })
	e.bg.Go(func() { e.sweeper.Run(wctx) })
	go func() {
		if err := e.grpc.Serve(o.Listener); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			e.serveErr = fmt.Errorf("grpc serve: %w", err)
		}
		close(e.served)
	}()
	return e, nil
}

// Addr is the gRPC listen address.
func (e *Endpoint) Addr() string { return e.ln.Addr().String() }

// Advertised is the gRPC address workers are told to dial.
func (e *Endpoint) Advertised() string { return e.advertise }

// RPC is the Coordinator service every run of the process shares (the
// workers it knows serve them all).
func (e *Endpoint) RPC() *rpcserver.Server { return e.rpc }

// Runs is the number of runs the endpoint serves now.
func (e *Endpoint) Runs() int { return e.rpc.Runs() }

// serve adds a run: its results go to rec, its skills come from skills,
// and it is listed in the directory before serve returns. The returned
// withdraw lists it no more and waits for the results being recorded.
func (e *Endpoint) serve(ctx context.Context, runID string, weight float64, rec rpcserver.Recorder, skills rpcserver.SkillSource) (withdraw func(), err error) {
	stopServing := e.rpc.Serve(runID, rec, skills)
	if err := e.ann.Add(ctx, runID, weight); err != nil {
		stopServing()
		return nil, err
	}
	return func() {
		e.ann.Remove(runID)
		stopServing()
	}, nil
}

// totalWeight is the weight of every live run on the fleet: this
// process's own runs as it holds them, the others' as the directory
// shows them.
func (e *Endpoint) totalWeight() float64 {
	return e.ann.Weight() + e.peers.Weights(e.ann.Key())
}

// queueDepth is how many messages the task stream holds, asked of the
// stream at most once per maxAge however many runs of the process sample
// it.
func (e *Endpoint) queueDepth(ctx context.Context, stream jetstream.Stream, maxAge time.Duration) (uint64, error) {
	e.depth.Lock()
	defer e.depth.Unlock()
	if !e.depth.at.IsZero() && time.Since(e.depth.at) < maxAge {
		return e.depth.msgs, nil
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return 0, err
	}
	e.depth.at, e.depth.msgs = time.Now(), info.State.Msgs
	return e.depth.msgs, nil
}

// Close withdraws the process from the directory and stops the gRPC
// server: open report streams end once the results they carry are
// recorded, and a stop that waits longer than a few seconds is forced.
func (e *Endpoint) Close() error {
	e.once.Do(func() {
		e.ann.Stop()
		e.cancel()
		e.bg.Wait()
		e.rpc.Drain()
		stopped := make(chan struct{})
		go func() { e.grpc.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(5 * time.Second):
			e.grpc.Stop()
		}
		<-e.served
	})
	return e.serveErr
}

// WaitForJetStream returns once the JetStream of nc's cluster answers (a
// cluster that is starting, or that lost a majority, has no meta leader
// and answers nothing: making a stream or a bucket then fails with a
// timeout), or when ctx ends. A NATS without JetStream is an error at
// once.
func WaitForJetStream(ctx context.Context, nc *nats.Conn, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	delay := 100 * time.Millisecond
	start := time.Now()
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := js.AccountInfo(actx)
		cancel()
		switch {
		case err == nil:
			if attempt > 1 {
				log.Info("JetStream answers", "waited", time.Since(start).Round(time.Millisecond).String())
			}
			return nil
		case errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
			return fmt.Errorf("NATS %s: %w: start it with JetStream (-js)", nc.ConnectedUrlRedacted(), err)
		case ctx.Err() != nil:
			return fmt.Errorf("waiting for JetStream on %s (no meta leader yet): %w", nc.ConnectedUrlRedacted(), context.Cause(ctx))
		}
		if attempt == 1 || attempt%10 == 0 {
			log.Warn("JetStream does not answer yet (a cluster electing its meta leader); waiting", "attempt", attempt, "err", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for JetStream on %s (no meta leader yet): %w", nc.ConnectedUrlRedacted(), context.Cause(ctx))
		case <-time.After(delay):
		}
		delay = min(2*delay, 2*time.Second)
	}
}
