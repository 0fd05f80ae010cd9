// Package objstore carries message bodies too large for one NATS message
// (the server's max_payload, 1 MB by default) through a JetStream object
// store: the sender keeps the body in the bucket under a name and sends a
// message whose header names it and whose data is empty; the receiver
// reads the body back from the bucket. A slow-update task that carries an
// epoch's trajectories is such a body at paper scale.
//
// A Store starts nothing: every method is one request (or one chunked
// transfer) on the caller's goroutine.
package objstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillfleet/skillfleet/pkg/queue"
)

// Bucket is the object store bucket of the fleet's large message bodies.
const Bucket = "skillfleet_payloads"

// Header names the object that holds a message's body; a message with it
// has empty data.
const Header = "Skillfleet-Payload"

// TTL is how long a body stays in the bucket when nobody deletes it: the
// dispatcher deletes a task's body once the task has ended, so only the
// bodies of a coordinator that died stay this long (a resumed run puts
// them again).
const TTL = 24 * time.Hour

// MaxBody is the largest task or result body the fleet carries: the
// result journal's record bound, and the gRPC message bound of the
// coordinator's endpoint and of the workers that report to it.
const MaxBody = 256 << 20

// headroom is what a message's data may not use of max_payload: the
// headers (trace context, message id) and the protocol's framing.
const headroom = 16 << 10

// ErrGone is returned by Get for a body that is not in the bucket: its
// task ended (the body was deleted) or it outlived TTL.
var ErrGone = errors.New("message body not in the object store")

// Fits reports whether msg can be published as it is on nc: its data and
// headers within the server's max_payload, less some headroom.
func Fits(nc *nats.Conn, msg *nats.Msg) bool {
	max := nc.MaxPayload()
	if max <= 0 {
		return true // not connected yet: the publish says why
	}
	size := int64(len(msg.Data))
	for k, vs := range msg.Header {
		for _, v := range vs {
			size += int64(len(k) + len(v) + 4)
		}
	}
	return size+headroom <= max
}

// NewName returns a name no other body has: a body is put once per
// submission of its task and deleted when the task ends, so a name is
// never reused for different contents (a late reader finds the body it
// was sent or none).
func NewName(taskID string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	id := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, taskID)
	if len(id) > 128 {
		id = id[len(id)-128:]
	}
	return id + "." + hex.EncodeToString(b[:])
}

// Store is the fleet's bucket of large message bodies, opened (made when
// missing) on first use.
type Store struct {
	js       jetstream.JetStream
	replicas int

	mu  sync.Mutex
	obs jetstream.ObjectStore
}

// New returns the store on js; a bucket it makes is kept on replicas
// servers of a NATS cluster (0 = 1).
func New(js jetstream.JetStream, replicas int) *Store {
	return &Store{js: js, replicas: max(replicas, 1)}
}

// bucket opens the bucket, making it when it is missing; it retries
// through a cluster's failover.
func (s *Store) bucket(ctx context.Context) (jetstream.ObjectStore, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.obs != nil {
		return s.obs, nil
	}
	obs, err := queue.Place(ctx, func(ctx context.Context) (jetstream.ObjectStore, error) {
		obs, err := s.js.ObjectStore(ctx, Bucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			obs, err = s.js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{
				Bucket:      Bucket,
				Description: "skillfleet: task and result bodies too large for one NATS message",
				TTL:         TTL,
				Storage:     jetstream.FileStorage,
				Replicas:    s.replicas,
			})
			if errors.Is(err, jetstream.ErrBucketExists) || errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				obs, err = s.js.ObjectStore(ctx, Bucket) // made by another process meanwhile
			}
		}
		return obs, err
	})
	if err != nil {
		return nil, fmt.Errorf("object store %s: %w", Bucket, err)
	}
	s.obs = obs
	return obs, nil
}

// Ensure puts data under name unless the bucket already holds an object
// of that name (a republish of the same submission).
func (s *Store) Ensure(ctx context.Context, name string, data []byte) error {
	obs, err := s.bucket(ctx)
	if err != nil {
		return err
	}
	_, err = queue.Place(ctx, func(ctx context.Context) (struct{}, error) {
		if _, err := obs.GetInfo(ctx, name); err == nil {
			return struct{}{}, nil
		} else if !errors.Is(err, jetstream.ErrObjectNotFound) {
			return struct{}{}, err
		}
		_, err := obs.PutBytes(ctx, name, data)
		return struct{}{}, err
	})
	if err != nil {
		return fmt.Errorf("put %d bytes as %s in object store %s: %w", len(data), name, Bucket, err)
	}
	return nil
}

// Get reads the body named name; [ErrGone] when the bucket does not hold
// it.
func (s *Store) Get(ctx context.Context, name string) ([]byte, error) {
	obs, err := s.bucket(ctx)
	if err != nil {
		return nil, err
	}
	data, err := queue.Place(ctx, func(ctx context.Context) ([]byte, error) { return obs.GetBytes(ctx, name) })
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrGone, name)
	}
	if err != nil {
		return nil, fmt.Errorf("get %s from object store %s: %w", name, Bucket, err)
	}
	return data, nil
}

// Delete removes the body named name; one already gone is no error.
func (s *Store) Delete(ctx context.Context, name string) error {
	obs, err := s.bucket(ctx)
	if err != nil {
		return err
	}
	if err := obs.Delete(ctx, name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("delete %s from object store %s: %w", name, Bucket, err)
	}
	return nil
}

// Names lists the bodies the bucket holds (for tests and the operator).
func (s *Store) Names(ctx context.Context) ([]string, error) {
	obs, err := s.bucket(ctx)
	if err != nil {
		return nil, err
	}
	infos, err := obs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(infos))
	for _, i := range infos {
		if !i.Deleted {
			out = append(out, i.Name)
		}
	}
	return out, nil
}
