package textgame

import (
	"slices"
	"testing"
)

func play(t *testing.T, id string, actions ...string) *Game {
	t.Helper()
	g := New(Games[id])
	for _, a := range actions {
		if !slices.Contains(g.Admissible(), a) {
			t.Fatalf("%s: %q not admissible; have %v", id, a, g.Admissible())
		}
		g.Step(a)
	}
	return g
}

func TestWinningSequences(t *testing.T) {
	g := play(t, "heat_egg_table", "go to fridge 1", "open fridge 1", "take egg 1 from fridge 1",
		"go to microwave 1", "heat egg 1 with microwave 1", "go to table 1", "put egg 1 in/on table 1")
	if !g.Won() || !g.Done() || g.Reward() != 1 {
		t.Error("heated egg on the table did not win")
	}
	g = play(t, "two_apples_fridge", "go to countertop 1", "take apple 1 from countertop 1", "go to fridge 1", "open fridge 1",
		"put apple 1 in/on fridge 1", "go to table 1", "take apple 2 from table 1", "go to fridge 1", "put apple 2 in/on fridge 1")
	if !g.Won() {
		t.Error("two apples in the fridge did not win")
	}
}

func TestRulesHold(t *testing.T) {
	// An unheated egg on the table does not win.
	g := play(t, "heat_egg_table", "go to fridge 1", "open fridge 1", "take egg 1 from fridge 1", "go to table 1", "put egg 1 in/on table 1")
	if g.Won() {
		t.Error("a cold egg won")
	}
	// One apple is not two.
	g = play(t, "two_apples_fridge", "go to countertop 1", "take apple 1 from countertop 1", "go to fridge 1", "open fridge 1", "put apple 1 in/on fridge 1")
	if g.Won() {
		t.Error("one apple won")
	}
	g = New(Games["pick_mug_cabinet"])
	// Closed receptacles hide their content and forbid put; nothing can be taken from afar.
	if out := g.Step("take mug 1 from countertop 1"); out != "Nothing happens." {
		t.Errorf("took from afar: %q", out)
	}
	g.Step("go to cabinet 1")
	if slices.Contains(g.Admissible(), "close cabinet 1") || !slices.Contains(g.Admissible(), "open cabinet 1") {
		t.Errorf("closed cabinet actions: %v", g.Admissible())
	}
	// One object at a time.
	g = play(t, "pick_mug_cabinet", "go to countertop 1", "take mug 1 from countertop 1")
	for _, a := range g.Admissible() {
		if a == "take apple 1 from countertop 1" {
			t.Error("a second object can be taken while holding one")
		}
	}
	if out := g.Step("dance"); out != "Nothing happens." {
		t.Errorf("unknown action: %q", out)
	}
}

func TestAdmissibleActions(t *testing.T) {
	g := New(Games["pick_mug_cabinet"])
	// In the middle of the room: look, inventory and a "go to" per receptacle.
	want := []string{"go to cabinet 1", "go to countertop 1", "go to drawer 1", "go to fridge 1", "go to microwave 1",
		"go to sinkbasin 1", "go to table 1", "inventory", "look"}
	if got := g.Admissible(); !slices.Equal(got, want) {
		t.Errorf("start: %v", got)
	}
	// At the countertop (open, holds mug 1 and apple 1): no "go to" it, a take per object.
	g.Step("go to countertop 1")
	want = []string{"go to cabinet 1", "go to drawer 1", "go to fridge 1", "go to microwave 1", "go to sinkbasin 1",
		"go to table 1", "inventory", "look", "take apple 1 from countertop 1", "take mug 1 from countertop 1"}
	if got := g.Admissible(); !slices.Equal(got, want) {
		t.Errorf("countertop: %v", got)
	}
	// Holding the mug at the closed microwave: open it, heat the mug; no put until it is open.
	g.Step("take mug 1 from countertop 1")
	g.Step("go to microwave 1")
	want = []string{"go to cabinet 1", "go to countertop 1", "go to drawer 1", "go to fridge 1", "go to sinkbasin 1",
		"go to table 1", "heat mug 1 with microwave 1", "inventory", "look", "open microwave 1"}
	if got := g.Admissible(); !slices.Equal(got, want) {
		t.Errorf("closed microwave: %v", got)
	}
	g.Step("open microwave 1")
	if got := g.Admissible(); !slices.Contains(got, "put mug 1 in/on microwave 1") || !slices.Contains(got, "close microwave 1") {
		t.Errorf("open microwave: %v", got)
	}
	if out := g.Step("inventory"); out != "You are carrying: a mug 1." {
		t.Errorf("inventory: %q", out)
	}
	// Every admissible action does something: none answers "Nothing happens.".
	for _, a := range g.Admissible() {
		h := New(Games["pick_mug_cabinet"])
		for _, s := range []string{"go to countertop 1", "take mug 1 from countertop 1", "go to microwave 1", "open microwave 1"} {
			h.Step(s)
		}
		if out := h.Step(a); out == "Nothing happens." {
			t.Errorf("admissible %q did nothing", a)
		}
	}
}

func TestCleanAndSpellings(t *testing.T) {
	// The apple must be cleaned at the sink before it counts on the table.
	g := play(t, "clean_apple_table", "go to fridge 1", "open fridge 1", "take apple 1 from fridge 1",
		"go to sinkbasin 1", "clean apple 1 with sinkbasin 1", "go to table 1")
	// "put X on Y" and odd spacing/case are read like "put X in/on Y".
	if out := g.Step("  Put apple 1  ON table 1 "); out != "You put the apple 1 on the table 1." || !g.Won() {
		t.Errorf("put on: %q won %v", out, g.Won())
	}
	// Cleaning with the wrong appliance or away from it does nothing.
	g = play(t, "clean_apple_table", "go to fridge 1", "open fridge 1", "take apple 1 from fridge 1")
	if out := g.Step("clean apple 1 with sinkbasin 1"); out != "Nothing happens." {
		t.Errorf("cleaned at the fridge: %q", out)
	}
	if out := g.Step("heat apple 1 with fridge 1"); out != "Nothing happens." {
		t.Errorf("heated with the fridge: %q", out)
	}
}
