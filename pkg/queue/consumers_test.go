package queue_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/queue/queuetest"
)

// fleetJS is a JetStream context on a fresh embedded server with the task
// stream.
func fleetJS(t *testing.T) jetstream.JetStream {
	t.Helper()
	srv := queuetest.Start(t)
	nc, err := srv.Connect("consumers-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := queue.EnsureStream(t.Context(), js, queue.StreamOptions{Memory: true}); err != nil {
		t.Fatal(err)
	}
	return js
}

// consumerSettings is every class consumer's MaxDeliver and AckWait.
func consumerSettings(t *testing.T, js jetstream.JetStream) map[string][2]int64 {
	t.Helper()
	out := map[string][2]int64{}
	for _, c := range queue.Classes {
		cons, err := js.Consumer(t.Context(), queue.StreamName, c.Consumer())
		if err != nil {
			t.Fatal(err)
		}
		cfg := cons.CachedInfo().Config
		out[c.Consumer()] = [2]int64{int64(cfg.MaxDeliver), int64(cfg.AckWait)}
	}
	return out
}

// TestConsumersBelongToTheFleet: the first run creates the task consumers
// with its settings; a run asking for the same settings, or for none,
// joins; a run asking for other ones is refused with both values named,
// and the consumers keep the fleet's settings.
func TestConsumersBelongToTheFleet(t *testing.T) {
	ctx := context.Background()
	js := fleetJS(t)
	first := queue.ConsumerOptions{MaxDeliver: 3, AckWait: 2 * time.Second}
	if err := queue.EnsureConsumers(ctx, js, first); err != nil {
		t.Fatal(err)
	}
	want := consumerSettings(t, js)
	for name, s := range want {
		if s != [2]int64{3, int64(2 * time.Second)} {
			t.Fatalf("consumer %s created with max deliver %d, AckWait %v; want 3, 2s", name, s[0], time.Duration(s[1]))
		}
	}
	for _, o := range []queue.ConsumerOptions{first, {}, {MaxDeliver: 3}, {AckWait: 2 * time.Second}} {
		if err := queue.EnsureConsumers(ctx, js, o); err != nil {
			t.Errorf("a run asking for %+v, which the fleet's consumers have, was refused: %v", o, err)
		}
	}
	for _, c := range []struct {
		o     queue.ConsumerOptions
		names []string
	}{
		{queue.ConsumerOptions{MaxDeliver: 5}, []string{"runtime.max_deliveries", "has max deliveries (runtime.max_deliveries) 3", "asks for 5"}},
		{queue.ConsumerOptions{MaxDeliver: 3, AckWait: time.Second}, []string{"--ack-wait", "2s", "asks for 1s"}},
	} {
		err := queue.EnsureConsumers(ctx, js, c.o)
		var conflict *queue.ConsumerConflict
		if !errors.As(err, &conflict) {
			t.Errorf("a run asking for %+v: %v, want a ConsumerConflict", c.o, err)
			continue
		}
		for _, n := range c.names {
			if !strings.Contains(err.Error(), n) {
				t.Errorf("refusal %q does not say %q", err, n)
			}
		}
	}
	got := consumerSettings(t, js)
	for name, s := range want {
		if got[name] != s {
			t.Errorf("consumer %s changed from %v to %v by a refused run", name, s, got[name])
		}
	}
}

// TestRunsStartingTogetherCreateTheConsumersOnce: runs that find the
// consumers missing at the same moment all start, the consumers made by
// whichever came first.
func TestRunsStartingTogetherCreateTheConsumersOnce(t *testing.T) {
	js := fleetJS(t)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			errs[i] = queue.EnsureConsumers(t.Context(), js, queue.ConsumerOptions{MaxDeliver: 4})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("run %d: %v", i, err)
		}
	}
	for name, s := range consumerSettings(t, js) {
		if s[0] != 4 {
			t.Errorf("consumer %s has max deliver %d, want 4", name, s[0])
		}
	}
}

// TestDefaultAckWaitOutlastsLateHeartbeats: under the default consumers a
// task whose worker beats for it only every 2 s (a worker starved of CPU,
// its quarter-AckWait beats coming late; twice the AckWait the consumers
// once had by default) stays with that worker: a second puller standing
// by never gets it, and the consumer counts no redelivery.
func TestDefaultAckWaitOutlastsLateHeartbeats(t *testing.T) {
	ctx := t.Context()
	js := fleetJS(t)
	if err := queue.EnsureConsumers(ctx, js, queue.ConsumerOptions{}); err != nil {
		t.Fatal(err)
	}
	if s := consumerSettings(t, js)[queue.ClassCritical.Consumer()]; time.Duration(s[1]) != queue.DefaultAckWait {
		t.Fatalf("consumer created with AckWait %v, want the default %v", time.Duration(s[1]), queue.DefaultAckWait)
	}
	if _, err := js.Publish(ctx, queue.TaskSubject(queue.ClassCritical, "rollout", "late-beats"), []byte("task")); err != nil {
		t.Fatal(err)
	}
	cons, err := js.Consumer(ctx, queue.StreamName, queue.ClassCritical.Consumer())
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var held jetstream.Msg
	for m := range batch.Messages() {
		held = m
	}
	if held == nil {
		t.Fatal("the task was not delivered")
	}
	const gap = 2 * time.Second
	for range 3 {
		// The standby puller waits out the gap: an expired delivery would
		// be handed to it.
		if again, err := cons.Fetch(1, jetstream.FetchMaxWait(gap)); err == nil {
			for m := range again.Messages() {
				md, _ := m.Metadata()
				t.Fatalf("the held task was handed out again (delivery %d) after a %v heartbeat gap", md.NumDelivered, gap)
			}
		}
		if err := held.InProgress(); err != nil {
			t.Fatal(err)
		}
	}
	if err := held.DoubleAck(ctx); err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.NumRedelivered != 0 || info.NumAckPending != 0 {
		t.Fatalf("consumer: %d redelivered, %d ack pending; want 0, 0", info.NumRedelivered, info.NumAckPending)
	}
}
