// Package rpcserver is the coordinator's gRPC face: workers register,
// heartbeat, fetch skill texts by hash and stream results back. One
// server serves every run of a coordinator process: a result goes to the
// run its task id names (task ids start with "<run id>/"). It is the only
// package that knows gRPC status codes.
package rpcserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/skillfleet/skillfleet/pkg/telemetry"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// ErrSkillNotFound is returned by a SkillSource for an unknown hash.
var ErrSkillNotFound = errors.New("skill not found")

// Recorder records results; done gets the status to acknowledge with.
type Recorder interface {
	Record(res *pb.Result, done func(pb.ReportAck_Status, error))
}

// SpendRecorder is a [Recorder] that also accounts spend-only reports:
// what a task attempt the worker put back on the queue spent.
type SpendRecorder interface {
	RecordSpend(res *pb.Result)
}

// SkillSource returns a skill text by content hash.
type SkillSource interface {
	Skill(hash string) (string, error)
}

// WorkerInfo is what the coordinator knows of one worker.
type WorkerInfo struct {
	ID          string
	Hostname    string
	Concurrency int
	InFlight    int
	Completed   int64
	LastSeen    time.Time
	// Limits are the worker's rate limiters as of its last heartbeat.
	Limits []*pb.LimitStatus
}

// Server implements pb.CoordinatorServer for the runs it serves (see
// [Server.Serve]).
type Server struct {
	pb.UnimplementedCoordinatorServer
	log  *slog.Logger
	id   string
	beat time.Duration

	// now is the clock the worker registry reads (tests set it).
	now func() time.Time

	mu      sync.Mutex
	workers map[string]*WorkerInfo
	// pruned is when the registry was last pruned (see prune).
	pruned time.Time
	// runs are the runs served, by run id ("" takes every task id no
	// other run claims).
	runs map[string]*run

	// tp traces the recording of results that carry a trace context (nil:
	// not traced).
	tp trace.TracerProvider

	// draining closes when the server stops taking results (see Drain).
	draining  chan struct{}
	drainOnce sync.Once
}

// run is one run a Server serves.
type run struct {
	id     string
	rec    Recorder
	skills SkillSource
	// recording counts results handed to rec and not yet acknowledged.
	recording sync.WaitGroup
}

// New returns a Server named id. When rec is set the server serves it as
// the run "", which takes every result no other run claims. heartbeat is
// the interval workers are asked to use.
func New(id string, rec Recorder, skills SkillSource, log *slog.Logger, heartbeat time.Duration) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if heartbeat == 0 {
		heartbeat = 5 * time.Second
	}
	s := &Server{log: log, id: id, beat: heartbeat, now: time.Now, workers: map[string]*WorkerInfo{}, runs: map[string]*run{}, draining: make(chan struct{})}
	if rec != nil {
		s.Serve("", rec, skills)
	}
	return s
}

// withdrawWait bounds how long Serve's withdraw waits for the run's
// results being recorded.
const withdrawWait = 5 * time.Second

// Serve routes the results of runID's tasks to rec and serves its skill
// texts from skills, until withdraw is called. withdraw returns once the
// results handed to rec were acknowledged (or after withdrawWait); a
// result of the run that arrives later is answered UNKNOWN, never
// recorded, and its worker returns the task to the queue.
func (s *Server) Serve(runID string, rec Recorder, skills SkillSource) (withdraw func()) {
	r := &run{id: runID, rec: rec, skills: skills}
	s.mu.Lock()
	s.runs[runID] = r
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		if s.runs[runID] == r {
			delete(s.runs, runID)
		}
		s.mu.Unlock()
		done := make(chan struct{})
		go func() { r.recording.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(withdrawWait):
			s.log.Warn("run withdrawn with results still being recorded", "run_id", runID)
		}
	}
}

// SetTracerProvider makes the server trace the recording of each result
// whose report carries a trace context: a span in the trace of the task
// the result answers, named for its run, whichever run of the process's
// shared endpoint that is.
func (s *Server) SetTracerProvider(tp trace.TracerProvider) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tp = tp
}

// Runs is the number of runs served.
func (s *Server) Runs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.runs)
}

// routeLocked returns the run a task id belongs to: the longest run id
// it starts with (followed by "/"), else the run "".
func (s *Server) routeLocked(taskID string) *run {
	for prefix := taskID; ; {
		i := strings.LastIndexByte(prefix, '/')
		if i < 0 {
			return s.runs[""]
		}
		prefix = prefix[:i]
		if r, ok := s.runs[prefix]; ok && prefix != "" {
			return r
		}
	}
}

