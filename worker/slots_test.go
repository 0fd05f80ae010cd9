package worker

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/queue/queuetest"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// recorder is a coordinator that records every result it is sent.
type recorder struct {
	pb.UnimplementedCoordinatorServer
	results chan *pb.Result
	// hold, when set, is waited on before a result is acked.
	hold chan struct{}
}

func (r *recorder) Register(context.Context, *pb.RegisterRequest) (*pb.RegisterResponse, error) {
	return &pb.RegisterResponse{}, nil
}

func (r *recorder) Heartbeat(context.Context, *pb.HeartbeatRequest) (*pb.HeartbeatResponse, error) {
	return &pb.HeartbeatResponse{Known: true}, nil
}

func (r *recorder) Report(s grpc.BidiStreamingServer[pb.Result, pb.ReportAck]) error {
	for {
		res, err := s.Recv()
		if err != nil {
			return nil
		}
		r.results <- res
		if r.hold != nil {
			<-r.hold
		}
		if err := s.Send(&pb.ReportAck{TaskId: res.GetTaskId(), Status: pb.ReportAck_STATUS_RECORDED}); err != nil {
			return nil
		}
	}
}

// gatedModel is a provider whose calls end only when the test opens the
// call's gate; like a provider, it ignores the client going away.
type gatedModel struct {
	mu    sync.Mutex
	gates map[string]chan struct{}
	// started gets a call's name once it is in flight: a task cancelled
	// between its start and its call makes no call, and frees its slot.
	started chan string
}

func (m *gatedModel) gate(id string) chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.gates[id] == nil {
		m.gates[id] = make(chan struct{})
	}
	return m.gates[id]
}

func (m *gatedModel) Chat(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	m.started <- req.Stage
	select {
	case <-m.gate(req.Stage):
	case <-ctx.Done():
		return nil, &llm.Error{Kind: llm.KindCancelled, Err: context.Cause(ctx)}
	}
	return &llm.Response{Content: "ok", Usage: llm.Usage{InputTokens: 7, OutputTokens: 2}, Attempts: 1}, nil
}

// slotBundle is a worker with one target slot, on a real NATS server, that
// reports to a real gRPC coordinator; each task makes one call of the
// gated model, named by the task id.
type slotBundle struct {
	js      jetstream.JetStream
	pub     func(ids ...string) []uint64 // the messages' stream sequences
	cancel  func(notice string)
	model   *gatedModel
	rec     *recorder
	started chan string // a task's id once its call is in flight
	ended   chan string
	results chan *pb.Result
	running atomic.Int32
	peak    atomic.Int32

	mu   sync.Mutex
	ctxs map[string]context.Context // each started task's context
}

// cancelled waits until the worker has cancelled task id's context.
func (b *slotBundle) cancelled(t *testing.T, id string) {
	t.Helper()
	b.mu.Lock()
	ctx := b.ctxs[id]
	b.mu.Unlock()
	select {
	case <-ctx.Done():
	case <-time.After(30 * time.Second):
		t.Fatalf("task %s not cancelled after 30 s", id)
	}
}

func setupSlots(t *testing.T, cancelledInFlight int, hold chan struct{}) *slotBundle {
	t.Helper()
	return setupSlotsAck(t, cancelledInFlight, hold, 5*time.Second)
}

