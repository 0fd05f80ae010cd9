package envserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/benchtest"
	"github.com/skillfleet/skillfleet/pkg/bench/envserver"
	"github.com/skillfleet/skillfleet/pkg/bench/envserver/textgame"
	"github.com/skillfleet/skillfleet/pkg/bench/registry"
	"github.com/skillfleet/skillfleet/pkg/llm"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/envserver/v1"
)

// serve runs the reference text game on a loopback port.
func serve(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- textgame.Serve(ctx, ln, textgame.NewServer()) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

func env(t *testing.T, addr string, maxSteps int) bench.Env {
	t.Helper()
	cfg, _ := json.Marshal(map[string]any{"env_server": addr, "max_steps": maxSteps})
	e, err := registry.New("textgame", cfg)
	if err != nil {
		t.Fatal(err)
	}
	closeAtEnd(t, e)
	return e
}

// closeAtEnd closes e's connection when the test ends: the gRPC client's
// goroutines must not outlive it.
func closeAtEnd(t *testing.T, e bench.Env) {
	t.Helper()
	c, ok := e.(io.Closer)
	if !ok {
		t.Fatalf("%s environment has no Close", e.Name())
	}
	t.Cleanup(func() { _ = c.Close() })
}

func item(id, game string) bench.Item {
	raw, _ := json.Marshal(map[string]string{"id": id, "game": game})
	return bench.Item{ID: id, Raw: raw}
}

func acts(as ...string) *benchtest.Scripted {
	var replies []string
	for _, a := range as {
		replies = append(replies, "I should do this next.\n<action>"+a+"</action>")
	}
	return benchtest.Text(replies...)
}

func TestWinsOverGRPC(t *testing.T) {
	addr := serve(t)
	m := acts("go to countertop 1", "take mug 1 from countertop 1", "go to cabinet 1", "open cabinet 1", "put mug 1 in/on cabinet 1")
	ep, err := env(t, addr, 50).Episode(context.Background(), m, bench.EpisodeRequest{Item: item("g1", "pick_mug_cabinet"), Skill: "ALWAYS open closed receptacles first."})
	if err != nil {
		t.Fatal(err)
	}
	if ep.Hard != 1 || ep.Soft != 1 || ep.NTurns != 5 || m.Calls() != 5 || ep.TaskType != "" && ep.TaskType != "pick_and_place" {
		t.Errorf("hard %v turns %d calls %d type %q reason %q", ep.Hard, ep.NTurns, m.Calls(), ep.TaskType, ep.FailReason)
	}
	// The skill sits in the user prompt before the observation; the
	// admissible actions are listed.
	u := m.Requests[1].Messages[1].Content
	if !strings.Contains(u, "ALWAYS open closed receptacles first.") || strings.Index(u, "ALWAYS") > strings.Index(u, "Observation:") ||
		!strings.Contains(u, "take mug 1 from countertop 1") || !strings.Contains(u, "Task: put a mug in cabinet 1.") {
		t.Errorf("step prompt:\n%s", u)
	}
}

func TestTimeoutAndEnd(t *testing.T) {
	addr := serve(t)
	// Dawdling: look, look, look… until the step limit.
	ep, err := env(t, addr, 4).Episode(context.Background(), acts("look"), bench.EpisodeRequest{Item: item("g2", "heat_egg_table")})
	if err != nil {
		t.Fatal(err)
	}
	if ep.Hard != 0 || ep.FailReason != "Timeout after 4 steps" || ep.NTurns != 4 {
		t.Errorf("dawdler: hard %v reason %q turns %d", ep.Hard, ep.FailReason, ep.NTurns)
	}
	// Unreadable replies become "look"; the fail reason stays the spec's
	// exact text and the count goes to the evaluation message.
	m := benchtest.Text("   ")
	ep, err = env(t, addr, 2).Episode(context.Background(), m, bench.EpisodeRequest{Item: item("g3", "heat_egg_table")})
	if err != nil {
		t.Fatal(err)
	}
	last := ep.Messages[len(ep.Messages)-1]
	if ep.FailReason != "Timeout after 2 steps" || ep.Answer != "look" || last.Role != llm.RoleSystem ||
		!strings.Contains(last.Content, "2 of 2 replies had no readable action") || !strings.Contains(last.Content, "put a hot egg on table 1.") {
		t.Errorf("unreadable: reason %q answer %q last %+v", ep.FailReason, ep.Answer, last)
	}
	// The second prompt shows the look the empty reply became.
	if !strings.Contains(m.Requests[1].Messages[1].Content, "Recent steps:\n> look\n") {
		t.Errorf("second prompt:\n%s", m.Requests[1].Messages[1].Content)
	}
}

// flaky answers its first n calls with reply and then fails, like a
// backend whose retries ran out.
type flaky struct {
	n, calls int
	reply    string
}

func (f *flaky) Chat(_ context.Context, req *llm.Request) (*llm.Response, error) {
	f.calls++
	if f.calls > f.n {
		return nil, &llm.Error{Kind: llm.KindServer, Status: 503, Err: errors.New("upstream 503")}
	}
	return &llm.Response{Content: f.reply, Usage: llm.Usage{InputTokens: 100, OutputTokens: 7}, Attempts: 1}, nil
}

// TestModelErrorIsInfrastructure: a failed target call is an error (not a
// "look"), with the partial episode's accounting.
func TestModelErrorIsInfrastructure(t *testing.T) {
	addr := serve(t)
	ep, err := env(t, addr, 10).Episode(context.Background(), &flaky{n: 2, reply: "<action>look</action>"}, bench.EpisodeRequest{Item: item("g9", "pick_mug_cabinet")})
	if err == nil || !strings.Contains(err.Error(), "g9") || !strings.Contains(err.Error(), "upstream 503") {
		t.Fatalf("error %v", err)
	}
	if llm.KindOf(err) != llm.KindServer {
		t.Errorf("the model error's kind is lost: %v", llm.KindOf(err))
	}
	// Two answered calls (100 in, 7 out each) and the failed third.
	if ep == nil || ep.Calls != 3 || ep.FailedCalls != 1 || ep.Usage.InputTokens != 200 || ep.Usage.OutputTokens != 14 {
		t.Errorf("partial episode %+v", ep)
	}
}

// quitter is a server whose games end, unwon, after two steps; it records
// the sessions closed.
type quitter struct {
	pb.UnimplementedEnvServerServer
	mu     sync.Mutex
	closed []string
	steps  int
}

func (q *quitter) Reset(_ context.Context, r *pb.ResetRequest) (*pb.ResetResponse, error) {
	return &pb.ResetResponse{Session: "q-" + r.GetGame(), Observation: "A dark room.", AdmissibleActions: []string{"look", "wait"}}, nil
}

func (q *quitter) Step(_ context.Context, r *pb.StepRequest) (*pb.StepResponse, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.steps++
	return &pb.StepResponse{Observation: "Time passes.", Done: q.steps >= 2, AdmissibleActions: []string{"look", "wait"}}, nil
}

func (q *quitter) Close(_ context.Context, r *pb.CloseRequest) (*pb.CloseResponse, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = append(q.closed, r.GetSession())
	return &pb.CloseResponse{}, nil
}

func TestEpisodeEndsUnwon(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	q := &quitter{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- textgame.Serve(ctx, ln, q) }()
	defer func() { cancel(); <-done }()
	raw := []byte(`{"id": "train:0007", "gamefile": "json_2.1.1/train/look_at_obj_in_light-Book-None-DeskLamp-308/trial_1/game.tw-pddl"}`)
	m := acts("wait")
	ep, err := env(t, ln.Addr().String(), 50).Episode(ctx, m, bench.EpisodeRequest{Item: bench.Item{ID: "train:0007", Raw: raw}, Skill: "Be patient."})
	if err != nil {
		t.Fatal(err)
	}
	// Done after 2 steps without a win; the task type comes from the path;
	// without a task from the server the prompt says to read the observation.
	if ep.Hard != 0 || ep.Soft != 0 || ep.FailReason != "Episode ended without completing the task" || ep.NTurns != 2 || ep.TaskType != "look_at_obj_in_light" {
		t.Errorf("hard %v reason %q turns %d type %q", ep.Hard, ep.FailReason, ep.NTurns, ep.TaskType)
	}
	if u := m.Requests[0].Messages[1].Content; !strings.Contains(u, "Task: see the observation") || !strings.Contains(u, "Available actions: look | wait") {
		t.Errorf("prompt:\n%s", u)
	}
	// Trajectory: system, first observation, then reply/observation pairs, then the evaluation.
	if n := len(ep.Messages); n != 2+2*2+1 || ep.Messages[2].Role != llm.RoleAssistant || ep.Messages[3].Content != "Time passes." {
		t.Errorf("trajectory of %d messages: %+v", n, ep.Messages)
	}
	if ep.Calls != 2 || ep.Usage.InputTokens != 20 || ep.Usage.OutputTokens != 10 {
		t.Errorf("accounting: calls %d usage %+v", ep.Calls, ep.Usage)
	}
	// The loop closes its session, with the game file it reset.
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.closed) != 1 || q.closed[0] != "q-json_2.1.1/train/look_at_obj_in_light-Book-None-DeskLamp-308/trial_1/game.tw-pddl" {
		t.Errorf("closed %v", q.closed)
	}
}

