package rpcserver

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

type ackAll struct{ n int }

func (a *ackAll) Record(_ *pb.Result, done func(pb.ReportAck_Status, error)) {
	a.n++
	done(pb.ReportAck_STATUS_RECORDED, nil)
}

type noSkills struct{}

func (noSkills) Skill(string) (string, error) { return "", ErrSkillNotFound }

// A worker keeps its Report stream open between results; Drain must end it
// so that the coordinator's graceful stop does not wait for its timeout.
func TestDrainEndsOpenReportStreams(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &ackAll{}
	s := New("c1", rec, noSkills{}, nil, 0)
	g := grpc.NewServer(grpc.WaitForHandlers(true))
	pb.RegisterCoordinatorServer(g, s)
	go func() { _ = g.Serve(lis) }()
	defer g.Stop()

	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := pb.NewCoordinatorClient(conn).Report(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&pb.Result{TaskId: "t1"}); err != nil {
		t.Fatal(err)
	}
	ack, err := st.Recv()
	if err != nil || ack.GetTaskId() != "t1" || ack.GetStatus() != pb.ReportAck_STATUS_RECORDED {
		t.Fatalf("ack = %v, %v", ack, err)
	}

	stopped := make(chan struct{})
	go func() {
		s.Drain()
		g.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(3 * time.Second):
		t.Fatal("graceful stop still waits for the open report stream after Drain")
	}
	if _, err := st.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("stream after Drain: got %v, want io.EOF", err)
	}
	if rec.n != 1 {
		t.Fatalf("recorded %d results, want 1", rec.n)
	}
}

// recorderOf counts the results it records.
type recorderOf struct{ ids []string }

func (r *recorderOf) Record(res *pb.Result, done func(pb.ReportAck_Status, error)) {
	r.ids = append(r.ids, res.GetTaskId())
	done(pb.ReportAck_STATUS_RECORDED, nil)
}

type skillsOf map[string]string

func (s skillsOf) Skill(h string) (string, error) {
	if t, ok := s[h]; ok {
		return t, nil
	}
	return "", ErrSkillNotFound
}

// One server serves several runs: each result goes to the run its task id
// names (the longest run id that prefixes it), skills come from any run,
// and a withdrawn run's results are answered UNKNOWN, never recorded.
func TestServerRoutesResultsToTheirRuns(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New("proc", nil, nil, nil, 0)
	a, ab, b := &recorderOf{}, &recorderOf{}, &recorderOf{}
	withdrawA := s.Serve("run-a", a, skillsOf{"h1": "skill one"})
	s.Serve("run-a/x", ab, nil)
	s.Serve("run-b", b, skillsOf{"h2": "skill two"})
	g := grpc.NewServer(grpc.WaitForHandlers(true))
	pb.RegisterCoordinatorServer(g, s)
	go func() { _ = g.Serve(lis) }()
	defer g.Stop()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := pb.NewCoordinatorClient(conn)
	st, err := c.Report(ctx)
	if err != nil {
		t.Fatal(err)
	}
	report := func(id string) pb.ReportAck_Status {
		t.Helper()
		if err := st.Send(&pb.Result{TaskId: id}); err != nil {
			t.Fatal(err)
		}
		ack, err := st.Recv()
		if err != nil || ack.GetTaskId() != id {
			t.Fatalf("ack of %s = %v, %v", id, ack, err)
		}
		return ack.GetStatus()
	}
	for _, id := range []string{"run-a/rollout/1", "run-b/rollout/1", "run-a/x/rollout/2", "run-c/rollout/1"} {
		want := pb.ReportAck_STATUS_RECORDED
		if strings.HasPrefix(id, "run-c/") {
			want = pb.ReportAck_STATUS_UNKNOWN
		}
		if got := report(id); got != want {
			t.Errorf("%s: %v, want %v", id, got, want)
		}
	}
	if len(a.ids) != 1 || a.ids[0] != "run-a/rollout/1" || len(b.ids) != 1 || b.ids[0] != "run-b/rollout/1" || len(ab.ids) != 1 || ab.ids[0] != "run-a/x/rollout/2" {
		t.Fatalf("routed: run-a %v, run-a/x %v, run-b %v", a.ids, ab.ids, b.ids)
	}
	for h, want := range map[string]string{"h1": "skill one", "h2": "skill two"} {
		r, err := c.GetSkill(ctx, &pb.GetSkillRequest{Hash: h})
		if err != nil || r.GetText() != want {
			t.Errorf("GetSkill(%s) = %v, %v", h, r, err)
		}
	}
	if _, err := c.GetSkill(ctx, &pb.GetSkillRequest{Hash: "h3"}); status.Code(err) != codes.NotFound {
		t.Errorf("GetSkill of an unknown hash: %v, want NotFound", err)
	}
	withdrawA()
	if got := report("run-a/rollout/3"); got != pb.ReportAck_STATUS_UNKNOWN {
		t.Errorf("a withdrawn run's result: %v, want UNKNOWN", got)
	}
	if len(a.ids) != 1 || s.Runs() != 2 {
		t.Fatalf("after withdrawing run-a: it recorded %v, %d runs served", a.ids, s.Runs())
	}
}

