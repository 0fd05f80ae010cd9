package fleet

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/telemetry"
)

// CampaignOptions say where a campaign's fleet runs and how it is reached.
type CampaignOptions struct {
	// Dir is the campaign dir; an embedded NATS server keeps its store in
	// Dir/nats.
	Dir string
	// NATSURL is an external NATS server that workers elsewhere serve;
	// empty starts an embedded one, listening, in this process.
	NATSURL     string
	NATSOptions []nats.Option
	// Replicas is the task stream's and run directory's replica count
	// (0: keep the current count).
	Replicas int
	// AckWait is the task consumers' AckWait.
	AckWait time.Duration
	// GRPCHost and GRPCPort are where the campaign's one gRPC endpoint
	// listens (port 0: any free port); Advertise is the host workers dial
	// (default: the listen host).
	GRPCHost          string
	GRPCPort          int
	Advertise         string
	GRPCServerOptions []grpc.ServerOption
	// Workers is the number of in-process workers; below 0, two with an
	// embedded NATS server and none with an external one.
	Workers, Concurrency, OptimizerConcurrency int
	Logger                                     *slog.Logger
	// Telemetry, when set, traces the fleet's side of every cell: the
	// in-process workers' tasks and model calls, and the endpoint's
	// recording of results and serving of skills, each in the trace of
	// the task it belongs to.
	Telemetry *telemetry.Telemetry
}

// Campaign is the fleet a campaign's cells share: a NATS server with the
// task stream, its consumers and the run directory, the one gRPC endpoint
// that serves every cell this process runs, and in-process workers.
type Campaign struct {
	// URL is the NATS server's.
	URL string
	// NC and JS are this process's connection to it.
	NC *nats.Conn
	JS jetstream.JetStream
	// Endpoint is the campaign's gRPC endpoint (coordinator.Config.Endpoint
	// of every cell).
	Endpoint *coordinator.Endpoint
	// Workers is the number of in-process workers started.
	Workers int

	embedded bool
	closers  []func()
}

// StartCampaign starts the fleet o describes. Close stops what it started.
func StartCampaign(ctx context.Context, o CampaignOptions) (_ *Campaign, err error) {
	c := &Campaign{URL: o.NATSURL, Workers: o.Workers}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	if c.URL == "" {
		emb, err := queue.StartEmbedded(queue.EmbeddedOptions{StoreDir: filepath.Join(o.Dir, "nats"), Listen: true})
		if err != nil {
			return nil, err
		}
		c.closers = append(c.closers, emb.Shutdown)
		c.URL, c.embedded = emb.URL(), true
		if c.Workers < 0 {
			c.Workers = 2
		}
	} else if c.Workers < 0 {
		c.Workers = 0
	}
	connect := func(name string) (*nats.Conn, error) {
		return queue.Connect(ctx, c.URL, queue.ConnectOptions{Name: name, Logger: o.Logger, Extra: o.NATSOptions})
	}
	if c.NC, err = connect("skillfleet-campaign"); err != nil {
		return nil, err
	}
	c.closers = append(c.closers, c.NC.Close)
	if c.JS, err = jetstream.New(c.NC); err != nil {
		return nil, err
	}
	if _, err := queue.EnsureStream(ctx, c.JS, queue.StreamOptions{Replicas: o.Replicas}); err != nil {
		return nil, err
	}
	if err := queue.EnsureConsumers(ctx, c.JS, queue.ConsumerOptions{AckWait: o.AckWait}); err != nil {
		return nil, err
	}
	if _, err := queue.RunsKV(ctx, c.JS, o.Replicas); err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(o.GRPCHost, strconv.Itoa(o.GRPCPort))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("campaign: listen %s: %w", addr, err)
	}
	c.Endpoint, err = coordinator.NewEndpoint(ctx, coordinator.EndpointOptions{
		Logger: o.Logger, NC: c.NC, Listener: ln, Advertise: o.Advertise, Replicas: o.Replicas,
		ServerOptions: append(append([]grpc.ServerOption(nil), o.GRPCServerOptions...), o.Telemetry.GRPCServerOptions()...),
	})
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	if o.Telemetry != nil {
		c.Endpoint.RPC().SetTracerProvider(o.Telemetry.TracerProvider)
	}
	// The endpoint serves until Close; its cells withdraw from it first.
	epCtx, stopEndpoint := context.WithCancel(context.WithoutCancel(ctx))
	served := make(chan error, 1)
	go func() { served <- c.Endpoint.Run(epCtx) }()
	c.closers = append(c.closers, func() {
		stopEndpoint()
		if err := <-served; err != nil && o.Logger != nil {
			o.Logger.Warn("campaign endpoint stopped with an error", "err", err)
		}
	})
	if c.Workers > 0 {
		stop, err := StartLocal(ctx, o.Logger, coordinator.WorkerSpec{
			N: c.Workers, Concurrency: o.Concurrency, OptimizerConcurrency: o.OptimizerConcurrency, MaxDeliver: 5, Connect: connect,
			Telemetry: o.Telemetry,
		})
		if err != nil {
			return nil, err
		}
		c.closers = append(c.closers, stop)
	}
	return c, nil
}

// String describes the fleet for the campaign's first line.
func (c *Campaign) String() string {
	switch {
	case c.embedded:
		return fmt.Sprintf("all-in-one (embedded NATS, %d in-process workers)", c.Workers)
	case c.Workers > 0:
		return fmt.Sprintf("fleet on %s plus %d in-process workers", c.URL, c.Workers)
	}
	return "fleet on " + c.URL
}

// Close stops the workers, the endpoint, the connection and an embedded
// server, in that order.
func (c *Campaign) Close() {
	for i := len(c.closers) - 1; i >= 0; i-- {
		c.closers[i]()
	}
	c.closers = nil
}
