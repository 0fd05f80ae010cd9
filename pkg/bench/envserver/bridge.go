package envserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/envserver/v1"
)

// Bridge serves the environment-server protocol by forwarding each call,
// as one JSON line, to a child process (scripts/alfworld_bridge.py) and
// reading its one-line answer. Calls are serialised: the child handles one
// at a time.
type Bridge struct {
	pb.UnimplementedEnvServerServer

	mu     sync.Mutex
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *lockedWriter
	// cleanup, for a sandboxed child, removes what the sandbox set up.
	cleanup func()
}

// StartBridge starts the child process argv without isolation; see
// StartSandboxedBridge for the isolated child.
func StartBridge(ctx context.Context, argv []string, env []string) (*Bridge, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("bridge: no command")
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	b := &Bridge{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20), stderr: &lockedWriter{}}
	cmd.Stderr = b.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bridge %s: %w", strings.Join(argv, " "), err)
	}
	return b, nil
}

// lockedWriter keeps the tail of the child's stderr (the exec package
// writes it from its own goroutine) for error messages.
type lockedWriter struct {
	mu  sync.Mutex
	buf []byte
}

// stderrTail is how much of the child's stderr an error message quotes.
const stderrTail = 4 << 10

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if len(w.buf) > stderrTail {
		w.buf = append(w.buf[:0], w.buf[len(w.buf)-stderrTail:]...)
	}
	return len(p), nil
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.TrimSpace(string(w.buf))
}

// Stop ends the child process (closing its stdin) and waits for it.
func (b *Bridge) Stop() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	_ = b.in.Close()
	err := b.cmd.Wait()
	if b.cleanup != nil {
		b.cleanup()
	}
	return err
}

// call sends one request and decodes the answer into dst.
func (b *Bridge) call(req map[string]any, dst any) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	line, _ := json.Marshal(req)
	if _, err := b.in.Write(append(line, '\n')); err != nil {
		return status.Errorf(codes.Unavailable, "bridge: write: %v; its stderr: %s", err, b.stderr.String())
	}
	resp, err := b.out.ReadBytes('\n')
	if err != nil {
		return status.Errorf(codes.Unavailable, "bridge: the child process stopped answering (%v); its stderr: %s", err, b.stderr.String())
	}
	var e struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}
	if json.Unmarshal(resp, &e) == nil && e.Error != "" {
		c := map[string]codes.Code{"not_found": codes.NotFound, "failed_precondition": codes.FailedPrecondition, "invalid": codes.InvalidArgument}[e.Code]
		if c == codes.OK {
			c = codes.Internal
		}
		return status.Error(c, e.Error)
	}
	if err := json.Unmarshal(resp, dst); err != nil {
		return status.Errorf(codes.Internal, "bridge: unreadable answer %q: %v", strings.TrimSpace(string(resp)), err)
	}
	return nil
}

// Info forwards info.
func (b *Bridge) Info(context.Context, *pb.InfoRequest) (*pb.InfoResponse, error) {
	var r struct {
		Name  string `json:"name"`
		Games []struct {
			ID       string `json:"id"`
			TaskType string `json:"task_type"`
		} `json:"games"`
	}
	if err := b.call(map[string]any{"op": "info"}, &r); err != nil {
		return nil, err
	}
	out := &pb.InfoResponse{Name: r.Name}
	for _, g := range r.Games {
		out.Games = append(out.Games, &pb.Game{Id: g.ID, TaskType: g.TaskType})
	}
	return out, nil
}

// Reset forwards reset.
func (b *Bridge) Reset(_ context.Context, req *pb.ResetRequest) (*pb.ResetResponse, error) {
	var r struct {
		Session     string   `json:"session"`
		Observation string   `json:"observation"`
		Task        string   `json:"task"`
		Actions     []string `json:"admissible_actions"`
	}
	if err := b.call(map[string]any{"op": "reset", "game": req.GetGame(), "seed": req.GetSeed()}, &r); err != nil {
		return nil, err
	}
	return &pb.ResetResponse{Session: r.Session, Observation: r.Observation, Task: r.Task, AdmissibleActions: r.Actions}, nil
}

// Step forwards step.
func (b *Bridge) Step(_ context.Context, req *pb.StepRequest) (*pb.StepResponse, error) {
	var r struct {
		Observation string   `json:"observation"`
		Reward      float64  `json:"reward"`
		Done        bool     `json:"done"`
		Won         bool     `json:"won"`
		Actions     []string `json:"admissible_actions"`
	}
	if err := b.call(map[string]any{"op": "step", "session": req.GetSession(), "action": req.GetAction()}, &r); err != nil {
		return nil, err
	}
	return &pb.StepResponse{Observation: r.Observation, Reward: r.Reward, Done: r.Done, Won: r.Won, AdmissibleActions: r.Actions}, nil
}

// Close forwards close.
func (b *Bridge) Close(_ context.Context, req *pb.CloseRequest) (*pb.CloseResponse, error) {
	var r struct{}
	if err := b.call(map[string]any{"op": "close", "session": req.GetSession()}, &r); err != nil {
		return nil, err
	}
	return &pb.CloseResponse{}, nil
}

var _ pb.EnvServerServer = (*Bridge)(nil)
