package textgame

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/envserver/v1"
)

func TestLayoutServerPlaysItsGames(t *testing.T) {
	path := filepath.Join(t.TempDir(), "games.json")
	layout := `{"games": [{"id": "g1", "task_type": "pick_cool_then_place_in_recep", "goal": "put a fresh apple in cabinet 1.",
		"start": {"countertop 1": ["apple 1", "mug 1"]}, "want": "cabinet 1", "kind": "apple", "needs": "cool", "count": 1}]}`
	if err := os.WriteFile(path, []byte(layout), 0o644); err != nil {
		t.Fatal(err)
	}
	games, err := LoadLayout(path)
	if err != nil {
		t.Fatal(err)
	}
	s := NewLayoutServer(games)
	ctx := context.Background()
	info, _ := s.Info(ctx, &pb.InfoRequest{})
	if len(info.Games) != 1 || info.Games[0].Id != "g1" {
		t.Fatalf("Info = %v", info.Games)
	}
	if _, err := s.Reset(ctx, &pb.ResetRequest{Game: "pick_mug_cabinet"}); err == nil {
		t.Fatal("a layout server served a built-in game")
	}
	r, err := s.Reset(ctx, &pb.ResetRequest{Game: "g1"})
	if err != nil || r.Task != "put a fresh apple in cabinet 1." {
		t.Fatalf("Reset = %v, %v", r, err)
	}
	play := func(actions ...string) *pb.StepResponse {
		var st *pb.StepResponse
		for _, a := range actions {
			if st, err = s.Step(ctx, &pb.StepRequest{Session: r.Session, Action: a}); err != nil {
				t.Fatalf("%s: %v", a, err)
			}
		}
		return st
	}
	// Placed without cooling: not won; cooled, then placed: won.
	if st := play("go to countertop 1", "take apple 1 from countertop 1", "go to cabinet 1", "open cabinet 1", "put apple 1 in/on cabinet 1"); st.Won {
		t.Fatal("won without cooling the apple")
	}
	st := play("take apple 1 from cabinet 1", "go to fridge 1", "cool apple 1 with fridge 1", "go to cabinet 1", "put apple 1 in/on cabinet 1")
	if !st.Won || !st.Done {
		t.Fatalf("cooled and placed: won=%v done=%v (%s)", st.Won, st.Done, st.Observation)
	}
}

func TestLayoutErrorsNameGameAndField(t *testing.T) {
	for _, tc := range []struct{ layout, want string }{
		{`{"games": []}`, "games: empty"},
		{`{"games": [{"id": "a", "goal": "x", "want": "sofa 1", "kind": "mug", "count": 1}]}`, `games[0] (a): want: "sofa 1" is not a receptacle`},
		{`{"games": [{"id": "a", "goal": "x", "want": "table 1", "kind": "mug", "count": 1, "needs": "wet"}]}`, "games[0] (a): needs"},
		{`{"games": [{"id": "a", "goal": "x", "want": "table 1", "kind": "mug", "count": 2, "start": {"table 1": ["mug 1"]}}]}`, "games[0] (a): start: 1 mug object(s), the goal needs 2"},
		{`{"games": [{"id": "a", "goal": "x", "want": "table 1", "kind": "mug", "count": 1, "start": {"table 1": ["mug"]}}]}`, `object "mug"`},
		{`{"games": [{"id": "a", "goal": "x", "want": "table 1", "kind": "mug", "count": 1, "colour": "red"}]}`, `unknown field "colour"`},
	} {
		path := filepath.Join(t.TempDir(), "games.json")
		if err := os.WriteFile(path, []byte(tc.layout), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadLayout(path); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: err = %v, want %q naming the file", tc.layout, err, tc.want)
		}
	}
}
