package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/coordinator/dispatch"
	"github.com/skillfleet/skillfleet/pkg/queue"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// flakyJS is a real JetStream context whose failAt-th asynchronous
// publish is refused, as a full publish buffer or a dropped connection
// refuses it; every other publish goes through.
type flakyJS struct {
	jetstream.JetStream
	mu     sync.Mutex
	n      int
	failAt int
}

var errRefused = errors.New("publish refused")

func (f *flakyJS) PublishMsgAsync(msg *nats.Msg, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	f.mu.Lock()
	f.n++
	fail := f.n == f.failAt
	f.mu.Unlock()
	if fail {
		return nil, errRefused
	}
	return f.JetStream.PublishMsgAsync(msg, opts...)
}

// answer plays a worker: it takes critical tasks and reports each one OK.
func answer(ctx context.Context, t *testing.T, js jetstream.JetStream, d *dispatch.Dispatcher) {
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
			var task pb.Task
			if err := proto.Unmarshal(m.Data(), &task); err != nil {
				t.Error(err)
				continue
			}
			record(d, &pb.Result{TaskId: task.GetId(), Outcome: pb.Outcome_OUTCOME_OK})
			_ = m.Ack()
		}
	}
}

// TestPublishErrorMidBatchLeavesNoTaskWaiting: when one publish of a
// batch fails, every task of the batch is either published or no longer
// pending, so submitting the batch again publishes what was not, and
// every task gets its result.
func TestPublishErrorMidBatchLeavesNoTaskWaiting(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nc, js, stream := startQueue(t)
	if err := queue.EnsureConsumers(ctx, js, queue.ConsumerOptions{}); err != nil {
		t.Fatal(err)
	}
	fjs := &flakyJS{JetStream: js, failAt: 3}
	d := dispatch.New(dispatch.Options{NC: nc, JS: fjs, Stream: stream, RunPrefix: "r/"})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { _ = d.Run(ctx) })

	tasks := make([]*pb.Task, 5)
	for i := range tasks {
		tasks[i] = noopTask(fmt.Sprintf("r/batch/%d", i))
	}
	if _, err := d.Submit(ctx, tasks...); !errors.Is(err, errRefused) {
		t.Fatalf("Submit = %v, want the refused publish's error", err)
	}
	// The two tasks before the refused one are in the stream; the rest
	// must not be left pending unpublished.
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 2 {
		t.Errorf("stream holds %d messages after the failed batch, want 2", info.State.Msgs)
	}
	if got := d.Pending(); got != 2 {
		t.Errorf("Pending() = %d after the failed batch, want the 2 published tasks", got)
	}

	futs, err := d.Submit(ctx, tasks...)
	if err != nil {
		t.Fatal(err)
	}
	wg.Go(func() { answer(ctx, t, js, d) })
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()
	for _, f := range futs {
		res, err := f.Wait(wctx)
		if err != nil {
			t.Errorf("task %s resubmitted after the failed batch: %v (never published)", f.ID(), err)
			continue
		}
		if res.GetOutcome() != pb.Outcome_OUTCOME_OK {
			t.Errorf("task %s: outcome %v (%s), want OK", f.ID(), res.GetOutcome(), res.GetError())
		}
	}
}

// TestTaskOverMaxPayloadSaysSoAndWhatToRaise: a task larger than the NATS
// server's max_payload is refused with an error that names the task, its
// size, the server's limit and the setting to raise; the task is failed,
// not left pending, and a smaller task after it still goes out.
func TestTaskOverMaxPayloadSaysSoAndWhatToRaise(t *testing.T) {
	ctx := context.Background()
	nc, js, stream := startQueue(t)
	d := dispatch.New(dispatch.Options{NC: nc, JS: js, Stream: stream, RunPrefix: "r/"})
	limit := nc.MaxPayload()
	big := &pb.Task{Id: "r/slow", RunId: "r", Stage: "slow_update", Kind: &pb.Task_SlowUpdate{SlowUpdate: &pb.OptimizerTask{
		Prompt: "slow_update", Payload: make([]byte, limit+1),
	}}}
	futs, err := d.Submit(ctx, big)
	if err == nil {
		t.Fatal("a task over max_payload was accepted")
	}
	for _, want := range []string{"r/slow", "max_payload", fmt.Sprint(limit), "deploy/base/nats.yaml"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if !errors.Is(err, nats.ErrMaxPayload) {
		t.Errorf("error %q does not wrap nats.ErrMaxPayload", err)
	}
	if futs != nil {
		t.Errorf("Submit returned futures with its error")
	}
	small := noopTask("r/small")
	small.RunId = "r"
	if _, err := d.Submit(ctx, small); err != nil {
		t.Fatalf("a small task after the refused one: %v", err)
	}
	if n := d.Pending(); n != 1 {
		t.Errorf("%d tasks pending, want 1 (the small one)", n)
	}
}
