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
