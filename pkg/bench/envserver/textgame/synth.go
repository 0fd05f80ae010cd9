package textgame

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/envserver/v1"
)

// A game layout file describes games of the household text game beyond
// the built-in ones: `skillfleet envserver --games FILE` serves them. The
// synthetic worlds (`skillfleet data synth --bench textgame|alfworld`)
// write one; its game ids may be plain ids (textgame items' game) or
// ALFWorld-style game file paths (alfworld items' gamefile).

// LayoutGame is one game of a layout file.
type LayoutGame struct {
	ID       string `json:"id"`
	TaskType string `json:"task_type"`
	// Goal is the task text ("put a mug in cabinet 1.").
	Goal string `json:"goal"`
	// Start places objects ("apple 1") in receptacles ("fridge 1").
	Start map[string][]string `json:"start"`
	// The game is won when Count objects of Kind, each in state Needs
	// (clean, hot or cool; "" = any), are in receptacle Want.
	Want  string `json:"want"`
	Kind  string `json:"kind"`
	Needs string `json:"needs,omitempty"`
	Count int    `json:"count"`
}

// Layout is a game layout file.
type Layout struct {
	Games []LayoutGame `json:"games"`
}

// Receptacles returns the game's receptacles, in their fixed order.
func Receptacles() []string { return slices.Clone(receptacles) }

// Specs checks the layout and returns its games by id. Each error names
// the game and the field.
func (l Layout) Specs() (map[string]Spec, error) {
	out := map[string]Spec{}
	for i, g := range l.Games {
		name := fmt.Sprintf("games[%d]", i)
		if strings.TrimSpace(g.ID) == "" {
			return nil, fmt.Errorf("%s: id: empty", name)
		}
		name += " (" + g.ID + ")"
		if _, dup := out[g.ID]; dup {
			return nil, fmt.Errorf("%s: id: duplicate", name)
		}
		if strings.TrimSpace(g.Goal) == "" {
			return nil, fmt.Errorf("%s: goal: empty", name)
		}
		if !slices.Contains(receptacles, g.Want) {
			return nil, fmt.Errorf("%s: want: %q is not a receptacle (%s)", name, g.Want, strings.Join(receptacles, ", "))
		}
		if strings.TrimSpace(g.Kind) == "" || strings.Contains(g.Kind, " ") {
			return nil, fmt.Errorf("%s: kind: want one word (an object kind such as apple), got %q", name, g.Kind)
		}
		if g.Needs != "" && g.Needs != "clean" && g.Needs != "hot" && g.Needs != "cool" {
			return nil, fmt.Errorf("%s: needs: want clean, hot, cool or empty, got %q", name, g.Needs)
		}
		if g.Count < 1 {
			return nil, fmt.Errorf("%s: count: want at least 1, got %d", name, g.Count)
		}
		have, seen := 0, map[string]bool{}
		for r, objs := range g.Start {
			if !slices.Contains(receptacles, r) {
				return nil, fmt.Errorf("%s: start: %q is not a receptacle", name, r)
			}
			for _, o := range objs {
				kind, num, ok := strings.Cut(o, " ")
				if !ok || kind == "" || num == "" || strings.Contains(num, " ") {
					return nil, fmt.Errorf("%s: start[%s]: object %q: want \"<kind> <number>\"", name, r, o)
				}
				if seen[o] {
					return nil, fmt.Errorf("%s: start: object %q placed twice", name, o)
				}
				seen[o] = true
				if kind == g.Kind {
					have++
				}
			}
		}
		if have < g.Count {
			return nil, fmt.Errorf("%s: start: %d %s object(s), the goal needs %d", name, have, g.Kind, g.Count)
		}
		start := map[string][]string{}
		for r, objs := range g.Start {
			start[r] = slices.Clone(objs)
		}
		out[g.ID] = Spec{ID: g.ID, TaskType: g.TaskType, Goal: g.Goal, Start: start, Want: g.Want, Kind: g.Kind, Needs: g.Needs, Count: g.Count}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("games: empty")
	}
	return out, nil
}

// LoadLayout reads and checks a game layout file.
func LoadLayout(path string) (map[string]Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var l Layout
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	specs, err := l.Specs()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return specs, nil
}

// LayoutServer serves the games of a layout (and not the built-in ones)
// over the environment-server protocol.
type LayoutServer struct {
	*Server
	games map[string]Spec
}

// NewLayoutServer returns a server of the given games.
func NewLayoutServer(games map[string]Spec) *LayoutServer {
	return &LayoutServer{Server: NewServer(), games: games}
}

// Info lists the layout's games.
func (s *LayoutServer) Info(context.Context, *pb.InfoRequest) (*pb.InfoResponse, error) {
	ids := make([]string, 0, len(s.games))
	for id := range s.games {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := &pb.InfoResponse{Name: "skillfleet textgame (layout)"}
	for _, id := range ids {
		out.Games = append(out.Games, &pb.Game{Id: id, TaskType: s.games[id].TaskType})
	}
	return out, nil
}

// Reset starts a session of one of the layout's games.
func (s *LayoutServer) Reset(_ context.Context, req *pb.ResetRequest) (*pb.ResetResponse, error) {
	spec, ok := s.games[req.GetGame()]
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