func TestServerErrors(t *testing.T) {
	addr := serve(t)
	if _, err := env(t, addr, 5).Episode(context.Background(), acts("look"), bench.EpisodeRequest{Item: item("g4", "no_such_game")}); err == nil ||
		!strings.Contains(err.Error(), "unknown game") || !strings.Contains(err.Error(), "g4") {
		t.Errorf("unknown game: %v", err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	ln.Close()
	if _, err := env(t, dead, 5).Episode(context.Background(), acts("look"), bench.EpisodeRequest{Item: item("g5", "pick_mug_cabinet")}); err == nil ||
		!strings.Contains(err.Error(), dead) {
		t.Errorf("server down: %v", err)
	}
	if _, err := registry.New("alfworld", []byte(`{}`)); err == nil || !strings.Contains(err.Error(), "env.env_server") {
		t.Errorf("missing env_server: %v", err)
	}
}

func TestTaskTypes(t *testing.T) {
	for game, want := range map[string]string{
		"json_2.1.1/train/pick_and_place_simple-Mug-None-Cabinet-5/trial_1/game.tw-pddl": "pick_and_place",
		"valid_seen/pick_two_obj_and_place-Apple-None-Fridge-2/trial_3/game.tw-pddl":     "pick_two_obj_and_place",
		"valid_unseen/pick_heat_then_place_in_recep-Egg-None-Table-1/t/game.tw-pddl":     "pick_heat_then_place_in_recep",
		"x/look_at_obj_in_light-Book-None-DeskLamp-308/trial_T2/game.tw-pddl":            "look_at_obj_in_light",
	} {
		if got := envserver.TaskTypeOf(game); got != want {
			t.Errorf("TaskTypeOf(%q) = %q, want %q", game, got, want)
		}
	}
	for reply, want := range map[string]string{"<action>go to fridge 1</action>": "go to fridge 1", "think\n`open fridge 1`": "open fridge 1", "": ""} {
		if got := envserver.ExtractAction(reply); got != want {
			t.Errorf("ExtractAction(%q) = %q", reply, got)
		}
	}
}

// TestTextgameSplit loads the textgame fixture through the registry (task
// types filled from the built-in games) and plays its first test item to a
// win: two_apples_fridge needs both apples in the fridge.
func TestTextgameSplit(t *testing.T) {
	s, err := registry.LoadSplits("textgame", "testdata/textgame_split", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range append(append(s.Train, s.Val...), s.Test...) {
		got = append(got, it.ID+"="+it.TaskType)
	}
	want := "tg-train-1=pick_and_place tg-train-2=pick_heat_then_place_in_recep tg-val-1=pick_clean_then_place_in_recep " +
		"tg-val-2=pick_two_obj_and_place tg-test-1=pick_two_obj_and_place tg-test-2=pick_and_place"
	if strings.Join(got, " ") != want {
		t.Errorf("items %v", got)
	}
	m := acts("go to countertop 1", "take apple 1 from countertop 1", "go to fridge 1", "open fridge 1", "put apple 1 in/on fridge 1",
		"go to table 1", "take apple 2 from table 1", "go to fridge 1", "put apple 2 in/on fridge 1")
	ep, err := env(t, serve(t), 0).Episode(context.Background(), m, bench.EpisodeRequest{Item: s.Test[0]})
	if err != nil {
		t.Fatal(err)
	}
	// max_steps 0 means the default 50; nine moves win.
	if ep.Hard != 1 || ep.NTurns != 9 || ep.TaskType != "pick_two_obj_and_place" || !strings.HasPrefix(ep.Messages[len(ep.Messages)-1].Content, "evaluation result: correct") {
		t.Errorf("hard %v turns %d type %q last %q", ep.Hard, ep.NTurns, ep.TaskType, ep.Messages[len(ep.Messages)-1].Content)
	}
	if r := m.Requests[0]; r.Stage != "rollout" || r.Messages[0].Role != llm.RoleSystem || !strings.Contains(r.Messages[0].Content, "<action>") {
		t.Errorf("request %+v", r)
	}
}
