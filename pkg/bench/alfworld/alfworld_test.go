package alfworld_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/alfworld"
	"github.com/skillfleet/skillfleet/pkg/bench/benchtest"
	"github.com/skillfleet/skillfleet/pkg/bench/envserver/textgame"
	"github.com/skillfleet/skillfleet/pkg/bench/registry"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/envserver/v1"
)

func TestSplitFixture(t *testing.T) {
	s, err := registry.LoadSplits(alfworld.Name, "testdata/split", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Train) != 3 || len(s.Val) != 2 || len(s.Test) != 2 {
		t.Fatalf("counts %d/%d/%d, want 3/2/2", len(s.Train), len(s.Val), len(s.Test))
	}
	// Given task types are kept; absent ones come from the game file path
	// (train:0001 is a pick_heat_... game, valid_seen:0001 look_at_..., valid_unseen:0000 pick_cool_...).
	got := map[string]string{}
	for _, it := range append(append(s.Train, s.Val...), s.Test...) {
		got[it.ID] = it.TaskType
		var raw map[string]any
		if err := json.Unmarshal(it.Raw, &raw); err != nil || raw["task_type"] != it.TaskType {
			t.Errorf("%s: raw task_type %v, item %q (%v)", it.ID, raw["task_type"], it.TaskType, err)
		}
	}
	want := map[string]string{
		"train:0000": "pick_and_place", "train:0001": "pick_heat_then_place_in_recep", "train:0002": "pick_two_obj_and_place",
		"valid_seen:0000": "pick_clean_then_place_in_recep", "valid_seen:0001": "look_at_obj_in_light",
		"valid_unseen:0000": "pick_cool_then_place_in_recep", "valid_unseen:0001": "pick_and_place",
	}
	for id, tt := range want {
		if got[id] != tt {
			t.Errorf("%s: task type %q, want %q", id, got[id], tt)
		}
	}
}

func TestNormalizeErrors(t *testing.T) {
	for name, item := range map[string]map[string]any{
		"no gamefile":      {"id": "train:0003"},
		"numeric gamefile": {"id": "train:0003", "gamefile": 12},
		"blank gamefile":   {"id": "train:0003", "gamefile": "  "},
	} {
		if _, err := alfworld.Normalize(item); err == nil || !strings.Contains(err.Error(), "field gamefile") || !strings.Contains(err.Error(), "train:0003") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := alfworld.Normalize(map[string]any{"id": "train:0004", "gamefile": "a/pick_and_place_simple-X/game.tw-pddl", "task_type": 3}); err == nil ||
		!strings.Contains(err.Error(), "field task_type") {
		t.Errorf("numeric task_type: %v", err)
	}
	// A path naming no task type leaves task_type unset rather than guessing.
	it, err := alfworld.Normalize(map[string]any{"id": "train:0005", "gamefile": "custom/game.tw-pddl"})
	if err != nil || it["task_type"] != nil {
		t.Errorf("custom game: %v %v", it, err)
	}
	// The loader reports the file and item of a bad item.
	dir := t.TempDir()
	for _, sp := range []string{"train", "val", "test"} {
		if err := os.MkdirAll(filepath.Join(dir, sp), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, sp, "items.json"), []byte(`[{"id": "`+sp+`:0000", "gamefile": "g/pick_and_place_simple/game.tw-pddl"}]`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "val", "items.json"), []byte(`[{"id": "valid_seen:0000"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := registry.LoadSplits(alfworld.Name, dir, 0); err == nil || !strings.Contains(err.Error(), filepath.Join("val", "items.json")) ||
		!strings.Contains(err.Error(), "field gamefile") {
		t.Errorf("bad split: %v", err)
	}
}

// recorder serves the reference game under any game name, remembering the
// reset requests, so the test sees what the alfworld loop asks for.
type recorder struct {
	*textgame.Server
	mu     sync.Mutex
	resets []*pb.ResetRequest
}

func (r *recorder) Reset(ctx context.Context, req *pb.ResetRequest) (*pb.ResetResponse, error) {
	r.mu.Lock()
	r.resets = append(r.resets, req)
	r.mu.Unlock()
	return r.Server.Reset(ctx, &pb.ResetRequest{Game: "pick_mug_cabinet", Seed: req.GetSeed()})
}

func TestEpisodeResetsTheGameFile(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{Server: textgame.NewServer()}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- textgame.Serve(ctx, ln, rec) }()
	defer func() { cancel(); <-done }()

	cfg, _ := json.Marshal(map[string]any{"name": "alfworld", "env_server": ln.Addr().String(), "split_dir": "/data/alf", "unrelated_key": true})
	env, err := registry.New(alfworld.Name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The gRPC client's goroutines end with its connection.
	defer env.(io.Closer).Close()
	s, err := registry.LoadSplits(alfworld.Name, "testdata/split", 0)
	if err != nil {
		t.Fatal(err)
	}
	it := s.Train[0]
	m := benchtest.Text("<action>go to countertop 1</action>", "<action>take mug 1 from countertop 1</action>",
		"<action>go to cabinet 1</action>", "<action>open cabinet 1</action>", "Done.\n<action>put mug 1 in/on cabinet 1</action>")
	ep, err := env.Episode(ctx, m, bench.EpisodeRequest{Item: it, Skill: "Open receptacles first.", BatchSeed: 42})
	if err != nil {
		t.Fatal(err)
	}
	if ep.Hard != 1 || ep.NTurns != 5 || ep.TaskType != "pick_and_place" || ep.Answer != "put mug 1 in/on cabinet 1" {
		t.Errorf("hard %v turns %d type %q answer %q", ep.Hard, ep.NTurns, ep.TaskType, ep.Answer)
	}
	// The server gets the game file as written (it resolves it against
	// $ALFWORLD_DATA itself, not the split dir) and the batch seed.
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.resets) != 1 || rec.resets[0].GetGame() != "json_2.1.1/train/pick_and_place_simple-Mug-None-Cabinet-5/trial_T20190907_221331_418416/game.tw-pddl" ||
		rec.resets[0].GetSeed() != 42 {
		t.Errorf("resets %v", rec.resets)
	}
}
