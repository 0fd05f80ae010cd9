// Package textgame is a small household text game served over the
// environment-server protocol: a reference implementation to test the
// protocol and the multi-turn agent loop with, shaped like ALFWorld's
// pick-and-place tasks (go to, open, take, clean/heat/cool, put).
package textgame

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Receptacles of the house; the openable ones start closed.
var receptacles = []string{"cabinet 1", "countertop 1", "drawer 1", "fridge 1", "microwave 1", "sinkbasin 1", "table 1"}

var openable = map[string]bool{"cabinet 1": true, "drawer 1": true, "fridge 1": true, "microwave 1": true}

// Spec is one game: where the objects start and what wins it.
type Spec struct {
	ID       string
	TaskType string
	Goal     string
	// Start places objects in receptacles.
	Start map[string][]string
	// Want is the receptacle the goal objects must end in; Kind the
	// object kind ("mug"); Count how many; Needs a state they must have
	// ("clean", "hot", "cool", or "").
	Want, Kind, Needs string
	Count             int
}

// Games are the games the server knows, by id.
var Games = map[string]Spec{
	"pick_mug_cabinet": {ID: "pick_mug_cabinet", TaskType: "pick_and_place", Goal: "put a mug in cabinet 1.",
		Start: map[string][]string{"countertop 1": {"mug 1", "apple 1"}, "table 1": {"egg 1"}}, Want: "cabinet 1", Kind: "mug", Count: 1},
	"clean_apple_table": {ID: "clean_apple_table", TaskType: "pick_clean_then_place_in_recep", Goal: "put a clean apple on table 1.",
		Start: map[string][]string{"fridge 1": {"apple 1"}, "countertop 1": {"mug 1"}}, Want: "table 1", Kind: "apple", Needs: "clean", Count: 1},
	"heat_egg_table": {ID: "heat_egg_table", TaskType: "pick_heat_then_place_in_recep", Goal: "put a hot egg on table 1.",
		Start: map[string][]string{"fridge 1": {"egg 1"}, "drawer 1": {"mug 1"}}, Want: "table 1", Kind: "egg", Needs: "hot", Count: 1},
	"two_apples_fridge": {ID: "two_apples_fridge", TaskType: "pick_two_obj_and_place", Goal: "put two apples in fridge 1.",
		Start: map[string][]string{"countertop 1": {"apple 1"}, "table 1": {"apple 2", "mug 1"}}, Want: "fridge 1", Kind: "apple", Count: 2},
}

// Game is one episode's state.
type Game struct {
	spec   Spec
	at     string
	held   string
	open   map[string]bool
	in     map[string][]string // receptacle → objects
	state  map[string]map[string]bool
	done   bool
	won    bool
	steps  int
	reward float64
}

// New starts an episode of spec.
func New(spec Spec) *Game {
	g := &Game{spec: spec, at: "middle of the room", open: map[string]bool{}, in: map[string][]string{}, state: map[string]map[string]bool{}}
	for r, objs := range spec.Start {
		g.in[r] = append([]string(nil), objs...)
	}
	return g
}

// Intro is the first observation.
func (g *Game) Intro() string {
	return "You are in the middle of a room. Looking quickly around you, you see " + list(receptacles) + ".\n\nYour task is to: " + g.spec.Goal
}

// Goal is the task text.
func (g *Game) Goal() string { return g.spec.Goal }

func list(xs []string) string {
	if len(xs) == 0 {
		return "nothing"
	}
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = "a " + x
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + ", and " + parts[len(parts)-1]
}

func (g *Game) prep(r string) string {
	switch r {
	case "countertop 1", "table 1", "sinkbasin 1":
		return "on"
	}
	return "in"
}

func (g *Game) describe(r string) string {
	if openable[r] && !g.open[r] {
		return fmt.Sprintf("The %s is closed.", r)
	}
	return fmt.Sprintf("%s the %s, you see %s.", strings.ToUpper(g.prep(r)[:1])+g.prep(r)[1:], r, list(g.in[r]))
}

