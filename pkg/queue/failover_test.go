package queue

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestTransient: the errors a cluster's failover causes are retried; a
// refusal that no retry cures is not.
func TestTransient(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nats.ErrDisconnected, true}, // async publishes pending when the server died
		{fmt.Errorf("publish: %w", jetstream.ErrNoStreamResponse), true},
		{jetstream.ErrAsyncPublishTimeout, true},
		{nats.ErrTimeout, true},
		{context.DeadlineExceeded, true},
		{&jetstream.APIError{Code: 503, ErrorCode: errCodeClusterNotAvailable}, true},
		{&jetstream.APIError{Code: 503, ErrorCode: errCodeInsufficientResources}, false},
		{&jetstream.APIError{Code: 400, ErrorCode: errCodeNoPeers}, false},
		{jetstream.ErrStreamNotFound, false},
		{errors.New("bad task"), false},
		{nil, false},
	} {
		if got := Transient(c.err); got != c.want {
			t.Errorf("Transient(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