// record hands res to its run's recorder, or answers at once when no run
// here takes it.
func (s *Server) record(res *pb.Result, done func(pb.ReportAck_Status, error)) {
	s.mu.Lock()
	r := s.routeLocked(res.GetTaskId())
	if r != nil {
		r.recording.Add(1)
	}
	tp := s.tp
	s.mu.Unlock()
	if tp != nil && len(res.GetTraceContext()) > 0 {
		done = traceRecord(tp, r, res, done)
	}
	// The context belongs to this report, not to the result the run keeps.
	res.TraceContext = nil
	if r == nil {
		// No run here claims the task: another process's, or one that
		// ended. The worker finds the run's coordinator again.
		done(pb.ReportAck_STATUS_UNKNOWN, nil)
		return
	}
	if res.GetSpendOnly() {
		// An attempt's spend, not the task's result: accounted, never
		// recorded.
		sr, ok := r.rec.(SpendRecorder)
		if ok {
			sr.RecordSpend(res)
		}
		r.recording.Done()
		if !ok {
			done(pb.ReportAck_STATUS_UNKNOWN, nil)
			return
		}
		done(pb.ReportAck_STATUS_RECORDED, nil)
		return
	}
	r.rec.Record(res, func(st pb.ReportAck_Status, err error) {
		done(st, err)
		r.recording.Done()
	})
}

// traceRecord starts the span of a result's recording, a child of the
// worker's report span, and returns done wrapped to end it with the
// status sent back.
func traceRecord(tp trace.TracerProvider, r *run, res *pb.Result, done func(pb.ReportAck_Status, error)) func(pb.ReportAck_Status, error) {
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier(res.GetTraceContext()))
	attrs := []attribute.KeyValue{telemetry.KeyTaskID.String(res.GetTaskId()), telemetry.KeyOutcome.String(outcomeName(res.GetOutcome())),
		attribute.Bool("skillfleet.spend_only", res.GetSpendOnly())}
	if r != nil {
		attrs = append(attrs, telemetry.KeyRun.String(r.id))
	}
	_, span := tp.Tracer(telemetry.ScopeName).Start(ctx, telemetry.SpanRecord, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	return func(st pb.ReportAck_Status, err error) {
		span.SetAttributes(attribute.String("skillfleet.ack", strings.ToLower(strings.TrimPrefix(st.String(), "STATUS_"))))
		span.End()
		done(st, err)
	}
}

// outcomeName is a task outcome as a span attribute value.
func outcomeName(o pb.Outcome) string {
	return strings.ToLower(strings.TrimPrefix(o.String(), "OUTCOME_"))
}

// Register records a worker.
func (s *Server) Register(ctx context.Context, req *pb.RegisterRequest) (*pb.RegisterResponse, error) {
	if req.GetWorkerId() == "" {
		return nil, status.Error(codes.InvalidArgument, "worker_id is required")
	}
	s.mu.Lock()
	now := s.now()
	s.prune(now)
	s.workers[req.GetWorkerId()] = &WorkerInfo{
		ID: req.GetWorkerId(), Hostname: req.GetHostname(), Concurrency: int(req.GetConcurrency()), LastSeen: now,
	}
	n := len(s.workers)
	s.mu.Unlock()
	s.log.InfoContext(ctx, "worker registered", "worker_id", req.GetWorkerId(), "host", req.GetHostname(), "concurrency", req.GetConcurrency(), "workers", n)
	return &pb.RegisterResponse{CoordinatorId: s.id, HeartbeatIntervalMs: s.beat.Milliseconds(), TakesSpendReports: true}, nil
}

// Heartbeat refreshes a worker's liveness.
func (s *Server) Heartbeat(_ context.Context, req *pb.HeartbeatRequest) (*pb.HeartbeatResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.prune(now)
	w, ok := s.workers[req.GetWorkerId()]
	if !ok {
		// A worker forgotten after a long silence registers again.
		return &pb.HeartbeatResponse{Known: false}, nil
	}
	w.InFlight = int(req.GetInFlight())
	w.Completed = req.GetCompleted()
	w.Limits = req.GetLimits()
	w.LastSeen = now
	return &pb.HeartbeatResponse{Known: true}, nil
}

// forgetAfter is how many heartbeat intervals a worker may stay silent
// before the registry forgets it: long enough to ride out a NATS or
// network hiccup, short enough that a fleet whose workers come and go
// (autoscaled, restarted under new ids) does not grow the registry
// without bound.
const forgetAfter = 12

