package dispatch_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/coordinator/dispatch"
	"github.com/skillfleet/skillfleet/pkg/queue"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// TestSweepIsBatched: with 1,000 tasks pending in the stream, a lost-task
// sweep finds the three whose messages left the stream without a result
// and republishes exactly those, in a number of requests that does not
// grow with the backlog; a second sweep finds nothing to do.
func TestSweepIsBatched(t *testing.T) {
	ctx := context.Background()
	nc, js, stream := startQueue(t)
	d := dispatch.New(dispatch.Options{NC: nc, JS: js, Stream: stream, RunPrefix: "r/"})

	const backlog = 1000
	tasks := make([]*pb.Task, backlog)
	for i := range tasks {
		tasks[i] = noopTask(fmt.Sprintf("r/t%04d", i))
		tasks[i].RunId = "r"
	}
	// Another run's queued tasks share the stream and must not be read.
	other := dispatch.New(dispatch.Options{NC: nc, JS: js, Stream: stream, RunPrefix: "o/"})
	for i := range 200 {
		ot := noopTask(fmt.Sprintf("o/t%04d", i))
		ot.RunId = "o"
		if _, err := other.Submit(ctx, ot); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Submit(ctx, tasks...); err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != backlog+200 {
		t.Fatalf("stream holds %d messages, want %d", info.State.Msgs, backlog+200)
	}
	// Three of the run's messages leave the stream with no result (as a
	// worker's terminate or a purge by another process would do).
	first := info.State.FirstSeq + 200
	lost := []uint64{first, first + 500, first + backlog - 1}
	for _, seq := range lost {
		m, err := stream.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		if m.Subject != queue.TaskSubject(queue.ClassOf(tasks[0]), "noop", "r") {
			t.Fatalf("message %d is on %s, not the run's subject", seq, m.Subject)
		}
		if err := stream.DeleteMsg(ctx, seq); err != nil {
			t.Fatal(err)
		}
	}

	before := nc.Stats().OutMsgs
	if n := d.Sweep(ctx, 0); n != len(lost) {
		t.Fatalf("sweep republished %d tasks, want %d", n, len(lost))
	}
	// One batched read, then per lost task a check with the stream's
	// leader and a publish, and one wake-up per class.
	sent := nc.Stats().OutMsgs - before
	if limit := uint64(2 + 2*len(lost) + len(queue.Classes)); sent > limit {
		t.Errorf("sweep of %d pending tasks sent %d messages, want at most %d", backlog, sent, limit)
	}
	info, err = stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != backlog+200 {
		t.Errorf("after the sweep the stream holds %d messages, want %d", info.State.Msgs, backlog+200)
	}
	// The republished messages carry the lost tasks, encoded again.
	want := map[string]bool{"r/t0000": true, "r/t0500": true, "r/t0999": true}
	for k := range lost {
		m, err := stream.GetMsg(ctx, info.State.LastSeq-uint64(k))
		if err != nil {
			t.Fatal(err)
		}
		var task pb.Task
		if err := proto.Unmarshal(m.Data, &task); err != nil {
			t.Fatal(err)
		}
		if !want[task.GetId()] {
			t.Errorf("republished message %d holds task %q, want one of %v", m.Sequence, task.GetId(), want)
		}
		delete(want, task.GetId())
		if task.GetWireVersion() != pb.WireVersion {
			t.Errorf("republished task %s has wire version %d, want %d", task.GetId(), task.GetWireVersion(), pb.WireVersion)
		}
	}

	before, got := nc.Stats().OutMsgs, nc.Stats().InMsgs
	if n := d.Sweep(ctx, 0); n != 0 {
		t.Errorf("second sweep republished %d tasks, want 0", n)
	}
	// Nothing is lost: the sweep asks how many messages the run has, and
	// that is all.
	if sent := nc.Stats().OutMsgs - before; sent > 2 {
		t.Errorf("second sweep sent %d messages, want at most 2", sent)
	}
	if received := nc.Stats().InMsgs - got; received > 2 {
		t.Errorf("second sweep received %d messages for %d pending tasks, want at most 2", received, backlog)
	}
}

// TestSweepWithoutDirectGets: on a stream that does not allow direct gets
// (made by an older process) the sweep still finds a lost task, checking
// each pending task on its own.
func TestSweepWithoutDirectGets(t *testing.T) {
	ctx := context.Background()
	nc, js, stream := startQueue(t)
	cfg := stream.CachedInfo().Config
	cfg.AllowDirect = false
	stream, err := js.UpdateStream(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	d := dispatch.New(dispatch.Options{NC: nc, JS: js, Stream: stream, RunPrefix: "r/"})
	var tasks []*pb.Task
	for i := range 20 {
		tasks = append(tasks, noopTask(fmt.Sprintf("r/t%02d", i)))
	}
	if _, err := d.Submit(ctx, tasks...); err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.DeleteMsg(ctx, info.State.FirstSeq+7); err != nil {
		t.Fatal(err)
	}
	if n := d.Sweep(ctx, 0); n != 1 {
		t.Fatalf("sweep republished %d tasks, want 1", n)
	}
	if _, err := stream.GetMsg(ctx, info.State.LastSeq+1); err != nil {
		t.Errorf("the republished task is not in the stream: %v", err)
	}
}

// TestSweeperServesManyRunsWithOneRequest: a process's sweeper looks at
// all its runs' pending tasks with one stream request a round, finds the
// one task lost in one run, republishes it, and leaves the other runs'
// tasks alone; a round where nothing is lost sends one request however
// many runs there are.
func TestSweeperServesManyRunsWithOneRequest(t *testing.T) {
	ctx := context.Background()
	nc, js, stream := startQueue(t)
	s := dispatch.NewSweeper(nil)
	const runs, perRun = 20, 10
	for r := range runs {
		run := fmt.Sprintf("run%02d", r)
		d := dispatch.New(dispatch.Options{NC: nc, JS: js, Stream: stream, RunPrefix: run + "/", Sweeper: s})
		t.Cleanup(s.Add(d))
		for i := range perRun {
			task := noopTask(fmt.Sprintf("%s/t%d", run, i))
			task.RunId = run
			if _, err := d.Submit(ctx, task); err != nil {
				t.Fatal(err)
			}
		}
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != runs*perRun {
		t.Fatalf("stream holds %d messages, want %d", info.State.Msgs, runs*perRun)
	}

	before := nc.Stats().OutMsgs
	if n := s.Sweep(ctx, 0); n != 0 {
		t.Fatalf("a sweep with nothing lost republished %d tasks", n)
	}
	if sent := nc.Stats().OutMsgs - before; sent > 1 {
		t.Errorf("a sweep of %d runs with nothing lost sent %d messages, want 1", runs, sent)
	}

	// One message of run07 leaves the stream with no result.
	lost := info.State.FirstSeq + 7*perRun + 3
	m, err := stream.GetMsg(ctx, lost)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(m.Subject, ".run07") {
		t.Fatalf("message %d is on %s, not one of run07's subjects", lost, m.Subject)
	}
	if err := stream.DeleteMsg(ctx, lost); err != nil {
		t.Fatal(err)
	}
	before = nc.Stats().OutMsgs
	if n := s.Sweep(ctx, 0); n != 1 {
		t.Fatalf("sweep republished %d tasks, want 1", n)
	}
	// The count, run07's batched read, the check with the stream leader,
	// the publish and one wake-up per class.
	if sent, limit := nc.Stats().OutMsgs-before, uint64(4+len(queue.Classes)); sent > limit {
		t.Errorf("sweep of %d runs with one task lost sent %d messages, want at most %d", runs, sent, limit)
	}
	info, err = stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != runs*perRun {
		t.Errorf("after the sweep the stream holds %d messages, want %d", info.State.Msgs, runs*perRun)
	}
	m, err = stream.GetMsg(ctx, info.State.LastSeq)
	if err != nil {
		t.Fatal(err)
	}
	var task pb.Task
	if err := proto.Unmarshal(m.Data, &task); err != nil {
		t.Fatal(err)
	}
	if task.GetId() != "run07/t3" {
		t.Errorf("republished task %q, want run07/t3", task.GetId())
	}
}