// Admissible lists the actions that do something now, sorted.
func (g *Game) Admissible() []string {
	if g.done {
		return nil
	}
	acts := []string{"look", "inventory"}
	for _, r := range receptacles {
		if r != g.at {
			acts = append(acts, "go to "+r)
		}
	}
	if slices.Contains(receptacles, g.at) {
		r := g.at
		if openable[r] {
			if g.open[r] {
				acts = append(acts, "close "+r)
			} else {
				acts = append(acts, "open "+r)
			}
		}
		accessible := !openable[r] || g.open[r]
		if accessible && g.held == "" {
			for _, o := range g.in[r] {
				acts = append(acts, fmt.Sprintf("take %s from %s", o, r))
			}
		}
		if accessible && g.held != "" {
			acts = append(acts, fmt.Sprintf("put %s %s/on %s", g.held, "in", r))
		}
		if g.held != "" {
			switch r {
			case "sinkbasin 1":
				acts = append(acts, fmt.Sprintf("clean %s with %s", g.held, r))
			case "microwave 1":
				acts = append(acts, fmt.Sprintf("heat %s with %s", g.held, r))
			case "fridge 1":
				acts = append(acts, fmt.Sprintf("cool %s with %s", g.held, r))
			}
		}
	}
	sort.Strings(acts)
	return acts
}

// Step applies an action and returns the observation. Unknown or
// impossible actions change nothing ("Nothing happens.").
func (g *Game) Step(action string) string {
	g.steps++
	a := strings.Join(strings.Fields(strings.ToLower(action)), " ")
	nothing := "Nothing happens."
	switch {
	case a == "look":
		if slices.Contains(receptacles, g.at) {
			return "You are facing the " + g.at + ". " + g.describe(g.at)
		}
		return g.Intro()
	case a == "inventory":
		if g.held == "" {
			return "You are not carrying anything."
		}
		return "You are carrying: a " + g.held + "."
	case strings.HasPrefix(a, "go to "):
		r := strings.TrimPrefix(a, "go to ")
		if !slices.Contains(receptacles, r) || r == g.at {
			return nothing
		}
		g.at = r
		return "You arrive at " + r + ". " + g.describe(r)
	case strings.HasPrefix(a, "open "), strings.HasPrefix(a, "close "):
		verb, r, _ := strings.Cut(a, " ")
		if r != g.at || !openable[r] || g.open[r] == (verb == "open") {
			return nothing
		}
		g.open[r] = verb == "open"
		if verb == "open" {
			return fmt.Sprintf("You open the %s. %s", r, g.describe(r))
		}
		return "You close the " + r + "."
	case strings.HasPrefix(a, "take "):
		obj, r, ok := strings.Cut(strings.TrimPrefix(a, "take "), " from ")
		if !ok || r != g.at || g.held != "" || (openable[r] && !g.open[r]) || !slices.Contains(g.in[r], obj) {
			return nothing
		}
		g.in[r] = slices.DeleteFunc(g.in[r], func(o string) bool { return o == obj })
		g.held = obj
		return fmt.Sprintf("You pick up the %s from the %s.", obj, r)
	case strings.HasPrefix(a, "put "):
		rest := strings.TrimPrefix(a, "put ")
		obj, r, ok := strings.Cut(rest, " in/on ")
		if !ok {
			if obj, r, ok = strings.Cut(rest, " in "); !ok {
				obj, r, ok = strings.Cut(rest, " on ")
			}
		}
		if !ok || obj != g.held || r != g.at || (openable[r] && !g.open[r]) {
			return nothing
		}
		g.in[r] = append(g.in[r], obj)
		g.held = ""
		g.check()
		return fmt.Sprintf("You put the %s %s the %s.", obj, g.prep(r), r)
	case strings.HasPrefix(a, "clean "), strings.HasPrefix(a, "heat "), strings.HasPrefix(a, "cool "):
		verb, rest, _ := strings.Cut(a, " ")
		obj, r, ok := strings.Cut(rest, " with ")
		want := map[string]string{"clean": "sinkbasin 1", "heat": "microwave 1", "cool": "fridge 1"}[verb]
		if !ok || obj != g.held || r != g.at || r != want {
			return nothing
		}
		state := map[string]string{"clean": "clean", "heat": "hot", "cool": "cool"}[verb]
		if g.state[obj] == nil {
			g.state[obj] = map[string]bool{}
		}
		g.state[obj][state] = true
		return fmt.Sprintf("You %s the %s using the %s.", verb, obj, r)
	}
	return nothing
}

func (g *Game) check() {
	n := 0
	for _, o := range g.in[g.spec.Want] {
		if strings.HasPrefix(o, g.spec.Kind+" ") && (g.spec.Needs == "" || g.state[o][g.spec.Needs]) {
			n++
		}
	}
	if n >= g.spec.Count {
		g.done, g.won, g.reward = true, true, 1
	}
}

// Done, Won and Reward report the episode's state.
func (g *Game) Done() bool      { return g.done }
func (g *Game) Won() bool       { return g.won }
func (g *Game) Reward() float64 { return g.reward }
