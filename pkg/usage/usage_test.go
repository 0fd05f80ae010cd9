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
