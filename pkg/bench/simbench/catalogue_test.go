package simbench

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// ownTexts are the texts that may hold a pitfall's rule stems (its rule
// and paraphrases) and its harmful stems (its harmful rule).
func skillTexts() map[string]string {
	texts := map[string]string{
		"scaffold":       scaffold,
		"title":          skillTitle,
		"general":        skillGeneral,
		"watch heading":  WatchHeading,
		"answer prompt":  AnswerInstruction,
		"skill open tag": SkillOpen,
	}
	for i, p := range Platitudes() {
		texts[fmt.Sprintf("platitude %d", i)] = p
	}
	for _, p := range catalogue {
		for i, t := range p.Texts() {
			texts[fmt.Sprintf("%s text %d", p.ID, i)] = t
		}
		texts[p.ID+" vague"] = p.Vague
		texts[p.ID+" harmful"] = p.Harmful
	}
	return texts
}

func TestCatalogueStems(t *testing.T) {
	t.Parallel()
	if n := len(catalogue); n < 20 {
		t.Fatalf("catalogue has %d pitfalls, want at least 20", n)
	}
	texts := skillTexts()
	ids := map[string]bool{}
	for _, p := range catalogue {
		if ids[p.ID] {
			t.Errorf("duplicate id %s", p.ID)
		}
		ids[p.ID] = true
		if len(p.Paraphrases) != 3 || len(p.Stems) == 0 || len(p.HarmfulStems) == 0 {
			t.Errorf("%s: want 3 paraphrases and non-empty stems, got %d, %v, %v", p.ID, len(p.Paraphrases), p.Stems, p.HarmfulStems)
		}
		for i, text := range p.Texts() {
			if !Covered(text, p.ID) {
				t.Errorf("%s text %d %q lacks a stem of %v", p.ID, i, text, p.Stems)
			}
		}
		if !containsAll(strings.ToLower(p.Harmful), p.HarmfulStems) {
			t.Errorf("%s: harmful %q lacks a stem of %v", p.ID, p.Harmful, p.HarmfulStems)
		}
		// No stem may occur in a text that is not the pitfall's own.
		for name, text := range texts {
			low := strings.ToLower(text)
			own := strings.HasPrefix(name, p.ID+" text")
			for _, s := range p.Stems {
				if !own && strings.Contains(low, s) {
					t.Errorf("rule stem %q of %s occurs in %s: %q", s, p.ID, name, text)
				}
			}
			for _, s := range p.HarmfulStems {
				if name != p.ID+" harmful" && strings.Contains(low, s) {
					t.Errorf("harmful stem %q of %s occurs in %s: %q", s, p.ID, name, text)
				}
			}
		}
	}
}

func TestCatalogueCues(t *testing.T) {
	t.Parallel()
	templates := strings.Join(append(append(append([]string{}, intros...), cueLines...), asks...), "\n")
	for _, p := range catalogue {
		if strings.Contains(templates, p.Cue) {
			t.Errorf("cue %q of %s occurs in the question templates", p.Cue, p.ID)
		}
		for _, o := range catalogue {
			if o.ID != p.ID && strings.Contains(o.Cue, p.Cue) {
				t.Errorf("cue %q of %s occurs in cue %q of %s", p.Cue, p.ID, o.Cue, o.ID)
			}
		}
		if got := PitfallsInQuestion("Look at " + p.Cue + ". " + RecordMarker + "1234."); len(got) != 1 || got[0] != p.ID {
			t.Errorf("PitfallsInQuestion(cue of %s) = %v", p.ID, got)
		}
	}
}

// allValues returns every record value the generator can produce: four
// distinct digits from 1-9.
func allValues() []string {
	var out []string
	for a := '1'; a <= '9'; a++ {
		for b := '1'; b <= '9'; b++ {
			for c := '1'; c <= '9'; c++ {
				for d := '1'; d <= '9'; d++ {
					if a != b && a != c && a != d && b != c && b != d && c != d {
						out = append(out, string([]rune{a, b, c, d}))
					}
				}
			}
		}
	}
	return out
}

func TestWrongAnswersIdentifyTheirPitfall(t *testing.T) {
	t.Parallel()
	values := allValues()
	if len(values) != 3024 {
		t.Fatalf("%d values, want 3024", len(values))
	}
	for _, g := range values {
		seen := map[string]string{g: "gold", Typo(g): "typo"}
		if Typo(g) == g {
			t.Fatalf("Typo(%s) = gold", g)
		}
		for _, p := range catalogue {
			w := p.Wrong(g)
			if other, dup := seen[w]; dup {
				t.Fatalf("%s.Wrong(%s) = %q, same as %s", p.ID, g, w, other)
			}
			seen[w] = p.ID
			if id, ok := IdentifyPitfall(w, g); !ok || id != p.ID {
				t.Fatalf("IdentifyPitfall(%q, %q) = %q, %v, want %s", w, g, id, ok, p.ID)
			}
			if hard, _ := Score(w, g); hard != 0 {
				t.Fatalf("Score(%q, %q) hard = %v, want 0", w, g, hard)
			}
		}
		if id, ok := IdentifyPitfall(Typo(g), g); ok {
			t.Fatalf("IdentifyPitfall(typo %q, %q) = %s, want none", Typo(g), g, id)
		}
		if _, ok := IdentifyPitfall(g, g); ok {
			t.Fatalf("IdentifyPitfall(gold, gold) found a pitfall")
		}
	}
}

