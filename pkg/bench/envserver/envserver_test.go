package envserver_test

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/benchtest"
	"github.com/skillfleet/skillfleet/pkg/bench/envserver"
	"github.com/skillfleet/skillfleet/pkg/bench/envserver/textgame"
	"github.com/skillfleet/skillfleet/pkg/bench/registry"
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
	return e
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
	// Unreadable replies become "look" and are counted.
	ep, _ = env(t, addr, 2).Episode(context.Background(), benchtest.Text("   "), bench.EpisodeRequest{Item: item("g3", "heat_egg_table")})
	if !strings.Contains(ep.FailReason, "2 unreadable replies became look") {
		t.Errorf("unreadable: %q", ep.FailReason)
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
