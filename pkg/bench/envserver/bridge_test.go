package envserver_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/envserver"
	"github.com/skillfleet/skillfleet/pkg/bench/envserver/textgame"
	"github.com/skillfleet/skillfleet/pkg/bench/registry"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/envserver/v1"
)

// TestALFWorldBridge runs scripts/alfworld_bridge.py against a stand-in
// of the textworld/alfworld API, serves it over the gRPC protocol, and
// plays an ALFWorld item through the alfworld benchmark.
func python(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 not found (the bridge tests need it under CI)")
		}
		t.Skip("python3 not found: the ALFWorld bridge is a Python script")
	}
	return p
}

// TestBridgeScript runs the bridge's own Python tests (stdio protocol
// against the stand-in modules).
func TestBridgeScript(t *testing.T) {
	py := python(t)
	cmd := exec.Command(py, "../../../scripts/alfworld_bridge_test.py")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/alfworld_bridge_test.py: %v\n%s", err, out)
	}
}

// TestALFWorldBridge runs scripts/alfworld_bridge.py against a stand-in
// of the textworld/alfworld API, serves it over the gRPC protocol, and
// plays an ALFWorld item through the alfworld benchmark.
func TestALFWorldBridge(t *testing.T) {
	py := python(t)
	fake, _ := filepath.Abs("testdata/fakealfworld")
	data, _ := filepath.Abs("testdata/alfdata")
	script, _ := filepath.Abs("../../../scripts/alfworld_bridge.py")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	br, err := envserver.StartBridge(ctx, []string{py, script},
		[]string{"PYTHONPATH=" + fake, "ALFWORLD_DATA=" + data, "PATH=/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE=1"})
	if err != nil {
		t.Fatal(err)
	}
	defer br.Stop()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- textgame.Serve(sctx, ln, br) }()
	defer func() { stop(); <-done }()

	cfg, _ := json.Marshal(map[string]any{"env_server": ln.Addr().String(), "max_steps": 10})
	env, err := registry.New("alfworld", cfg)
	if err != nil {
		t.Fatal(err)
	}
	closeAtEnd(t, env)
	raw, _ := json.Marshal(map[string]string{"id": "valid_seen:0000", "gamefile": "valid_seen/pick_and_place_simple-Mug-None-Cabinet-1/trial_1/game.tw-pddl"})
	it := bench.Item{ID: "valid_seen:0000", Raw: raw}
	m := acts("go to countertop 1", "dance", "take mug 1 from countertop 1", "go to cabinet 1", "put mug 1 in/on cabinet 1")
	ep, err := env.Episode(ctx, m, bench.EpisodeRequest{Item: it, Skill: "s"})
	if err != nil {
		t.Fatal(err)
	}
	// Four winning moves and one wasted one: won on the 5th step.
	if ep.Hard != 1 || ep.Soft != 1 || ep.NTurns != 5 || ep.FailReason != "" || ep.TaskType != "pick_and_place" {
		t.Errorf("hard %v turns %d type %q reason %q", ep.Hard, ep.NTurns, ep.TaskType, ep.FailReason)
	}
	// The task text the bridge split off the intro, and the admissible
	// actions from the infos, reach the prompt.
	u := m.Requests[0].Messages[1].Content
	if !strings.Contains(u, "Task: put some mug on cabinet.") || !strings.Contains(u, "Available actions: go to countertop 1 | look") {
		t.Errorf("first prompt:\n%s", u)
	}
	if !strings.Contains(m.Requests[2].Messages[1].Content, "> dance\nNothing happens.") {
		t.Errorf("history does not show the failed action:\n%s", m.Requests[2].Messages[1].Content)
	}
	// An unknown game file is NOT_FOUND, naming it.
	raw, _ = json.Marshal(map[string]string{"id": "x", "gamefile": "valid_seen/none/game.tw-pddl"})
	if _, err := env.Episode(ctx, acts("look"), bench.EpisodeRequest{Item: bench.Item{ID: "x", Raw: raw}}); status.Code(err) != codes.NotFound ||
		!strings.Contains(err.Error(), "valid_seen/none") {
		t.Errorf("unknown game: %v", err)
	}
	// A dawdler runs out of the client's 10 steps (TextWorld's own limit is far higher).
	ep, err = env.Episode(ctx, acts("look"), bench.EpisodeRequest{Item: it})
	if err != nil {
		t.Fatal(err)
	}
	if ep.Hard != 0 || ep.FailReason != "Timeout after 10 steps" {
		t.Errorf("dawdler: hard %v reason %q", ep.Hard, ep.FailReason)
	}
}

// TestBridgeChildGone: a child that exits answers every call with
// UNAVAILABLE quoting its stderr.
func TestBridgeChildGone(t *testing.T) {
	py := python(t)
	br, err := envserver.StartBridge(context.Background(), []string{py, "-c", "import sys; sys.stderr.write('cannot import textworld\\n'); sys.exit(3)"}, []string{"PATH=/usr/bin:/bin"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = br.Reset(context.Background(), &pb.ResetRequest{Game: "g"})
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "cannot import textworld") {
		t.Errorf("reset on a dead child: %v", err)
	}
	if err := br.Stop(); err == nil {
		t.Error("Stop of a child that exited 3: no error")
	}
}
