package synth

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/skillfleet/skillfleet/internal/atomicfile"
	"github.com/skillfleet/skillfleet/pkg/bench/envserver/textgame"
)

// The household worlds (textgame and alfworld): games of the built-in
// household text game, written as a layout file (games.json) that
// `skillfleet envserver --games` serves, and items naming them (textgame:
// a game id; alfworld: an ALFWorld-style game file path). A goal's words
// hide an order of actions: a "fresh" item must be cooled, a "ready" one
// heated and a "spotless" one cleaned before it is put in place, and "a
// pair of" items means placing two.
const (
	RuleFresh    = "tg_fresh_cool"
	RuleReady    = "tg_ready_heat"
	RuleSpotless = "tg_spotless_clean"
	RulePair     = "tg_pair_both"
)

// LayoutFile is the game layout a household world writes beside its splits.
const LayoutFile = "games.json"

// HouseholdVerb maps a state rule to the action verb and device it needs.
var HouseholdVerb = map[string][2]string{
	RuleFresh:    {"cool", "fridge 1"},
	RuleReady:    {"heat", "microwave 1"},
	RuleSpotless: {"clean", "sinkbasin 1"},
}

// householdWorldRules are the rules of both household worlds (textgame and
// ALFWorld).
var householdWorldRules = []Rule{
	Rule{ID: RuleFresh, Category: "household", Cue: "fresh",
		Text:        "A fresh item must be cooled with fridge 1 before you put it in place.",
		Paraphrases: []string{"Cool a fresh item in fridge 1 first; only then put it in place.", "Before placing anything fresh, cool it with fridge 1."},
		Stems:       []string{"fresh", "cool"}, Vague: "Some tasks want food kept in a certain way.",
		Harmful: "Warm every food item in the microwave first; warm food is always welcome.", HarmfulStems: []string{"warm food"},
		Description: "The fresh item was put in place without being cooled first."},
	Rule{ID: RuleReady, Category: "household", Cue: "ready",
		Text:        "A ready item must be heated with microwave 1 before you put it in place.",
		Paraphrases: []string{"Heat a ready item in microwave 1 first; only then put it in place.", "Before placing anything ready, heat it with microwave 1."},
		Stems:       []string{"ready", "heat"}, Vague: "Some dishes need preparing before they are served.",
		Harmful: "Chill everything in the fridge before serving it.", HarmfulStems: []string{"chill everything"},
		Description: "The ready item was put in place without being heated first."},
	Rule{ID: RuleSpotless, Category: "household", Cue: "spotless",
		Text:        "A spotless item must be cleaned at sinkbasin 1 before you put it in place.",
		Paraphrases: []string{"Clean a spotless item at sinkbasin 1 first; only then put it in place.", "Before placing anything spotless, clean it at sinkbasin 1."},
		Stems:       []string{"spotless", "clean"}, Vague: "Tidiness matters in this house.",
		Harmful: "Rinsing wastes water; never use the sink.", HarmfulStems: []string{"wastes water"},
		Description: "The spotless item was put in place without being cleaned first."},
	Rule{ID: RulePair, Category: "household", Cue: "a pair of",
		Text:        "A pair of items means two of them: find and place both before you stop.",
		Paraphrases: []string{"For a pair of items, place both of them, not just one.", "When the task says a pair of, put both items in place."},
		Stems:       []string{"pair", "both"}, Vague: "Read how many items the task asks for.",
		Harmful: "Once one item is in place the task is done, so stop searching.", HarmfulStems: []string{"stop searching"},
		Description: "Only one of the pair was put in place."},
}

var householdKinds = []string{"apple", "egg", "mug", "potato", "cup", "plate", "tomato", "bread"}

// householdItem is an item of either household world.
type householdItem struct {
	ID       string `json:"id"`
	Game     string `json:"game,omitempty"`
	Gamefile string `json:"gamefile,omitempty"`
	TaskType string `json:"task_type"`
}

