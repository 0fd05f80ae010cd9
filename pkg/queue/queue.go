// Package queue sets up the NATS JetStream objects skillfleet dispatches
// tasks through: one work-queue stream, one durable pull consumer shared by
// all workers, a cancel subject, and an embedded server for the all-in-one
// mode and tests.
package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillfleet/skillfleet/pkg/catalogue"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// KindOf returns a task's kind name (its subject suffix), or "" if unset
// (see [catalogue.KindOf]).
func KindOf(t *pb.Task) string { return catalogue.KindOf(t) }

// StreamOptions tunes the task stream.
type StreamOptions struct {
	// Duplicates is the de-duplication window for Nats-Msg-Id (default 2h).
	Duplicates time.Duration
	// Replicas is how many servers of a JetStream cluster keep the stream
	// (1 to [MaxReplicas]). 0 keeps an existing stream's count and makes
	// a new stream with 1.
	Replicas int
	// Memory stores the stream in memory instead of files.
	Memory bool
}

// EnsureStream creates or updates the work-queue task stream, retrying
// through a NATS cluster's failover (see [FailoverFor]).
func EnsureStream(ctx context.Context, js jetstream.JetStream, o StreamOptions) (jetstream.Stream, error) {
	if o.Duplicates == 0 {
		o.Duplicates = 2 * time.Hour
	}
	storage := jetstream.FileStorage
	if o.Memory {
		storage = jetstream.MemoryStorage
	}
	replicas, err := replicasFor(ctx, js, StreamName, o.Replicas)
	if err != nil {
		return nil, fmt.Errorf("create stream %s: %w", StreamName, err)
	}
	cfg := jetstream.StreamConfig{
		Name:        StreamName,
		Description: "skillfleet tasks (work queue)",
		Subjects:    []string{SubjectAll},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     storage,
		Duplicates:  o.Duplicates,
		Replicas:    replicas,
		// Direct gets let a coordinator's lost-task sweep read all of its
		// run's queued messages in one request.
		AllowDirect: true,
	}
	s, err := place(ctx, func(ctx context.Context) (jetstream.Stream, error) { return js.CreateOrUpdateStream(ctx, cfg) })
	if err != nil {
		return nil, replicasErr("create stream "+StreamName, replicas, err)
	}
	return s, nil
}

// MaxReplicas is the most servers JetStream keeps one stream on.
const MaxReplicas = 5

// CheckReplicas rejects a replica count JetStream cannot have; what names
// the setting (a flag or config key) in the error.
func CheckReplicas(n int, what string) error {
	if n < 0 || n > MaxReplicas {
		return fmt.Errorf("%s: replicas must be 0 (keep the existing count, 1 for new streams) to %d, got %d", what, MaxReplicas, n)
	}
	return nil
}

// replicasFor is the replica count to give stream: n when set, else the
// count the stream already has, else 1. Keeping the existing count lets a
// process that was not told the cluster's replica count (a worker, a run
// without the flag) open the stream without shrinking it.
func replicasFor(ctx context.Context, js jetstream.JetStream, stream string, n int) (int, error) {
	if err := CheckReplicas(n, "replicas"); err != nil {
		return 0, err
	}
	if n > 0 {
		return n, nil
	}
	s, err := retry(ctx, func(ctx context.Context) (jetstream.Stream, error) { return js.Stream(ctx, stream) })
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return 1, nil
	case err != nil:
		return 0, err
	}
	return max(s.CachedInfo().Config.Replicas, 1), nil
}

