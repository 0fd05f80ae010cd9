// Package rpcserver is the coordinator's gRPC face: workers register,
// heartbeat, fetch skill texts by hash and stream results back. It is the
// only package that knows gRPC status codes.
package rpcserver

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// ErrSkillNotFound is returned by a SkillSource for an unknown hash.
var ErrSkillNotFound = errors.New("skill not found")

// Recorder records results; done gets the status to acknowledge with.
type Recorder interface {
	Record(res *pb.Result, done func(pb.ReportAck_Status, error))
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

// Server implements pb.CoordinatorServer.
type Server struct {
	pb.UnimplementedCoordinatorServer
	rec    Recorder
	skills SkillSource
	log    *slog.Logger
	id     string
	beat   time.Duration

	mu      sync.Mutex
	workers map[string]*WorkerInfo

	// draining closes when the server stops taking results (see Drain).
	draining  chan struct{}
	drainOnce sync.Once
}

// New returns a Server. heartbeat is the interval workers are asked to use.
func New(id string, rec Recorder, skills SkillSource, log *slog.Logger, heartbeat time.Duration) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if heartbeat == 0 {
		heartbeat = 5 * time.Second
	}
	return &Server{rec: rec, skills: skills, log: log, id: id, beat: heartbeat, workers: map[string]*WorkerInfo{}, draining: make(chan struct{})}
}

// Register records a worker.
func (s *Server) Register(ctx context.Context, req *pb.RegisterRequest) (*pb.RegisterResponse, error) {
	if req.GetWorkerId() == "" {
		return nil, status.Error(codes.InvalidArgument, "worker_id is required")
	}
	s.mu.Lock()
	s.workers[req.GetWorkerId()] = &WorkerInfo{
		ID: req.GetWorkerId(), Hostname: req.GetHostname(), Concurrency: int(req.GetConcurrency()), LastSeen: time.Now(),
	}
	n := len(s.workers)
	s.mu.Unlock()
	s.log.InfoContext(ctx, "worker registered", "worker_id", req.GetWorkerId(), "host", req.GetHostname(), "concurrency", req.GetConcurrency(), "workers", n)
	return &pb.RegisterResponse{CoordinatorId: s.id, HeartbeatIntervalMs: s.beat.Milliseconds()}, nil
}

// Heartbeat refreshes a worker's liveness.
func (s *Server) Heartbeat(_ context.Context, req *pb.HeartbeatRequest) (*pb.HeartbeatResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.workers[req.GetWorkerId()]
	if !ok {
		return &pb.HeartbeatResponse{Known: false}, nil
	}
	w.InFlight = int(req.GetInFlight())
	w.Completed = req.GetCompleted()
	w.Limits = req.GetLimits()
	w.LastSeen = time.Now()
	return &pb.HeartbeatResponse{Known: true}, nil
}

// Workers returns the workers seen within maxAge.
func (s *Server) Workers(maxAge time.Duration) []WorkerInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []WorkerInfo
	for _, w := range s.workers {
		if maxAge == 0 || time.Since(w.LastSeen) <= maxAge {
			out = append(out, *w)
		}
	}
	return out
}

// GetSkill returns a skill text by hash.
func (s *Server) GetSkill(_ context.Context, req *pb.GetSkillRequest) (*pb.GetSkillResponse, error) {
	text, err := s.skills.Skill(req.GetHash())
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.GetSkillResponse{Hash: req.GetHash(), Text: text}, nil
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
		s.rec.Record(res, func(st pb.ReportAck_Status, err error) {
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
