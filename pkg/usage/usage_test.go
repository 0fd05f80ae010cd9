package usage

import "testing"

func TestAddSubTokens(t *testing.T) {
	a := Totals{Tasks: 2, Calls: 3, Input: 100, Output: 20, Reused: 1}
	b := Totals{Tasks: 1, Calls: 1, Input: 40, Output: 5, CacheRead: 7}
	sum := a
	sum.Add(b)
	want := Totals{Tasks: 3, Calls: 4, Input: 140, Output: 25, CacheRead: 7, Reused: 1}
	if sum != want {
		t.Errorf("Add = %+v, want %+v", sum, want)
	}
	if d := sum.Sub(b); d != a {
		t.Errorf("Sub = %+v, want %+v", d, a)
	}
	if got := sum.Tokens(); got != 165 {
		t.Errorf("Tokens() = %d, want 140 + 25 = 165", got)
	}
}

func TestCauses(t *testing.T) {
	var a Totals
	a.Causes.AddNamed("stall", 2)
	a.Causes.AddNamed("server_5xx", 1)
	a.Causes.AddNamed("no-such-cause", 1)
	b := Totals{Causes: Causes{Stall: 1, RateLimited: 4}}
	sum := a
	sum.Add(b)
	if want := (Causes{Stall: 3, Server5xx: 1, RateLimited: 4, Other: 1}); sum.Causes != want {
		t.Fatalf("Add: causes %+v, want %+v", sum.Causes, want)
	}
	if d := sum.Sub(b); d != a {
		t.Fatalf("Sub = %+v, want %+v", d, a)
	}
	if n := sum.Causes.Total(); n != 9 {
		t.Fatalf("Total = %d, want 9", n)
	}
	got := sum.Causes.Named()
	want := []NamedCount{{"rate_limited", 4}, {"stall", 3}, {"server_5xx", 1}, {"other", 1}}
	if len(got) != len(want) {
		t.Fatalf("Named = %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("Named = %v, want %v", got, want)
		}
	}
}