// TestReportEndsWhenItsStreamDoes: a Report handler whose stream is cut
// (the server stops with the stream open) returns, whichever of its
// goroutines sees the end first; the server's stop, which waits for its
// handlers, returns. Repeated, since the two goroutines race.
func TestReportEndsWhenItsStreamDoes(t *testing.T) {
	for i := range 20 {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s := New("proc", nil, nil, nil, 0)
		s.Serve("run", &recorderOf{}, nil)
		g := grpc.NewServer(grpc.WaitForHandlers(true))
		pb.RegisterCoordinatorServer(g, s)
		go func() { _ = g.Serve(lis) }()
		conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		st, err := pb.NewCoordinatorClient(conn).Report(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Send(&pb.Result{TaskId: "run/t"}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Recv(); err != nil {
			t.Fatal(err)
		}
		stopped := make(chan struct{})
		go func() { g.Stop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: the server's stop still waits for a Report handler whose stream was cut", i)
		}
		_ = conn.Close()
	}
}

// spendOf records results and spend reports apart.
type spendOf struct {
	recorderOf
	spent []string
}

func (r *spendOf) RecordSpend(res *pb.Result) { r.spent = append(r.spent, res.GetTaskId()) }

// TestSpendReportsAreAccountedNotRecorded: registration says the server
// takes spend reports; a spend-only report reaches its run's RecordSpend,
// never Record, and a run whose recorder accounts no spend answers it
// UNKNOWN.
func TestSpendReportsAreAccountedNotRecorded(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New("proc", nil, nil, nil, 0)
	a, b := &spendOf{}, &recorderOf{}
	s.Serve("run-a", a, nil)
	s.Serve("run-b", b, nil)
	g := grpc.NewServer(grpc.WaitForHandlers(true))
	pb.RegisterCoordinatorServer(g, s)
	go func() { _ = g.Serve(lis) }()
	defer g.Stop()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := pb.NewCoordinatorClient(conn)
	reg, err := c.Register(ctx, &pb.RegisterRequest{WorkerId: "w"})
	if err != nil || !reg.GetTakesSpendReports() {
		t.Fatalf("Register = %v, %v; want takes_spend_reports", reg, err)
	}
	st, err := c.Report(ctx)
	if err != nil {
		t.Fatal(err)
	}
	report := func(res *pb.Result) pb.ReportAck_Status {
		t.Helper()
		if err := st.Send(res); err != nil {
			t.Fatal(err)
		}
		ack, err := st.Recv()
		if err != nil || ack.GetTaskId() != res.GetTaskId() {
			t.Fatalf("ack of %s = %v, %v", res.GetTaskId(), ack, err)
		}
		return ack.GetStatus()
	}
	if got := report(&pb.Result{TaskId: "run-a/reflect/1", SpendOnly: true, Outcome: pb.Outcome_OUTCOME_INVALID_REPLY}); got != pb.ReportAck_STATUS_RECORDED {
		t.Errorf("spend report to run-a: %v, want RECORDED", got)
	}
	if got := report(&pb.Result{TaskId: "run-a/reflect/1"}); got != pb.ReportAck_STATUS_RECORDED {
		t.Errorf("result to run-a: %v, want RECORDED", got)
	}
	if got := report(&pb.Result{TaskId: "run-b/reflect/1", SpendOnly: true}); got != pb.ReportAck_STATUS_UNKNOWN {
		t.Errorf("spend report to a run that accounts none: %v, want UNKNOWN", got)
	}
	if len(a.spent) != 1 || len(a.ids) != 1 || len(b.ids) != 0 {
		t.Fatalf("run-a accounted %v and recorded %v; run-b recorded %v", a.spent, a.ids, b.ids)
	}
}

// keepAll keeps the results it records.
type keepAll struct{ got []*pb.Result }

func (k *keepAll) Record(res *pb.Result, done func(pb.ReportAck_Status, error)) {
	k.got = append(k.got, res)
	done(pb.ReportAck_STATUS_RECORDED, nil)
}

// TestRecordingJoinsTheTasksTrace: a result whose report carries a trace
// context is recorded under a span in that trace, named for its run; the
// result the run keeps carries no trace context.
func TestRecordingJoinsTheTasksTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	s := New("proc", nil, nil, nil, 0)
	s.SetTracerProvider(tp)
	k := &keepAll{}
	s.Serve("cell-a", k, nil)
	parent, span := tp.Tracer("test").Start(context.Background(), "skillfleet.report")
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(parent, carrier)
	span.End()
	var st pb.ReportAck_Status
	s.record(&pb.Result{TaskId: "cell-a/rollout/1", TraceContext: carrier}, func(a pb.ReportAck_Status, _ error) { st = a })
	s.record(&pb.Result{TaskId: "cell-a/rollout/2"}, func(pb.ReportAck_Status, error) {})
	if st != pb.ReportAck_STATUS_RECORDED || len(k.got) != 2 || len(k.got[0].GetTraceContext()) != 0 {
		t.Fatalf("status %v, kept %v", st, k.got)
	}
	var rec []sdktrace.ReadOnlySpan
	for _, sp := range exp.GetSpans().Snapshots() {
		if sp.Name() == "skillfleet.record" {
			rec = append(rec, sp)
		}
	}
	if len(rec) != 1 {
		t.Fatalf("%d record spans, want 1 (a result without trace context gets none)", len(rec))
	}
	r := rec[0]
	if r.Parent().SpanID() != span.SpanContext().SpanID() || r.SpanContext().TraceID() != span.SpanContext().TraceID() {
		t.Errorf("record span's parent %v, want the report span %v", r.Parent(), span.SpanContext())
	}
	attrs := map[string]string{}
	for _, kv := range r.Attributes() {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	if attrs["skillfleet.run"] != "cell-a" || attrs["skillfleet.task_id"] != "cell-a/rollout/1" || attrs["skillfleet.ack"] != "recorded" {
		t.Errorf("record span attributes %v", attrs)
	}
}

// TestRegistryForgetsSilentWorkers: a worker that stops heartbeating is
// dropped from the registry after forgetAfter intervals (a fleet whose
// workers restart under new ids does not grow it forever), one that keeps
// beating stays, and a forgotten worker is told to register again.
func TestRegistryForgetsSilentWorkers(t *testing.T) {
	clock := time.Unix(1_700_000_000, 0)
	s := New("c", nil, nil, nil, time.Second)
	s.now = func() time.Time { return clock }
	ctx := t.Context()
	for _, id := range []string{"gone", "alive"} {
		if _, err := s.Register(ctx, &pb.RegisterRequest{WorkerId: id, Concurrency: 4}); err != nil {
			t.Fatal(err)
		}
	}
	for range forgetAfter + 2 {
		clock = clock.Add(time.Second)
		resp, err := s.Heartbeat(ctx, &pb.HeartbeatRequest{WorkerId: "alive"})
		if err != nil || !resp.GetKnown() {
			t.Fatalf("heartbeat of a live worker: known=%v err=%v", resp.GetKnown(), err)
		}
	}
	ws := s.Workers(0)
	if len(ws) != 1 || ws[0].ID != "alive" {
		t.Fatalf("registry after %d silent intervals = %+v, want only the worker that kept beating", forgetAfter+2, ws)
	}
	resp, err := s.Heartbeat(ctx, &pb.HeartbeatRequest{WorkerId: "gone"})
	if err != nil || resp.GetKnown() {
		t.Fatalf("heartbeat of a forgotten worker: known=%v err=%v, want known=false (register again)", resp.GetKnown(), err)
	}
}
