package rules

import "testing"

func TestRules(t *testing.T) {
	if TestOnly()+(T{F: 1}).M() == 0 {
		t.Fatal("zero")
	}
}
