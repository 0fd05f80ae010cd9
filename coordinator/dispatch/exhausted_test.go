package dispatch_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/coordinator/dispatch"
	"github.com/skillfleet/skillfleet/pkg/queue"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// stalledFleet takes every critical task and never acknowledges it nor
// beats for it: a worker whose machine stalls past the AckWait. It keeps
// the stream sequences it was handed, how often, and which task each
// carried.
type stalledFleet struct {
	mu         sync.Mutex
	deliveries map[uint64]int
	carried    map[uint64]string
}

func newStalledFleet() *stalledFleet {
	return &stalledFleet{deliveries: map[uint64]int{}, carried: map[uint64]string{}}
}

func (s *stalledFleet) run(ctx context.Context, t *testing.T, js jetstream.JetStream) {
	cons, err := js.Consumer(ctx, queue.StreamName, queue.ConsumerCritical)
	if err != nil {
		t.Error(err)
		return
	}
	for ctx.Err() == nil {
		batch, err := cons.Fetch(10, jetstream.FetchMaxWait(100*time.Millisecond))
		if err != nil {
			continue
		}
		for m := range batch.Messages() {
			md, err := m.Metadata()
			var task pb.Task
			if err != nil || proto.Unmarshal(m.Data(), &task) != nil {
				continue
			}
			s.mu.Lock()
			s.deliveries[md.Sequence.Stream]++
			s.carried[md.Sequence.Stream] = task.GetId()
			s.mu.Unlock()
		}
	}
}

func (s *stalledFleet) seen() map[uint64]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[uint64]int{}
	for k, v := range s.deliveries {
		out[k] = v
	}
	return out
}

func exhaustionSetup(t *testing.T, generations int) (context.Context, *dispatch.Dispatcher, *stalledFleet) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	nc, js, stream := startQueue(t)
	if err := queue.EnsureConsumers(ctx, js, queue.ConsumerOptions{AckWait: 200 * time.Millisecond, MaxDeliver: 2}); err != nil {
		t.Fatal(err)
	}
	d := dispatch.New(dispatch.Options{NC: nc, JS: js, Stream: stream, RunPrefix: "r/", Generations: generations})
	fleet := newStalledFleet()
	var wg sync.WaitGroup
	wg.Go(func() { _ = d.Run(ctx) })
	wg.Go(func() { fleet.run(ctx, t, js) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return ctx, d, fleet
}

// TestTaskOutOfDeliveriesIsQueuedAgain: a task whose every delivery
// expires (no ack, no heartbeat) is queued again as a new message, up to
// the dispatcher's generations, and only then recorded as failed.
func TestTaskOutOfDeliveriesIsQueuedAgain(t *testing.T) {
	ctx, d, fleet := exhaustionSetup(t, 3)
	futs, err := d.Submit(ctx, noopTask("r/stalled"))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-futs[0].Done():
	case <-time.After(30 * time.Second):
		t.Fatalf("no result after 30 s; deliveries seen %v", fleet.seen())
	}
	res := futs[0].Result()
	if res.GetOutcome() != pb.Outcome_OUTCOME_MODEL_ERROR {
		t.Errorf("outcome %v (%s), want MODEL_ERROR once every generation ran out", res.GetOutcome(), res.GetError())
	}
	seen := fleet.seen()
	if len(seen) != 3 {
		t.Errorf("the task went out as %d messages %v, want 3 (one per generation)", len(seen), seen)
	}
	for seq, n := range seen {
		if n != 2 {
			t.Errorf("message %d delivered %d times, want the consumer's 2", seq, n)
		}
	}
}

// TestStalledWorkersResultCountsAfterItsDeliveriesRanOut: the worker that
// held a task while its deliveries ran out reports it afterwards; the
// task was queued again, not failed, so the result is the task's result.
func TestStalledWorkersResultCountsAfterItsDeliveriesRanOut(t *testing.T) {
	ctx, d, fleet := exhaustionSetup(t, 3)
	futs, err := d.Submit(ctx, noopTask("r/late"))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(fleet.seen()) < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if len(fleet.seen()) < 2 {
		t.Fatalf("the task was not queued again after its deliveries ran out: %v", fleet.seen())
	}
	select {
	case <-futs[0].Done():
		t.Fatalf("the task was resolved (%v) when its first generation ran out", futs[0].Result().GetOutcome())
	default:
	}
	if s := record(d, &pb.Result{TaskId: "r/late", Outcome: pb.Outcome_OUTCOME_OK}); s != pb.ReportAck_STATUS_RECORDED {
		t.Fatalf("the late result was acked %v, want RECORDED", s)
	}
	<-futs[0].Done()
	if got := futs[0].Result().GetOutcome(); got != pb.Outcome_OUTCOME_OK {
		t.Errorf("outcome %v, want the worker's OK", got)
	}
}