func writeHousehold(name, dir string, size Size, seed int64) (*Manifest, error) {
	active := []string{RuleFresh, RuleReady, RuleSpotless, RulePair}
	recs := textgame.Receptacles()
	var layout textgame.Layout
	splitDir := map[string]string{"train": "train", "val": "valid_seen", "test": "valid_unseen"}
	items := splits(size, func(split string, i int) householdItem {
		r := newRNG(name, size, seed, fmt.Sprintf("%s/%d", split, i))
		var rules []string
		for _, id := range itemRules(r, active) {
			// At most one state rule per item.
			if _, state := HouseholdVerb[id]; state && slices.ContainsFunc(rules, func(x string) bool { _, s := HouseholdVerb[x]; return s }) {
				continue
			}
			rules = append(rules, id)
		}
		slices.Sort(rules)
		kind := pick(r, householdKinds)
		want := pick(r, []string{"cabinet 1", "countertop 1", "drawer 1", "table 1"})
		g := textgame.LayoutGame{Want: want, Kind: kind, Count: 1, Start: map[string][]string{}, TaskType: "pick_and_place"}
		adj := ""
		for _, id := range rules {
			switch id {
			case RulePair:
				g.Count = 2
			case RuleFresh, RuleReady, RuleSpotless:
				ru, _ := LookupRule(id)
				adj = ru.Cue + " "
				g.Needs = map[string]string{RuleFresh: "cool", RuleReady: "hot", RuleSpotless: "clean"}[id]
				g.TaskType = map[string]string{RuleFresh: "pick_cool_then_place_in_recep", RuleReady: "pick_heat_then_place_in_recep", RuleSpotless: "pick_clean_then_place_in_recep"}[id]
			}
		}
		if g.Count == 2 && g.Needs == "" {
			g.TaskType = "pick_two_obj_and_place"
		}
		prep := "in"
		if want == "countertop 1" || want == "table 1" {
			prep = "on"
		}
		if g.Count == 2 {
			g.Goal = fmt.Sprintf("put a pair of %s%ss %s %s.", adj, kind, prep, want)
		} else {
			g.Goal = fmt.Sprintf("put a %s%s %s %s.", adj, kind, prep, want)
		}
		others := slices.DeleteFunc(slices.Clone(recs), func(x string) bool { return x == want })
		for k := range g.Count + r.IntN(2) {
			at := pick(r, others)
			g.Start[at] = append(g.Start[at], fmt.Sprintf("%s %d", kind, k+1))
		}
		for k := range 1 + r.IntN(2) {
			other := pick(r, householdKinds)
			if other == kind {
				continue
			}
			at := pick(r, recs)
			g.Start[at] = append(g.Start[at], fmt.Sprintf("%s %d", other, 10+k))
		}
		it := householdItem{TaskType: g.TaskType}
		if name == "alfworld" {
			it.ID = fmt.Sprintf("%s:%04d", splitDir[split], i)
			g.ID = fmt.Sprintf("json_2.1.1/%s/%s-%s-None-%s-%d/trial_synth_%04d/game.tw-pddl", splitDir[split], g.TaskType,
				strings.ToUpper(kind[:1])+kind[1:], strings.ToUpper(want[:1])+strings.TrimSuffix(want[1:], " 1"), 1+r.IntN(30), i)
			it.Gamefile = g.ID
		} else {
			it.ID = fmt.Sprintf("synth-textgame-%s-%04d", split, i+1)
			g.ID = fmt.Sprintf("synth_%s_%04d", split, i+1)
			it.Game = g.ID
		}
		layout.Games = append(layout.Games, g)
		return it
	})
	if _, err := layout.Specs(); err != nil {
		return nil, fmt.Errorf("generated layout: %w", err)
	}
	if err := atomicfile.WriteJSON(filepath.Join(dir, LayoutFile), layout); err != nil {
		return nil, err
	}
	counts, err := writeItems(dir, items)
	if err != nil {
		return nil, err
	}
	seedFile, err := writeSeedSkill(dir, SeedSkill("Doing household tasks", householdGeneral, active, newRNG(name, size, seed, "seed-skill")))
	if err != nil {
		return nil, err
	}
	fields := []string{"id", "game", "task_type"}
	if name == "alfworld" {
		fields = []string{"id", "gamefile", "task_type"}
	}
	return &Manifest{Counts: counts, ItemFields: fields, Rules: active, SeedSkill: seedFile,
		Notes: "A synthetic world (a test double), not real benchmark data. Serve its games with `skillfleet envserver --games " + LayoutFile + "` and point env.env_server at it."}, nil
}

const householdGeneral = "Find the object the task names, prepare it if the task asks, and put it where the task says.\n\n## General\n- Pick exactly one listed action each turn.\n- Open a closed receptacle before you look inside it."