func setupSlotsAck(t *testing.T, cancelledInFlight int, hold chan struct{}, ackWait time.Duration) *slotBundle {
	t.Helper()
	ctx := t.Context()
	srv := queuetest.Start(t)
	nc, err := srv.Connect("slots-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := queue.EnsureStream(ctx, js, queue.StreamOptions{Memory: true}); err != nil {
		t.Fatal(err)
	}
	if err := queue.EnsureConsumers(ctx, js, queue.ConsumerOptions{AckWait: ackWait}); err != nil {
		t.Fatal(err)
	}
	cons, err := queue.Consumers(ctx, js)
	if err != nil {
		t.Fatal(err)
	}

	rec := &recorder{results: make(chan *pb.Result, 16), hold: hold}
	gs := grpc.NewServer()
	pb.RegisterCoordinatorServer(gs, rec)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gs.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}

	started := make(chan string, 16)
	b := &slotBundle{js: js, rec: rec, model: &gatedModel{gates: map[string]chan struct{}{}, started: started},
		started: started, ended: make(chan string, 16), results: rec.results, ctxs: map[string]context.Context{}}
	h := HandlerFunc(func(ctx context.Context, tk *pb.Task) *pb.Result {
		n := b.running.Add(1)
		defer b.running.Add(-1)
		// Raise peak to n unless another call raised it past n first.
		for p := b.peak.Load(); n > p; p = b.peak.Load() {
			if b.peak.CompareAndSwap(p, n) {
				break
			}
		}
		b.mu.Lock()
		b.ctxs[tk.GetId()] = ctx
		b.mu.Unlock()
		mt := newMeter(b.model)
		_, err := mt.Chat(ctx, &llm.Request{Stage: tk.GetId()})
		b.ended <- tk.GetId()
		res := &pb.Result{Outcome: pb.Outcome_OUTCOME_OK}
		if err != nil {
			res = failure(err)
		}
		res.Usage, _ = mt.result("m")
		return res
	})
	w := New(Config{ID: "w1", Concurrency: 1, OptimizerConcurrency: 1, CancelledInFlight: cancelledInFlight, DrainTimeout: 5 * time.Second},
		Deps{NC: nc, Consumers: map[queue.Class]jetstream.Consumer{queue.ClassCritical: cons[queue.ClassCritical]}, Client: pb.NewCoordinatorClient(conn), Handler: h})
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = w.Run(wctx); close(done) }()
	t.Cleanup(func() {
		// Open every gate so that nothing is left waiting, then stop.
		b.model.mu.Lock()
		for _, g := range b.model.gates {
			select {
			case <-g:
			default:
				close(g)
			}
		}
		b.model.mu.Unlock()
		stop()
		<-done
		_ = conn.Close()
		gs.Stop()
	})

	b.pub = func(ids ...string) []uint64 {
		t.Helper()
		var seqs []uint64
		for _, id := range ids {
			tk := &pb.Task{Id: id, RunId: "r", Stage: "gate", Kind: &pb.Task_Noop{Noop: &pb.NoopTask{}}}
			data, _ := proto.Marshal(tk)
			ack, err := js.Publish(ctx, queue.TaskSubject(queue.ClassOf(tk), queue.KindOf(tk), "r"), data)
			if err != nil {
				t.Fatal(err)
			}
			seqs = append(seqs, ack.Sequence)
		}
		return seqs
	}
	b.cancel = func(notice string) {
		t.Helper()
		if err := nc.Publish(queue.CancelSubject, []byte(notice)); err != nil {
			t.Fatal(err)
		}
		_ = nc.Flush()
	}
	return b
}

// next is the next value on ch, or a test failure after a long wait (the
// machine may be loaded; nothing here is timed).
func next[T any](t *testing.T, ch chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s after 30 s", what)
		panic("unreachable")
	}
}

func (b *slotBundle) open(id string) { close(b.model.gate(id)) }

// TestCancelledTaskGivesItsSlotBack: a task cancelled while its call is in
// flight lets the next task start in its slot before the call ends; the
// call still ends and its usage reaches the coordinator. A second
// cancellation finds the linger room (1 × 1 slot) full, so that task keeps
// its slot and the third task waits for its call: never more than two
// tasks run.
func TestCancelledTaskGivesItsSlotBack(t *testing.T) {
	b := setupSlots(t, 1, nil)
	b.pub("a", "b", "c")
	if id := next(t, b.started, "start"); id != "a" {
		t.Fatalf("first task started = %s, want a", id)
	}
	b.cancel("a")
	if id := next(t, b.started, "start after the cancel"); id != "b" {
		t.Fatalf("after a's cancel %s started, want b", id)
	}
	select {
	case id := <-b.ended:
		t.Fatalf("%s's call ended before its gate opened", id)
	default:
	}

	b.cancel("b") // the linger room is taken by a: b stays in its slot
	b.cancelled(t, "b")
	time.Sleep(100 * time.Millisecond) // a wrongly freed slot would take c now
	select {
	case id := <-b.started:
		t.Fatalf("%s started while the slot's cancelled task b was still in its call", id)
	default:
	}
	b.open("b")
	if id := next(t, b.ended, "end of b's call"); id != "b" {
		t.Fatalf("call ended = %s, want b", id)
	}
	if id := next(t, b.started, "start of c"); id != "c" {
		t.Fatalf("started %s, want c", id)
	}
	if res := next(t, b.results, "b's result"); res.GetTaskId() != "b" || res.GetUsage().GetCalls() != 1 {
		t.Fatalf("reported %v, want b's finished call", res)
	}
	b.open("a")
	if id := next(t, b.ended, "end of a's call"); id != "a" {
		t.Fatalf("call ended = %s, want a", id)
	}
	res := next(t, b.results, "a's result")
	if res.GetTaskId() != "a" || res.GetUsage().GetCalls() != 1 || res.GetUsage().GetInputTokens() != 7 || res.GetOutcome() != pb.Outcome_OUTCOME_OK {
		t.Fatalf("reported %v, want a's finished call: OK, 1 call, 7 input tokens", res)
	}
	b.open("c")
	if res := next(t, b.results, "c's result"); res.GetTaskId() != "c" || res.GetOutcome() != pb.Outcome_OUTCOME_OK {
		t.Fatalf("reported %v, want c OK", res)
	}
	if p := b.peak.Load(); p != 2 {
		t.Errorf("peak tasks running = %d, want 2 (one slot + one linger place)", p)
	}
}

