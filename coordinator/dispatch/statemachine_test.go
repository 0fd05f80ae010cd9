package dispatch_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/coordinator/dispatch"
	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/queue/queuetest"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

var rounds = flag.Int("statemachine.rounds", 200, "rounds of TestAdvisoryAndSweepNeverDoubleATask")

// copiesInStream counts, per task id, the messages the stream holds from
// seq from on.
func copiesInStream(ctx context.Context, t *testing.T, stream jetstream.Stream, from uint64) map[string]int {
	t.Helper()
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for seq := from; seq <= info.State.LastSeq; seq++ {
		m, err := stream.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var task pb.Task
		if err := proto.Unmarshal(m.Data, &task); err != nil {
			t.Fatal(err)
		}
		out[task.GetId()]++
	}
	return out
}

// TestAdvisoryAndSweepNeverDoubleATask: the max-deliveries advisory of a
// task and lost-task sweeps run at the same time on the same tasks. Each
// task that ran out of deliveries goes out again exactly once — one copy
// in the stream, whoever saw it first — and its result is recorded once.
// Run under -race it also shows that the two paths share no unguarded
// state.
func TestAdvisoryAndSweepNeverDoubleATask(t *testing.T) {
	ctx := context.Background()
	nc, js, stream := startQueue(t)
	d := dispatch.New(dispatch.Options{NC: nc, JS: js, Stream: stream, RunPrefix: "r/", Generations: 1 << 20})
	const perRound = 12
	for round := range *rounds {
		info, err := stream.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		from := info.State.LastSeq + 1
		tasks := make([]*pb.Task, perRound)
		for i := range tasks {
			tasks[i] = noopTask(fmt.Sprintf("r/%d/%d", round, i))
			tasks[i].RunId = "r"
		}
		futs, err := d.Submit(ctx, tasks...)
		if err != nil {
			t.Fatal(err)
		}
		// Every task's first copy runs out of deliveries: its advisory
		// comes in while the process's sweeps go on.
		var wg sync.WaitGroup
		done := make(chan struct{})
		wg.Go(func() {
			defer close(done)
			for seq := from; seq < from+perRound; seq++ {
				d.Exhausted(ctx, seq, 5)
			}
		})
		for range 2 {
			wg.Go(func() {
				for {
					select {
					case <-done:
						d.Sweep(ctx, 0)
						return
					default:
						d.Sweep(ctx, 0)
					}
				}
			})
		}
		wg.Wait()
		copies := copiesInStream(ctx, t, stream, from)
		for _, task := range tasks {
			if n := copies[task.GetId()]; n != 1 {
				t.Errorf("round %d: task %s has %d copies in the stream, want 1", round, task.GetId(), n)
			}
		}
		// A worker runs each copy and reports it; a second report is a
		// duplicate.
		for _, task := range tasks {
			if s := record(d, &pb.Result{TaskId: task.GetId(), Outcome: pb.Outcome_OUTCOME_OK}); s != pb.ReportAck_STATUS_RECORDED {
				t.Errorf("round %d: task %s: result acked %v, want RECORDED", round, task.GetId(), s)
			}
			if s := record(d, &pb.Result{TaskId: task.GetId(), Outcome: pb.Outcome_OUTCOME_OK}); s != pb.ReportAck_STATUS_DUPLICATE {
				t.Errorf("round %d: task %s: second result acked %v, want DUPLICATE", round, task.GetId(), s)
			}
		}
		for _, f := range futs {
			<-f.Done()
			if f.Result().GetOutcome() != pb.Outcome_OUTCOME_OK {
				t.Errorf("round %d: task %s resolved %v, want OK", round, f.ID(), f.Result().GetOutcome())
			}
		}
		if err := stream.Purge(ctx); err != nil { // the workers' acks
			t.Fatal(err)
		}
		if t.Failed() {
			t.Fatalf("failed in round %d of %d", round, *rounds)
		}
	}
	if got, want := d.Recorded(), *rounds*perRound; got != want {
		t.Errorf("Recorded() = %d, want %d", got, want)
	}
}

// deleteLog is a task stream that notes the sequences deleted through it.
type deleteLog struct {
	jetstream.Stream
	mu   sync.Mutex
	seqs []uint64
}

func (l *deleteLog) DeleteMsg(ctx context.Context, seq uint64) error {
	l.mu.Lock()
	l.seqs = append(l.seqs, seq)
	l.mu.Unlock()
	return l.Stream.DeleteMsg(ctx, seq)
}

