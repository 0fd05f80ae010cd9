package queue

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Failover bounds: how long a publish or a JetStream API call is retried
// while a NATS cluster cannot answer it (a stream or meta leader being
// elected after a server died, a client reconnecting to another server).
// A three-node cluster elects a new leader within its raft election
// timeout (4 to 9 s); the bound leaves room for a loaded machine.
const (
	FailoverFor = 2 * time.Minute
	// PublishAckWait is how long an asynchronous publish waits for the
	// stream's ack before it is published again (same message id, so the
	// stream stores it once).
	PublishAckWait = 10 * time.Second
	// apiAttempt bounds one JetStream API request within a retry.
	apiAttempt = 5 * time.Second
)

// errCodeClusterNotAvailable is JetStream's "system temporarily
// unavailable" (no meta leader yet).
const errCodeClusterNotAvailable jetstream.ErrorCode = 10008

// Transient reports whether err is one a JetStream cluster's failover
// causes and a retry a few seconds later can cure.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	var jsErr jetstream.JetStreamError
	if errors.As(err, &jsErr) && jsErr.APIError() != nil {
		a := jsErr.APIError()
		return a.ErrorCode == errCodeClusterNotAvailable || (a.Code == 503 && a.ErrorCode != errCodeInsufficientResources)
	}
	// A write on a connection the server just dropped (the client is
	// reconnecting to another server) fails with the socket's error.
	var netErr *net.OpError
	return errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, jetstream.ErrAsyncPublishTimeout) ||
		errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrConnectionReconnecting) ||
		errors.Is(err, nats.ErrDisconnected) || errors.As(err, &netErr) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// PublishAsyncAgain starts an asynchronous publish of msg again after the
// first try failed at once with first (the connection broke under the
// write): it retries while the error is [Transient], until ctx ends or
// [FailoverFor] passes, as the client reconnects.
func PublishAsyncAgain(ctx context.Context, js jetstream.JetStream, msg *nats.Msg, first error) (jetstream.PubAckFuture, error) {
	if !Transient(first) {
		return nil, first
	}
	deadline := time.Now().Add(FailoverFor)
	wait := 100 * time.Millisecond
	err := first
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (after %w)", ctx.Err(), first)
		case <-time.After(wait):
		}
		var paf jetstream.PubAckFuture
		if paf, err = js.PublishMsgAsync(msg); err == nil {
			return paf, nil
		}
		if !Transient(err) || time.Now().After(deadline) {
			return nil, fmt.Errorf("%w (after %w)", err, first)
		}
		wait = min(wait*2, time.Second)
	}
}

// retry calls fn, each call bounded by apiAttempt, until it returns an
// error that is not [Transient], ctx ends or [FailoverFor] passes.
func retry[T any](ctx context.Context, fn func(ctx context.Context) (T, error)) (T, error) {
	deadline := time.Now().Add(FailoverFor)
	wait := 100 * time.Millisecond
	for {
		actx, cancel := context.WithTimeout(ctx, apiAttempt)
		v, err := fn(actx)
		cancel()
		if err == nil || !Transient(err) || ctx.Err() != nil || time.Now().After(deadline) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(wait):
		}
		wait = min(wait*2, time.Second)
	}
}

// placementGrace is how long a placement error is retried: the servers
// of a cluster that started together take a few seconds to learn of each
// other, and until then a replicated stream cannot be placed.
const placementGrace = 10 * time.Second

// place is [retry] that also retries a placement error (see [replicasErr])
// for placementGrace.
func place[T any](ctx context.Context, fn func(ctx context.Context) (T, error)) (T, error) {
	start := time.Now()
	for {
		v, err := retry(ctx, fn)
		var jsErr jetstream.JetStreamError
		single := errors.As(err, &jsErr) && jsErr.APIError() != nil && jsErr.APIError().ErrorCode == errCodeReplicasNotSupported
		if err == nil || single || !placementErr(err) || time.Since(start) > placementGrace {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Place calls fn until it succeeds or fails for good: it retries what a
// cluster's failover causes ([Transient], for [FailoverFor]) and, for a
// few seconds, a placement error of a cluster whose servers are still
// meeting. Stores and buckets made at start-up (before JetStream has a
// meta leader) go through it.
func Place[T any](ctx context.Context, fn func(ctx context.Context) (T, error)) (T, error) {
	return place(ctx, fn)
}

// PublishAgain publishes a task message whose asynchronous publish failed
// with first, synchronously, until the stream acks it. It gives up on an
// error that is not [Transient], when ctx ends, or after [FailoverFor].
// The message keeps its Nats-Msg-Id, so the stream stores it once even
// when an earlier attempt reached it and only its ack was lost.
func PublishAgain(ctx context.Context, js jetstream.JetStream, msg *nats.Msg, first error) (*jetstream.PubAck, error) {
	if !Transient(first) {
		return nil, first
	}
	ack, err := retry(ctx, func(ctx context.Context) (*jetstream.PubAck, error) {
		return js.PublishMsg(ctx, msg)
	})
	if err != nil {
		return nil, fmt.Errorf("%w (after %w)", err, first)
	}
	return ack, nil
}
