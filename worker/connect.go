package worker

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/skillfleet/skillfleet/pkg/queue"
)

// Dial connects to the coordinator's gRPC address. With no options the
// connection is plaintext (loopback and trusted networks only).
func Dial(addr string, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	if len(opts) == 0 {
		opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
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

// WatchRuns follows the run directory on nc until ctx ends; the table is
// ready once the current entries are loaded. A new run directory is kept
// on replicas servers of a NATS cluster (0 = 1; an existing one keeps its
// count).
func WatchRuns(ctx context.Context, nc *nats.Conn, replicas int) (*queue.RunTable, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	kv, err := queue.RunsKV(ctx, js, replicas)
	if err != nil {
		return nil, err
	}
	rt := queue.NewRunTable()
	go func() { _ = rt.Watch(ctx, kv) }()
	return rt, nil
}