func (l *deleteLog) deleted() []uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]uint64(nil), l.seqs...)
}

// TestOnlyTheOwningRunActsOnAnExhaustedTask: two coordinator processes
// (a connection and a sweeper each), one coordinating runs a and b, the
// other run c, share a stalled fleet. Every message runs out of
// deliveries; the advisory reaches both processes, and only the run whose
// task it is deletes the message and queues it again: each exhausted
// message is deleted once, by its own run.
func TestOnlyTheOwningRunActsOnAnExhaustedTask(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := queuetest.Start(t)
	type proc struct {
		js  jetstream.JetStream
		log *deleteLog
		s   *dispatch.Sweeper
	}
	procs := make([]proc, 2)
	for i := range procs {
		nc, err := srv.Connect(fmt.Sprintf("coordinator-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		stream, err := queue.EnsureStream(ctx, js, queue.StreamOptions{})
		if err != nil {
			t.Fatal(err)
		}
		procs[i] = proc{js: js, log: &deleteLog{Stream: stream}, s: dispatch.NewSweeper(nil)}
	}
	if err := queue.EnsureConsumers(ctx, procs[0].js, queue.ConsumerOptions{AckWait: 200 * time.Millisecond, MaxDeliver: 2}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	runs := map[string]int{"a": 0, "b": 0, "c": 1}
	var futs []*dispatch.Future
	owner := map[string]int{} // task id → process
	for run, p := range runs {
		pr := procs[p]
		d := dispatch.New(dispatch.Options{NC: pr.js.Conn(), JS: pr.js, Stream: pr.log, RunPrefix: run + "/", Generations: 2, Sweeper: pr.s})
		wg.Go(func() { _ = d.Run(ctx) })
		for i := range 3 {
			task := noopTask(fmt.Sprintf("%s/t%d", run, i))
			task.RunId = run
			f, err := d.Submit(ctx, task)
			if err != nil {
				t.Fatal(err)
			}
			futs = append(futs, f...)
			owner[task.GetId()] = p
		}
	}
	fleet := newStalledFleet()
	wg.Go(func() { fleet.run(ctx, t, procs[0].js) })
	for _, f := range futs {
		res, err := f.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res.GetOutcome() != pb.Outcome_OUTCOME_MODEL_ERROR {
			t.Errorf("task %s: %v, want MODEL_ERROR after both generations ran out", f.ID(), res.GetOutcome())
		}
	}
	fleet.mu.Lock()
	defer fleet.mu.Unlock()
	carried := fleet.carried
	deletes := map[uint64]int{}
	for p, pr := range procs {
		for _, seq := range pr.log.deleted() {
			deletes[seq]++
			id, ok := carried[seq]
			if !ok {
				t.Errorf("process %d deleted message %d, which no worker was handed", p, seq)
				continue
			}
			if owner[id] != p {
				t.Errorf("process %d deleted message %d of task %s, which process %d coordinates", p, seq, id, owner[id])
			}
		}
	}
	if len(carried) != 2*len(futs) {
		t.Errorf("the fleet was handed %d messages, want %d (two generations of %d tasks)", len(carried), 2*len(futs), len(futs))
	}
	for seq, id := range carried {
		if deletes[seq] != 1 {
			t.Errorf("message %d of task %s was deleted %d times, want once", seq, id, deletes[seq])
		}
	}
}

// TestWithdrawnRunIsNotSwept: once a run's dispatcher has stopped (its
// run withdrew), a sweep does not queue its lost tasks again: the run is
// no longer there to take their results.
func TestWithdrawnRunIsNotSwept(t *testing.T) {
	nc, js, stream := startQueue(t)
	ctx, cancel := context.WithCancel(context.Background())
	s := dispatch.NewSweeper(nil)
	d := dispatch.New(dispatch.Options{NC: nc, JS: js, Stream: stream, RunPrefix: "r/", Sweeper: s})
	done := make(chan struct{})
	go func() { _ = d.Run(ctx); close(done) }()
	task := noopTask("r/gone")
	task.RunId = "r"
	if _, err := d.Submit(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.DeleteMsg(context.Background(), info.State.LastSeq); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	if n := d.Sweep(context.Background(), 0); n != 0 {
		t.Errorf("a sweep after the run withdrew queued %d of its tasks again, want 0", n)
	}
	if n := s.Sweep(context.Background(), 0); n != 0 {
		t.Errorf("the process's sweep after the run withdrew queued %d of its tasks again, want 0", n)
	}
}
