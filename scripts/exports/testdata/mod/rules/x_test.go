package rules_test

import (
	"testing"

	"example.com/mod/rules"
)

func TestX(t *testing.T) {
	if rules.XTestOnly() == 0 {
		t.Fatal("zero")
	}
}