// TestCancelledTaskKeepsItsSlotWhenLingerIsOff: with CancelledInFlight < 0
// the next task starts only after the cancelled task's call ended.
func TestCancelledTaskKeepsItsSlotWhenLingerIsOff(t *testing.T) {
	b := setupSlots(t, -1, nil)
	b.pub("a", "b")
	if id := next(t, b.started, "start"); id != "a" {
		t.Fatalf("first task started = %s, want a", id)
	}
	b.cancel("a")
	// Give a wrongly freed slot time to take b; b must not have started.
	time.Sleep(300 * time.Millisecond)
	select {
	case id := <-b.started:
		t.Fatalf("%s started while a's call was in flight in the only slot", id)
	default:
	}
	b.open("a")
	if id := next(t, b.started, "start of b"); id != "b" {
		t.Fatalf("started %s, want b", id)
	}
	if id := next(t, b.ended, "end of a's call"); id != "a" {
		t.Fatalf("call ended = %s, want a", id)
	}
	b.open("b")
	got := map[string]bool{}
	for range 2 {
		got[next(t, b.results, "result").GetTaskId()] = true
	}
	if !got["a"] || !got["b"] {
		t.Fatalf("results for %v, want a and b", got)
	}
}

// TestFinishedTaskReportsOutsideItsSlot: a task whose model work is done
// waits for its coordinator's ack outside its slot, so the next task
// starts without waiting for the round trip.
func TestFinishedTaskReportsOutsideItsSlot(t *testing.T) {
	hold := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(hold) }) }
	b := setupSlots(t, 1, hold)
	t.Cleanup(release) // registered after the bundle's cleanup, so it runs first
	b.pub("a", "b")
	if id := next(t, b.started, "start"); id != "a" {
		t.Fatalf("first task started = %s, want a", id)
	}
	b.open("a")
	if res := next(t, b.results, "a's result"); res.GetTaskId() != "a" {
		t.Fatalf("reported %s, want a", res.GetTaskId())
	}
	// The coordinator has not acked a's result yet.
	if id := next(t, b.started, "start of b while a's report waits"); id != "b" {
		t.Fatalf("started %s, want b", id)
	}
	b.open("b")
	release()
	if res := next(t, b.results, "b's result"); res.GetTaskId() != "b" {
		t.Fatalf("reported %s, want b", res.GetTaskId())
	}
}

