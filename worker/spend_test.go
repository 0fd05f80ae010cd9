package worker

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/coordinator/rpcserver"
	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/queue/queuetest"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// spendBook is a run's recorder that keeps results and spend reports apart.
type spendBook struct {
	mu      sync.Mutex
	results []*pb.Result
	spent   []*pb.Result
	got     chan struct{}
}

func (b *spendBook) Record(res *pb.Result, done func(pb.ReportAck_Status, error)) {
	b.mu.Lock()
	b.results = append(b.results, res)
	b.mu.Unlock()
	done(pb.ReportAck_STATUS_RECORDED, nil)
	b.got <- struct{}{}
}

func (b *spendBook) RecordSpend(res *pb.Result) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.spent = append(b.spent, res)
}

// runFlakyTask runs one optimizer-class task on a worker reporting to srv:
// the first attempt answers an invalid reply (a billed call), the second
// succeeds. It waits for the task's result to reach got.
func runFlakyTask(t *testing.T, srv pb.CoordinatorServer, got <-chan struct{}) {
	t.Helper()
	ctx := t.Context()
	ns := queuetest.Start(t)
	nc, err := ns.Connect("spend-test")
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
	if err := queue.EnsureConsumers(ctx, js, queue.ConsumerOptions{AckWait: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	cons, err := queue.Consumers(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	pb.RegisterCoordinatorServer(gs, srv)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gs.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	var attempts atomic.Int32
	h := HandlerFunc(func(context.Context, *pb.Task) *pb.Result {
		if attempts.Add(1) == 1 {
			return &pb.Result{Outcome: pb.Outcome_OUTCOME_INVALID_REPLY, Error: "reflect reply: not JSON",
				Usage: &pb.Usage{Calls: 1, InputTokens: 100, OutputTokens: 30, Model: "m", FailedCauses: map[string]int32{"invalid_reply": 1}}}
		}
		return &pb.Result{Outcome: pb.Outcome_OUTCOME_OK, Usage: &pb.Usage{Calls: 1, InputTokens: 100, OutputTokens: 40, Model: "m"}}
	})
	w := New(Config{ID: "w1", Concurrency: 1, OptimizerConcurrency: 1},
		Deps{NC: nc, Consumers: map[queue.Class]jetstream.Consumer{queue.ClassOptimizer: cons[queue.ClassOptimizer]}, Client: pb.NewCoordinatorClient(conn), Handler: h})
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = w.Run(wctx); close(done) }()
	defer func() {
		stop()
		<-done
		_ = conn.Close()
		gs.Stop()
	}()
	tk := &pb.Task{Id: "r/1/reflect/0", RunId: "r", Stage: "reflect", Kind: &pb.Task_Reflect{Reflect: &pb.OptimizerTask{Prompt: "analyst_failure"}}}
	data, _ := proto.Marshal(tk)
	if _, err := js.Publish(ctx, queue.TaskSubject(queue.ClassOf(tk), queue.KindOf(tk), "r"), data); err != nil {
		t.Fatal(err)
	}
	select {
	case <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("no result after 30 s")
	}
	if n := attempts.Load(); n != 2 {
		t.Fatalf("the task ran %d times, want 2", n)
	}
}

// TestRequeuedAttemptReportsItsSpend: an attempt that goes back on the
// queue (an invalid optimizer reply) reports what it spent, with its cause,
// as a spend-only report the coordinator accounts and does not record;
// the task's one result follows from the next attempt.
func TestRequeuedAttemptReportsItsSpend(t *testing.T) {
	book := &spendBook{got: make(chan struct{}, 4)}
	runFlakyTask(t, rpcserver.New("c1", book, nil, nil, 0), book.got)
	book.mu.Lock()
	defer book.mu.Unlock()
	if len(book.results) != 1 || book.results[0].GetOutcome() != pb.Outcome_OUTCOME_OK || book.results[0].GetSpendOnly() {
		t.Fatalf("recorded %v, want the second attempt's OK result only", book.results)
	}
	if len(book.spent) != 1 {
		t.Fatalf("%d spend reports, want 1 (the requeued attempt's)", len(book.spent))
	}
	s := book.spent[0]
	u := s.GetUsage()
	if !s.GetSpendOnly() || s.GetTaskId() != "r/1/reflect/0" || s.GetOutcome() != pb.Outcome_OUTCOME_INVALID_REPLY || s.GetAttempt() != 1 {
		t.Errorf("spend report %v: want spend_only, the task's id, outcome invalid_reply, attempt 1", s)
	}
	if u.GetCalls() != 1 || u.GetInputTokens() != 100 || u.GetOutputTokens() != 30 || u.GetFailedCauses()["invalid_reply"] != 1 {
		t.Errorf("spend report usage %v: want 1 call, 100 in / 30 out, cause invalid_reply", u)
	}
	// Each attempt names itself, so that the coordinator counts the two
	// attempts' usage once each however often either is reported.
	if a, b := s.GetAttemptId(), book.results[0].GetAttemptId(); a == "" || b == "" || a == b {
		t.Errorf("attempt ids %q (requeued) and %q (result): want two different, non-empty ids", a, b)
	}
	in := u.GetInputTokens() + book.results[0].GetUsage().GetInputTokens()
	out := u.GetOutputTokens() + book.results[0].GetUsage().GetOutputTokens()
	if in != 200 || out != 70 {
		t.Errorf("accounted %d in / %d out over both attempts, the model billed 200 / 70", in, out)
	}
}

// TestNoSpendReportToAnOlderCoordinator: a coordinator whose registration
// does not say it takes spend reports would read one as the task's
// result, so it is sent none; it gets the task's one result.
func TestNoSpendReportToAnOlderCoordinator(t *testing.T) {
	rec := &recorder{results: make(chan *pb.Result, 4)}
	got := make(chan struct{}, 4)
	var (
		mu  sync.Mutex
		all []*pb.Result
	)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for r := range rec.results {
			mu.Lock()
			all = append(all, r)
			mu.Unlock()
			got <- struct{}{}
		}
	}()
	runFlakyTask(t, rec, got)
	// The server has stopped: nothing more arrives.
	close(rec.results)
	<-drained
	mu.Lock()
	defer mu.Unlock()
	if len(all) != 1 || all[0].GetSpendOnly() || all[0].GetOutcome() != pb.Outcome_OUTCOME_OK {
		t.Fatalf("the coordinator got %v, want the OK result only", all)
	}
}
