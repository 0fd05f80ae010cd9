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

// Consumer returns the shared task consumer, waiting for the coordinator to
// create it.
func Consumer(ctx context.Context, nc *nats.Conn) (jetstream.Consumer, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	c, err := js.Consumer(ctx, queue.StreamName, queue.ConsumerName)
	if err != nil {
		return nil, fmt.Errorf("task consumer %s: %w", queue.ConsumerName, err)
	}
	return c, nil
}