// prune forgets the workers silent for forgetAfter heartbeats, at most
// once a heartbeat interval; s.mu is held.
func (s *Server) prune(now time.Time) {
	if now.Sub(s.pruned) < s.beat {
		return
	}
	s.pruned = now
	for id, w := range s.workers {
		if now.Sub(w.LastSeen) > forgetAfter*s.beat {
			delete(s.workers, id)
			s.log.Info("worker forgotten: no heartbeat", "worker_id", id, "last_seen", w.LastSeen.UTC().Format(time.RFC3339))
		}
	}
}

// Workers returns the workers seen within maxAge (0: every worker the
// registry still holds).
func (s *Server) Workers(maxAge time.Duration) []WorkerInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.prune(now)
	out := make([]WorkerInfo, 0, len(s.workers))
	for _, w := range s.workers {
		if maxAge == 0 || now.Sub(w.LastSeen) <= maxAge {
			out = append(out, *w)
		}
	}
	return out
}

// GetSkill returns a skill text by hash from any run served (a hash names
// one text, whichever run holds it).
func (s *Server) GetSkill(ctx context.Context, req *pb.GetSkillRequest) (*pb.GetSkillResponse, error) {
	s.mu.Lock()
	sources := make([]*run, 0, len(s.runs))
	for _, r := range s.runs {
		if r.skills != nil {
			sources = append(sources, r)
		}
	}
	s.mu.Unlock()
	err := error(fmt.Errorf("%w: %s", ErrSkillNotFound, req.GetHash()))
	for _, r := range sources {
		text, serr := r.skills.Skill(req.GetHash())
		if serr == nil {
			// The call's span (when traced) names the run that served it.
			if r.id != "" {
				trace.SpanFromContext(ctx).SetAttributes(telemetry.KeyRun.String(r.id))
			}
			return &pb.GetSkillResponse{Hash: req.GetHash(), Text: text}, nil
		}
		if !errors.Is(serr, ErrSkillNotFound) {
			err = serr
		}
	}
	return nil, toStatus(err)
}

// Report receives results and sends one ack per result. Acks are sent as
// results become durable, not in arrival order.
func (s *Server) Report(stream pb.Coordinator_ReportServer) error {
	ctx := stream.Context()
	acks := make(chan *pb.ReportAck, 256)
	sendErr := make(chan error, 1)
	var wg sync.WaitGroup
	go func() {
		for a := range acks {
			if err := stream.Send(a); err != nil {
				sendErr <- err
				for range acks { //nolint:revive // drain so recorders never block
				}
				return
			}
		}
		sendErr <- nil
	}()
	// Recv runs on its own goroutine so that Drain can end the stream
	// while a worker keeps it open between results.
	type recvd struct {
		res *pb.Result
		err error
	}
	in := make(chan recvd)
	go func() {
		for {
			res, err := stream.Recv()
			select {
			case in <- recvd{res, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	var recvErr error
loop:
	for {
		var r recvd
		select {
		case r = <-in:
		case <-s.draining:
			break loop
		case <-ctx.Done():
			// The stream is gone (the server stopped, the worker went
			// away); the receiver may have left without a word.
			break loop
		}
		if r.err != nil {
			if !errors.Is(r.err, io.EOF) && status.Code(r.err) != codes.Canceled {
				recvErr = r.err
			}
			break
		}
		res := r.res
		wg.Add(1)
		id := res.GetTaskId()
		s.record(res, func(st pb.ReportAck_Status, err error) {
			a := &pb.ReportAck{TaskId: id, Status: st}
			if err != nil {
				a.Error = err.Error()
			}
			acks <- a
			wg.Done()
		})
	}
	wg.Wait()
	close(acks)
	if err := <-sendErr; err != nil && ctx.Err() == nil {
		return toStatus(err)
	}
	if recvErr != nil && ctx.Err() == nil {
		s.log.Warn("report stream ended", "err", recvErr)
	}
	return nil
}

// Drain ends every open Report stream once the results it is recording
// are acknowledged, and makes new streams end at once, so that a graceful
// stop does not wait for workers that keep their streams open between
// results. A worker whose stream ends reports again on a new one: a result
// that arrives after Drain is never acknowledged here and stays on the
// queue.
func (s *Server) Drain() { s.drainOnce.Do(func() { close(s.draining) }) }

// toStatus maps domain errors to gRPC status errors: the one table.
func toStatus(err error) error {
	switch {
	case errors.Is(err, ErrSkillNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	default:
		if _, ok := status.FromError(err); ok {
			return err
		}
		return status.Error(codes.Internal, err.Error())
	}
}