// TestCancelledMessageIsDroppedUnrun: a task message whose cancel notice
// (task id and stream sequence) came before a worker took it is acked
// without running; the same task submitted again, a new message, runs.
func TestCancelledMessageIsDroppedUnrun(t *testing.T) {
	b := setupSlots(t, 1, nil)
	seqs := b.pub("a", "b")
	if id := next(t, b.started, "start"); id != "a" {
		t.Fatalf("first task started = %s, want a", id)
	}
	b.cancel(fmt.Sprintf("b %d\nnot-here", seqs[1]))
	b.cancel("a") // a holds the only slot until its call ends: the notice for b is in by then
	b.open("a")
	if res := next(t, b.results, "a's result"); res.GetTaskId() != "a" {
		t.Fatalf("reported %s, want a", res.GetTaskId())
	}
	// b's message leaves the queue acked, without running (run, it would
	// wait on its closed gate, unacked).
	stream, err := b.js.Stream(t.Context(), queue.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		info, err := stream.Info(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Msgs == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d messages left in the work queue, want 0 (the cancelled one acked)", info.State.Msgs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case id := <-b.started:
		t.Fatalf("%s started: the cancelled message ran", id)
	default:
	}
	b.pub("b")
	if id := next(t, b.started, "start of b submitted again"); id != "b" {
		t.Fatalf("started %s, want b", id)
	}
	b.open("b")
	if res := next(t, b.results, "b's result"); res.GetTaskId() != "b" {
		t.Fatalf("reported %s, want b", res.GetTaskId())
	}
}

// TestSlowTaskIsNotRedelivered: heartbeats keep a task that runs several
// AckWaits from being handed out again (the first beat comes at half the
// AckWait): the consumer never counts it as waiting for redelivery.
func TestSlowTaskIsNotRedelivered(t *testing.T) {
	b := setupSlotsAck(t, 1, nil, 400*time.Millisecond)
	b.pub("a")
	if id := next(t, b.started, "start"); id != "a" {
		t.Fatalf("started %s, want a", id)
	}
	cons, err := b.js.Consumer(t.Context(), queue.StreamName, queue.ClassCritical.Consumer())
	if err != nil {
		t.Fatal(err)
	}
	for range 8 { // 2 s: five AckWaits
		// A second puller stands by: an expired delivery is handed out
		// again only to a pull request, and the worker's one slot is busy.
		if batch, err := cons.Fetch(1, jetstream.FetchMaxWait(250*time.Millisecond)); err == nil {
			for m := range batch.Messages() {
				md, _ := m.Metadata()
				t.Fatalf("the running task was handed out again (delivery %d): its heartbeats did not hold it", md.NumDelivered)
			}
		}
		info, err := cons.Info(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if info.NumRedelivered != 0 || info.NumPending != 0 || info.NumAckPending != 1 {
			t.Fatalf("consumer: %d redelivered, %d pending, %d ack pending; want 0, 0, 1 (a heart-beaten)", info.NumRedelivered, info.NumPending, info.NumAckPending)
		}
	}
	b.open("a")
	if res := next(t, b.results, "a's result"); res.GetTaskId() != "a" || res.GetAttempt() != 1 {
		t.Fatalf("reported %v, want a on its first delivery", res)
	}
}

// TestAbandonNoticeEndsALingeringCall: a task cancelled while its call is
// in flight finishes the call (it lingers); an abandon notice for it ends
// the call at once, and the worker reports the attempt with the call
// counted. An abandon notice for a task not running changes nothing.
func TestAbandonNoticeEndsALingeringCall(t *testing.T) {
	b := setupSlots(t, 1, nil)
	b.pub("a")
	if id := next(t, b.started, "start"); id != "a" {
		t.Fatalf("started %s, want a", id)
	}
	b.cancel("a")
	b.cancelled(t, "a")
	b.cancel("nobody " + queue.AbandonNotice)
	time.Sleep(100 * time.Millisecond)
	select {
	case id := <-b.ended:
		t.Fatalf("%s's call ended on the cancel alone", id)
	default:
	}
	b.cancel("a " + queue.AbandonNotice)
	if id := next(t, b.ended, "end of a's call after the abandon notice"); id != "a" {
		t.Fatalf("call ended = %s, want a", id)
	}
	for {
		res := next(t, b.results, "a's report")
		if res.GetTaskId() != "a" {
			t.Fatalf("reported %s, want a", res.GetTaskId())
		}
		if res.GetUsage().GetCalls() == 0 {
			continue // the linger note
		}
		if res.GetOutcome() == pb.Outcome_OUTCOME_OK || res.GetUsage().GetFailedCalls() != 1 || res.GetUsage().GetFailedCauses()[llm.CauseStall] != 1 {
			t.Fatalf("reported %v, want a's abandoned call: not OK, 1 failed call, cause stall", res)
		}
		break
	}
}