// replicasErr names the replica setting when the servers cannot place
// that many replicas: more than the cluster has JetStream servers up, or
// more than one on a server that is not clustered.
func replicasErr(what string, n int, err error) error {
	if placementErr(err) {
		return fmt.Errorf("%s with %d replicas: the NATS servers cannot place that many (lower --nats-replicas or runtime.nats_replicas to at most the JetStream servers of the cluster that are up, or start the missing ones): %w", what, n, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// placementErr reports whether err is JetStream refusing to place the
// replicas asked for.
func placementErr(err error) bool {
	var jsErr jetstream.JetStreamError
	if errors.As(err, &jsErr) && jsErr.APIError() != nil {
		switch jsErr.APIError().ErrorCode {
		case errCodeNoPeers, errCodeInsufficientResources, errCodeReplicasNotSupported:
			return true
		}
	}
	return false
}

// JetStream API error codes of a failed placement.
const (
	errCodeNoPeers               jetstream.ErrorCode = 10005
	errCodeInsufficientResources jetstream.ErrorCode = 10023
	errCodeReplicasNotSupported  jetstream.ErrorCode = 10074
)

// ConsumerOptions are the settings of the task consumers a process
// asks for. The consumers belong to the fleet: the first process that
// finds them missing creates them with these settings (a zero field
// taking its default), and every later one only checks the settings it
// sets (its non-zero fields) against theirs (see [EnsureConsumers]).
type ConsumerOptions struct {
	// AckWait is how long a delivered task may go without an ack or an
	// InProgress heartbeat before it is redelivered (default
	// [DefaultAckWait]). Workers send InProgress at a quarter of it, so a
	// dead worker's tasks come back after about AckWait while a slow call
	// on a live worker is never redelivered.
	AckWait time.Duration
	// MaxDeliver bounds deliveries of one task (default
	// [DefaultMaxDeliver]).
	MaxDeliver int
	// BackOff are the redelivery delays after an ack timeout.
	BackOff []time.Duration
	// MaxAckPending bounds tasks delivered and not yet acked across all workers (default 20000).
	MaxAckPending int
}

// DefaultAckWait is the consumers' default AckWait: a dead worker's
// tasks go to another worker about this long after its last heartbeat.
// It is several heartbeats (a quarter of it each) long so that a worker
// on a loaded machine, whose beats come a second or more late, does not
// have a running task handed out again and its call made twice.
const DefaultAckWait = 5 * time.Second

// DefaultMaxDeliver is the consumers' default MaxDeliver.
const DefaultMaxDeliver = 5

func (o ConsumerOptions) withDefaults() ConsumerOptions {
	if o.AckWait == 0 {
		o.AckWait = DefaultAckWait
	}
	if o.MaxDeliver == 0 {
		o.MaxDeliver = DefaultMaxDeliver
	}
	if o.MaxAckPending == 0 {
		o.MaxAckPending = 20000
	}
	return o
}

// ConsumerConflict is a process asking for a task consumer setting other
// than the one the fleet's consumer has.
type ConsumerConflict struct {
	// Consumer is the consumer's name, Setting the setting (as a run's
	// configuration names it), Fleet the consumer's value and Asked the
	// process's.
	Consumer, Setting, Fleet, Asked string
}

func (c *ConsumerConflict) Error() string {
	return fmt.Sprintf("task consumer %s has %s %s, and this run asks for %s: the task consumers belong to the fleet and a run does not change them; "+
		"run with %s %s, or, with no run using the fleet, delete the consumers (nats consumer rm %s <name>) so that the next run creates them",
		c.Consumer, c.Setting, c.Fleet, c.Asked, c.Setting, c.Fleet, StreamName)
}

// EnsureConsumers makes sure the durable pull consumers all workers share,
// one per [Class], exist, and have the settings o sets. A missing
// consumer is created with o; an existing one is never changed (it
// belongs to the fleet, and every run and worker on it must agree on how
// often a task is delivered and how long a delivery waits): a setting o
// sets that it does not have fails with a [*ConsumerConflict] naming both
// values.
func EnsureConsumers(ctx context.Context, js jetstream.JetStream, o ConsumerOptions) error {
	full := o.withDefaults()
	for _, c := range Classes {
		cfg := jetstream.ConsumerConfig{
			Durable:        c.Consumer(),
			Description:    "skillfleet workers (" + string(c) + " tasks of every run)",
			AckPolicy:      jetstream.AckExplicitPolicy,
			AckWait:        full.AckWait,
			MaxDeliver:     full.MaxDeliver,
			MaxAckPending:  full.MaxAckPending,
			FilterSubjects: []string{ClassSubjects(c)},
		}
		if len(full.BackOff) > 0 {
			cfg.BackOff = full.BackOff
			cfg.AckWait = 0
		}
		cons, err := retry(ctx, func(ctx context.Context) (jetstream.Consumer, error) {
			cons, err := js.Consumer(ctx, StreamName, c.Consumer())
			if errors.Is(err, jetstream.ErrConsumerNotFound) {
				// Another process creating it at the same time makes
				// this fail with ErrConsumerExists (unless it asked for
				// the same settings); the next attempt finds it.
				cons, err = js.CreateConsumer(ctx, StreamName, cfg)
				if errors.Is(err, jetstream.ErrConsumerExists) {
					return js.Consumer(ctx, StreamName, c.Consumer())
				}
			}
			return cons, err
		})
		if err != nil {
			return fmt.Errorf("task consumer %s: %w", c.Consumer(), err)
		}
		if err := checkConsumer(c.Consumer(), cons.CachedInfo().Config, o); err != nil {
			return err
		}
	}
	return nil
}

// checkConsumer compares the settings o sets with the consumer's.
func checkConsumer(name string, have jetstream.ConsumerConfig, o ConsumerOptions) error {
	conflict := func(setting string, fleet, asked any) error {
		return &ConsumerConflict{Consumer: name, Setting: setting, Fleet: fmt.Sprint(fleet), Asked: fmt.Sprint(asked)}
	}
	switch {
	case o.MaxDeliver != 0 && o.MaxDeliver != have.MaxDeliver:
		return conflict("max deliveries (runtime.max_deliveries)", have.MaxDeliver, o.MaxDeliver)
	case len(o.BackOff) == 0 && o.AckWait != 0 && len(have.BackOff) == 0 && o.AckWait != have.AckWait:
		return conflict("AckWait (--ack-wait)", have.AckWait, o.AckWait)
	case len(o.BackOff) > 0 && !slices.Equal(o.BackOff, have.BackOff):
		return conflict("redelivery back-off", have.BackOff, o.BackOff)
	case o.MaxAckPending != 0 && o.MaxAckPending != have.MaxAckPending:
		return conflict("max ack pending", have.MaxAckPending, o.MaxAckPending)
	}
	return nil
}

// Consumers returns the shared class consumers (a coordinator creates them).
func Consumers(ctx context.Context, js jetstream.JetStream) (map[Class]jetstream.Consumer, error) {
	out := map[Class]jetstream.Consumer{}
	for _, c := range Classes {
		cons, err := retry(ctx, func(ctx context.Context) (jetstream.Consumer, error) {
			return js.Consumer(ctx, StreamName, c.Consumer())
		})
		if err != nil {
			return nil, fmt.Errorf("task consumer %s: %w", c.Consumer(), err)
		}
		out[c] = cons
	}
	return out, nil
}

// MaxDeliveriesExceeded is a stream sequence whose task ran out of deliveries.
type MaxDeliveriesExceeded struct {
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries uint64 `json:"deliveries"`
}

// SubscribeMaxDeliveries calls fn for every task message that JetStream
// stops redelivering. The subscription ends with the returned func.
func SubscribeMaxDeliveries(nc *nats.Conn, fn func(MaxDeliveriesExceeded)) (func(), error) {
	sub, err := nc.Subscribe(maxDeliveriesAdvisory, func(m *nats.Msg) {
		var a MaxDeliveriesExceeded
		if json.Unmarshal(m.Data, &a) == nil && a.StreamSeq > 0 {
			fn(a)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe max-deliveries advisory: %w", err)
	}
	return func() { _ = sub.Unsubscribe() }, nil
}

// ConnectOptions tunes Connect.
type ConnectOptions struct {
	Name   string
	Logger *slog.Logger
	// Extra are further nats options (credentials, TLS, in-process server).
	Extra []nats.Option
	// RetryFor bounds how long Connect keeps retrying the first connection (default 1m; <0 = once).
	RetryFor time.Duration
}

// Connect dials NATS, retrying the first connection with back-off and
// logging each failure, and reconnecting forever afterwards.
func Connect(ctx context.Context, url string, o ConnectOptions) (*nats.Conn, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.RetryFor == 0 {
		o.RetryFor = time.Minute
	}
	opts := append([]nats.Option{
		nats.Name(o.Name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("nats disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) { log.Info("nats reconnected", "url", c.ConnectedUrlRedacted()) }),
	}, o.Extra...)
	deadline := time.Now().Add(o.RetryFor)
	delay := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		nc, err := nats.Connect(url, opts...)
		if err == nil {
			return nc, nil
		}
		if o.RetryFor < 0 || time.Now().After(deadline) {
			return nil, fmt.Errorf("connect to nats %s: %w", redactURL(url), err)
		}
		log.Warn("nats unreachable, retrying", "url", redactURL(url), "attempt", attempt, "retry_in", delay.String(), "err", err)
		select {
		case <-ctx.Done():
			return nil, errors.Join(fmt.Errorf("connect to nats %s: %w", redactURL(url), ctx.Err()), err)
		case <-time.After(delay):
		}
		delay = min(delay*2, 5*time.Second)
	}
}
