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
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"

	"github.com/skillfleet/skillfleet/coordinator/dispatch"
	"github.com/skillfleet/skillfleet/coordinator/rpcserver"
	"github.com/skillfleet/skillfleet/pkg/objstore"
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
//
// [NewEndpoint] starts nothing; [Endpoint.Run] serves until its context
// ends and returns once everything it started has ended.
type Endpoint struct {
	log       *slog.Logger
	nc        *nats.Conn
	ln        net.Listener
	kv        jetstream.KeyValue
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

	// life is Run's state: running once it started, closed once Close
	// was called; stop ends Run, ran closes when it has returned with
	// runErr.
	life struct {
		sync.Mutex
		running, closed bool
		stop            context.CancelFunc
	}
	ran    chan struct{}
	runErr error
}

// NewEndpoint makes the endpoint of a coordinator process on o.Listener:
// it waits for JetStream and opens the run directory, and starts nothing.
// Run serves it; Close stops it (or releases one that never ran).
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
		log: o.Logger, nc: o.NC, ln: o.Listener, kv: kv, advertise: adv,
		grpc:    grpc.NewServer(append([]grpc.ServerOption{grpc.MaxRecvMsgSize(objstore.MaxBody)}, o.ServerOptions...)...),
		rpc:     rpcserver.New(process, nil, nil, o.Logger, 5*time.Second),
		ann:     queue.NewAnnouncer(kv, process, adv, o.Logger),
		peers:   queue.NewRunTable(),
		sweeper: dispatch.NewSweeper(o.Logger),
		ran:     make(chan struct{}),
	}
	pb.RegisterCoordinatorServer(e.grpc, e.rpc)
	return e, nil
}

// gracefulStopWait bounds how long a stopping endpoint waits for open
// report streams before it closes them.
const gracefulStopWait = 5 * time.Second

// Run serves the Coordinator service on the listener, refreshes the
// process's run directory entry, follows the directory and sweeps for
// lost tasks, until ctx ends or the gRPC server fails (its error is
// returned). It then stops in this order: the process is withdrawn from
// the directory; the server takes no more results and waits for those
// being recorded (rpcserver Drain); open report streams end (forced
// after a few seconds). Run returns once all of it has ended.
func (e *Endpoint) Run(ctx context.Context) error {
	e.life.Lock()
	if e.life.running || e.life.closed {
		e.life.Unlock()
		return errors.New("coordinator: endpoint already running or closed")
	}
	e.life.running = true
	ctx, stop := context.WithCancel(ctx)
	e.life.stop = stop
	e.life.Unlock()
	defer close(e.ran)
	defer stop()

	g, gctx := errgroup.WithContext(ctx)
	withdrawn := make(chan struct{})
	g.Go(func() error { defer close(withdrawn); return e.ann.Run(gctx) })
	g.Go(func() error { return e.peers.Watch(gctx, e.kv) })
	g.Go(func() error { return e.sweeper.Run(gctx) })
	g.Go(func() error {
		if err := e.grpc.Serve(e.ln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			return fmt.Errorf("grpc serve: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		<-gctx.Done()
		<-withdrawn
		e.rpc.Drain()
		stopped := make(chan struct{})
		go func() { e.grpc.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(gracefulStopWait):
			e.grpc.Stop()
			<-stopped
		}
		return nil
	})
	e.runErr = g.Wait()
	return e.runErr
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

// Close stops the endpoint: a running one as Run does when its context
// ends (Close returns once Run has, with Run's error); one that never ran
// is withdrawn from the directory and its listener closed.
func (e *Endpoint) Close() error {
	e.life.Lock()
	if e.life.closed {
		running := e.life.running
		e.life.Unlock()
		if running {
			<-e.ran
			return e.runErr
		}
		return nil
	}
	e.life.closed = true
	running, stop := e.life.running, e.life.stop
	e.life.Unlock()
	if running {
		stop()
		<-e.ran
		return e.runErr
	}
	e.ann.Stop()
	e.rpc.Drain()
	e.grpc.Stop()
	if err := e.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
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
