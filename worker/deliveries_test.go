package worker

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/queue/queuetest"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// TestLastDeliveryIsTheConsumers: the fleet's consumers deliver a task
// twice; a worker told five (as in-process campaign workers were) still
// reports a task that fails on its second delivery, with its error,
// instead of returning it to a queue that will not deliver it again.
func TestLastDeliveryIsTheConsumers(t *testing.T) {
	ctx := t.Context()
	srv := queuetest.Start(t)
	nc, err := srv.Connect("deliveries-test")
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
	if err := queue.EnsureConsumers(ctx, js, queue.ConsumerOptions{MaxDeliver: 2, AckWait: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	cons, err := Consumers(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{results: make(chan *pb.Result, 16)}
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
	failing := HandlerFunc(func(context.Context, *pb.Task) *pb.Result {
		return &pb.Result{Outcome: pb.Outcome_OUTCOME_MODEL_ERROR, Error: "provider said 500"}
	})
	w := New(Config{ID: "w1", Concurrency: 1, OptimizerConcurrency: 1, MaxDeliver: 5, DrainTimeout: 5 * time.Second},
		Deps{NC: nc, Consumers: cons, Client: pb.NewCoordinatorClient(conn), Handler: failing})
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = w.Run(wctx); close(done) }()
	t.Cleanup(func() {
		stop()
		<-done
		_ = conn.Close()
		gs.Stop()
	})

	tk := &pb.Task{Id: "r/fails", RunId: "r", Stage: "gate", Kind: &pb.Task_Noop{Noop: &pb.NoopTask{}}}
	data, _ := proto.Marshal(tk)
	if _, err := js.Publish(ctx, queue.TaskSubject(queue.ClassOf(tk), queue.KindOf(tk), "r"), data); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-rec.results:
		if res.GetOutcome() != pb.Outcome_OUTCOME_MODEL_ERROR || res.GetError() != "provider said 500" || res.GetAttempt() != 2 {
			t.Errorf("reported %v %q on attempt %d, want MODEL_ERROR %q on attempt 2", res.GetOutcome(), res.GetError(), res.GetAttempt(), "provider said 500")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the task's failure was not reported after 30 s: its last delivery was nak'd")
	}
}
