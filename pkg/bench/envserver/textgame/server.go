package textgame

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/envserver/v1"
)

// Server serves the games over the environment-server protocol.
type Server struct {
	pb.UnimplementedEnvServerServer
	mu       sync.Mutex
	sessions map[string]*Game
	next     int
}

// NewServer returns a server with no sessions.
func NewServer() *Server { return &Server{sessions: map[string]*Game{}} }

// Info lists the games.
func (s *Server) Info(context.Context, *pb.InfoRequest) (*pb.InfoResponse, error) {
	var ids []string
	for id := range Games {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := &pb.InfoResponse{Name: "skillfleet textgame"}
	for _, id := range ids {
		out.Games = append(out.Games, &pb.Game{Id: id, TaskType: Games[id].TaskType})
	}
	return out, nil
}

// Reset starts a session.
func (s *Server) Reset(_ context.Context, req *pb.ResetRequest) (*pb.ResetResponse, error) {
	spec, ok := Games[req.GetGame()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "unknown game %q", req.GetGame())
	}
	g := New(spec)
	s.mu.Lock()
	s.next++
	id := fmt.Sprintf("s%d", s.next)
	s.sessions[id] = g
	s.mu.Unlock()
	return &pb.ResetResponse{Session: id, Observation: g.Intro(), Task: g.Goal(), AdmissibleActions: g.Admissible()}, nil
}

// Step takes one action.
func (s *Server) Step(_ context.Context, req *pb.StepRequest) (*pb.StepResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.sessions[req.GetSession()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "unknown session %q", req.GetSession())
	}
	if g.Done() {
		return nil, status.Errorf(codes.FailedPrecondition, "session %q: the episode is over", req.GetSession())
	}
	obs := g.Step(req.GetAction())
	return &pb.StepResponse{Observation: obs, Reward: g.Reward(), Done: g.Done(), Won: g.Won(), AdmissibleActions: g.Admissible()}, nil
}

// Close forgets a session.
func (s *Server) Close(_ context.Context, req *pb.CloseRequest) (*pb.CloseResponse, error) {
	s.mu.Lock()
	delete(s.sessions, req.GetSession())
	s.mu.Unlock()
	return &pb.CloseResponse{}, nil
}

// Serve serves srv on lis until ctx ends.
func Serve(ctx context.Context, lis net.Listener, srv pb.EnvServerServer) error {
	g := grpc.NewServer()
	pb.RegisterEnvServerServer(g, srv)
	go func() {
		<-ctx.Done()
		g.GracefulStop()
	}()
	return g.Serve(lis)
}

// NormalizeItem checks one raw textgame item ({id, game, task_type?}) and
// fills task_type from the built-in game when it is absent. A game the
// built-in server does not know is kept (another server may serve it).
func NormalizeItem(item map[string]any) (map[string]any, error) {
	game, ok := item["game"].(string)
	if !ok || strings.TrimSpace(game) == "" {
		return nil, fmt.Errorf("textgame item %q: field game: want a non-empty string (a game id the server lists), got %v", item["id"], item["game"])
	}
	if tt, _ := item["task_type"].(string); strings.TrimSpace(tt) == "" {
		if spec, ok := Games[game]; ok {
			item["task_type"] = spec.TaskType
		}
	}
	return item, nil
}