func TestWrongToleratesOddGold(t *testing.T) {
	t.Parallel()
	for _, g := range []string{"", "7", "ab", "12"} {
		for _, p := range catalogue {
			_ = p.Wrong(g) // must not panic
		}
		_ = Typo(g)
	}
}

func TestCoverageHelpers(t *testing.T) {
	t.Parallel()
	km, _ := Lookup("units_km")
	skill := "# Skill\n- " + strings.ToUpper(km.Paraphrases[1]) + "\n- " + km.Harmful + "\n"
	if !Covered(skill, "units_km") || !ViewSkill(skill).Covered("units_km") {
		t.Errorf("Covered(%q, units_km) = false", skill)
	}
	if Covered(skill, "hex") || Covered(skill, "no_such_pitfall") {
		t.Error("Covered reports a rule the skill does not hold")
	}
	if got := Harmful(skill); len(got) != 1 || got[0] != "units_km" {
		t.Errorf("Harmful = %v, want [units_km]", got)
	}
	if got := CoveredIDs(skill); len(got) != 1 || got[0] != "units_km" {
		t.Errorf("CoveredIDs = %v, want [units_km]", got)
	}
	if got := ViewSkill(skill).BrokenIDs(); len(got) != 1 || got[0] != "units_km" {
		t.Errorf("BrokenIDs = %v, want [units_km]", got)
	}
	if _, ok := Lookup("nope"); ok {
		t.Error("Lookup(nope) found a pitfall")
	}
	q := "Note the serial code. It also refers to the route length. " + RecordMarker + "4821."
	if got := PitfallsInQuestion(q); len(got) != 2 || got[0] != "digits_reversed" || got[1] != "units_km" {
		t.Errorf("PitfallsInQuestion = %v, want [digits_reversed units_km] (cue order)", got)
	}
	if v, ok := BaseValue(q); !ok || v != "4821" {
		t.Errorf("BaseValue = %q, %v", v, ok)
	}
	if _, ok := BaseValue("no value here"); ok {
		t.Error("BaseValue found a value in a question without one")
	}
}

// TestLures: the broad categories (three pitfalls or more) have exactly
// one sweeping pitfall each, the others none.
func TestLures(t *testing.T) {
	t.Parallel()
	size, sweeping := map[string]int{}, map[string]int{}
	for _, p := range catalogue {
		size[p.Category]++
		if p.Sweeping {
			sweeping[p.Category]++
		}
	}
	for c, n := range size {
		lure, ok := Lure(c)
		switch {
		case n >= 3 && (sweeping[c] != 1 || !ok || lure.Category != c || !lure.Sweeping):
			t.Errorf("broad category %s (%d pitfalls): %d sweeping, Lure = %v, %v; want exactly one", c, n, sweeping[c], lure.ID, ok)
		case n < 3 && (sweeping[c] != 0 || ok):
			t.Errorf("narrow category %s (%d pitfalls) has a lure", c, n)
		}
	}
}

func TestSpillDraw(t *testing.T) {
	t.Parallel()
	q := "Note the serial code. " + RecordMarker + "4821."
	if SpillDraw(q, "hex") != SpillDraw(q, "hex") {
		t.Error("SpillDraw is not a function of its arguments")
	}
	below := 0
	for i := range 1000 {
		if SpillDraw(q+strconv.Itoa(i), "hex") < 0.3 {
			below++
		}
	}
	if below < 250 || below > 350 {
		t.Errorf("%d of 1000 draws below 0.3, want about 300", below)
	}
}

func TestRNGIsStable(t *testing.T) {
	t.Parallel()
	// Pinned so that generated worlds never change silently.
	r := NewRNG(42)
	got := []uint64{r.Uint64(), r.Uint64(), r.Uint64()}
	want := []uint64{0xbdd732262feb6e95, 0x28efe333b266f103, 0x47526757130f9f52}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("NewRNG(42) outputs %#x, want %#x", got, want)
		}
	}
	for n := 1; n < 50; n++ {
		if v := r.IntN(n); v < 0 || v >= n {
			t.Fatalf("IntN(%d) = %d", n, v)
		}
	}
}
