package worker

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/skillfleet/skillfleet/pkg/objstore"
	"github.com/skillfleet/skillfleet/pkg/queue"
)

// Dial connects to the coordinator's gRPC address. With no options the
// connection is plaintext (loopback and trusted networks only). A result
// or a skill may be as large as [objstore.MaxBody].
func Dial(addr string, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	if len(opts) == 0 {
		opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	opts = append([]grpc.DialOption{grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(objstore.MaxBody), grpc.MaxCallRecvMsgSize(objstore.MaxBody))}, opts...)
	cc, err := grpc.NewClient(addr, opts...)
	if err != nil {
		return nil, fmt.Errorf("dial coordinator %s: %w", addr, err)
	}
	return cc, nil
}

// Consumers returns the shared class consumers (a coordinator creates them).
func Consumers(ctx context.Context, nc *nats.Conn) (map[queue.Class]jetstream.Consumer, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	return queue.Consumers(ctx, js)
}

// RunWatch is a worker's view of the run directory (Table, where it
// looks up each task's coordinator) and what keeps it current (Run).
type RunWatch struct {
	Table *queue.RunTable
	kv    jetstream.KeyValue
}

// WatchRuns opens the run directory on nc and returns its watch, which
// starts nothing: Run follows the directory, and the table is ready once
// Run has loaded the current entries. A new run directory is kept on
// replicas servers of a NATS cluster (0 = 1; an existing one keeps its
// count).
func WatchRuns(ctx context.Context, nc *nats.Conn, replicas int) (*RunWatch, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	kv, err := queue.RunsKV(ctx, js, replicas)
	if err != nil {
		return nil, err
	}
	return &RunWatch{Table: queue.NewRunTable(), kv: kv}, nil
}

// Run follows the directory until ctx ends and returns nil once its
// goroutines have ended.
func (w *RunWatch) Run(ctx context.Context) error { return w.Table.Watch(ctx, w.kv) }
