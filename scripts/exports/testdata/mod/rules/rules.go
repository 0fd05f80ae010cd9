// Package rules is the checked package of the exports test.
package rules

// Used is called by package app.
func Used() int { return inner() + Inner }

// Inner is used by this package's own code only: that counts as a use.
const Inner = 1

// TestOnly is called by rules_test.go only.
func TestOnly() int { return 2 }

// XTestOnly is called by the external test package only.
func XTestOnly() int { return 3 }

// Unused is used nowhere.
var Unused = 4

// T is used by app; its method M and field F only by tests, its field G
// by app.
type T struct {
	F int
	G int
}

// M is called by tests only.
func (T) M() int { return 5 }

// String satisfies fmt.Stringer: no call site names it.
func (T) String() string { return "t" }

func inner() int { return 0 }
