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

// Consumers returns the shared rollout and optimizer consumers (the
// coordinator creates them).
func Consumers(ctx context.Context, nc *nats.Conn) (rollout, optimizer jetstream.Consumer, err error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, nil, fmt.Errorf("jetstream: %w", err)
	}
	rollout, err = js.Consumer(ctx, queue.StreamName, queue.ConsumerRollout)
	if err != nil {
		return nil, nil, fmt.Errorf("task consumer %s: %w", queue.ConsumerRollout, err)
	}
	optimizer, err = js.Consumer(ctx, queue.StreamName, queue.ConsumerOptimizer)
	if err != nil {
		return nil, nil, fmt.Errorf("task consumer %s: %w", queue.ConsumerOptimizer, err)
	}
	return rollout, optimizer, nil
}
