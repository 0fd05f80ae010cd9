package textgame

import (
	"context"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/envserver/v1"
)

// client serves a fresh Server on a loopback port and dials it.
func client(t *testing.T) (pb.EnvServerClient, *Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, srv) }()
	cc, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cc.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return pb.NewEnvServerClient(cc), srv
}

func TestServerProtocol(t *testing.T) {
	cl, srv := client(t)
	ctx := context.Background()
	info, err := cl.Info(ctx, &pb.InfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	// The four games, sorted by id, with their ALFWorld-style task types.
	var got []string
	for _, g := range info.GetGames() {
		got = append(got, g.GetId()+"="+g.GetTaskType())
	}
	want := "clean_apple_table=pick_clean_then_place_in_recep heat_egg_table=pick_heat_then_place_in_recep pick_mug_cabinet=pick_and_place two_apples_fridge=pick_two_obj_and_place"
	if info.GetName() != "skillfleet textgame" || strings.Join(got, " ") != want {
		t.Errorf("info %q %v", info.GetName(), got)
	}

	if _, err := cl.Reset(ctx, &pb.ResetRequest{Game: "nope"}); status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), `unknown game "nope"`) {
		t.Errorf("unknown game: %v", err)
	}
	if _, err := cl.Step(ctx, &pb.StepRequest{Session: "s99", Action: "look"}); status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), "s99") {
		t.Errorf("unknown session: %v", err)
	}

	r, err := cl.Reset(ctx, &pb.ResetRequest{Game: "pick_mug_cabinet", Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if r.GetTask() != "put a mug in cabinet 1." || !strings.HasSuffix(r.GetObservation(), "Your task is to: put a mug in cabinet 1.") || len(r.GetAdmissibleActions()) != 9 {
		t.Errorf("reset %+v", r)
	}
	var last *pb.StepResponse
	for _, a := range []string{"go to countertop 1", "take mug 1 from countertop 1", "go to cabinet 1", "open cabinet 1", "put mug 1 in/on cabinet 1"} {
		if last, err = cl.Step(ctx, &pb.StepRequest{Session: r.GetSession(), Action: a}); err != nil {
			t.Fatalf("%s: %v", a, err)
		}
		if last.GetDone() != (a == "put mug 1 in/on cabinet 1") {
			t.Errorf("%s: done %v", a, last.GetDone())
		}
	}
	if !last.GetWon() || last.GetReward() != 1 || len(last.GetAdmissibleActions()) != 0 || last.GetObservation() != "You put the mug 1 in the cabinet 1." {
		t.Errorf("last step %+v", last)
	}
	if _, err := cl.Step(ctx, &pb.StepRequest{Session: r.GetSession(), Action: "look"}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("step after the win: %v", err)
	}
	// Close frees the session; closing again is fine.
	for range 2 {
		if _, err := cl.Close(ctx, &pb.CloseRequest{Session: r.GetSession()}); err != nil {
			t.Fatal(err)
		}
	}
	srv.mu.Lock()
	n := len(srv.sessions)
	srv.mu.Unlock()
	if n != 0 {
		t.Errorf("%d sessions left after Close", n)
	}
	if _, err := cl.Step(ctx, &pb.StepRequest{Session: r.GetSession(), Action: "look"}); status.Code(err) != codes.NotFound {
		t.Errorf("step after Close: %v", err)
	}
}

func TestSessionsAreIndependent(t *testing.T) {
	cl, _ := client(t)
	ctx := context.Background()
	a, _ := cl.Reset(ctx, &pb.ResetRequest{Game: "pick_mug_cabinet"})
	b, _ := cl.Reset(ctx, &pb.ResetRequest{Game: "pick_mug_cabinet"})
	if a.GetSession() == b.GetSession() {
		t.Fatalf("two resets share session %q", a.GetSession())
	}
	if _, err := cl.Step(ctx, &pb.StepRequest{Session: a.GetSession(), Action: "go to countertop 1"}); err != nil {
		t.Fatal(err)
	}
	// b has not moved: look gives the room's intro, not the countertop.
	s, err := cl.Step(ctx, &pb.StepRequest{Session: b.GetSession(), Action: "look"})
	if err != nil || !strings.HasPrefix(s.GetObservation(), "You are in the middle of a room.") {
		t.Errorf("b after a moved: %v %q", err, s.GetObservation())
	}
}

func TestNormalizeItem(t *testing.T) {
	it, err := NormalizeItem(map[string]any{"id": "g1", "game": "heat_egg_table"})
	if err != nil || it["task_type"] != "pick_heat_then_place_in_recep" {
		t.Errorf("built-in game: %v %v", it, err)
	}
	// A given task type is kept; an unknown game is kept without one.
	it, _ = NormalizeItem(map[string]any{"id": "g2", "game": "heat_egg_table", "task_type": "mine"})
	if it["task_type"] != "mine" {
		t.Errorf("given task type replaced: %v", it)
	}
	if it, err := NormalizeItem(map[string]any{"id": "g3", "game": "elsewhere"}); err != nil || it["task_type"] != nil {
		t.Errorf("unknown game: %v %v", it, err)
	}
	if _, err := NormalizeItem(map[string]any{"id": "g4", "game": 7}); err == nil || !strings.Contains(err.Error(), "field game") || !strings.Contains(err.Error(), "g4") {
		t.Errorf("bad game: %v", err)
	}
}
