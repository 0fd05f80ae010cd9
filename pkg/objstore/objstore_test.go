package objstore_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/skillfleet/skillfleet/pkg/objstore"
	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/queue/queuetest"
)

// TestMain fails the package's tests when one leaves a goroutine running.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestBodiesRoundTrip: on a server with the default max_payload, a 3 MB
// body does not fit a message and a small one does; a body put is read
// back whole, a second put of the same name keeps the first, a deleted
// body is gone (ErrGone), and deleting it again is no error.
func TestBodiesRoundTrip(t *testing.T) {
	ns := queuetest.StartWith(t, queue.EmbeddedOptions{MaxPayload: -1})
	nc, err := nats.Connect(ns.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	big := bytes.Repeat([]byte("0123456789abcdef"), 3<<20/16)
	if objstore.Fits(nc, &nats.Msg{Data: big}) {
		t.Fatalf("a %d-byte message fits a server of max_payload %d", len(big), nc.MaxPayload())
	}
	if !objstore.Fits(nc, &nats.Msg{Data: []byte("small"), Header: nats.Header{"Nats-Msg-Id": {"r/1"}}}) {
		t.Fatal("a small message does not fit")
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s := objstore.New(js, 0)
	ctx := t.Context()
	name := objstore.NewName("run/slow/00001")
	if !strings.HasPrefix(name, "run_slow_00001.") || name == objstore.NewName("run/slow/00001") {
		t.Fatalf("NewName = %q: want the task id and a part no other name has", name)
	}
	if err := s.Ensure(ctx, name, big); err != nil {
		t.Fatal(err)
	}
	if err := s.Ensure(ctx, name, []byte("other")); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, name)
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("Get = %d bytes, %v; want the %d bytes put first", len(got), err, len(big))
	}
	if names, err := s.Names(ctx); err != nil || len(names) != 1 || names[0] != name {
		t.Fatalf("Names = %v, %v; want [%s]", names, err, name)
	}
	if err := s.Delete(ctx, name); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, name); !errors.Is(err, objstore.ErrGone) {
		t.Fatalf("Get of a deleted body = %v, want ErrGone", err)
	}
	if err := s.Delete(ctx, name); err != nil {
		t.Fatalf("deleting a body twice: %v", err)
	}
	if names, err := s.Names(ctx); err != nil || len(names) != 0 {
		t.Fatalf("Names after the delete = %v, %v; want none", names, err)
	}
}
