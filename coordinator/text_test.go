package coordinator

import (
	"testing"

	"github.com/skillfleet/skillfleet/coordinator/trainer"
)

// A row of the eval table never shows an accuracy for items that were not
// scored: none scored is "-", some scored names how many.
func TestEvalCell(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		ts   trainer.TypeScore
		want string
	}{
		{trainer.TypeScore{Total: 10, Scored: 10, Hard: 0.7}, "0.700 (10)"},
		{trainer.TypeScore{Total: 10, Scored: 6, Hard: 1}, "1.000 (6/10)"},
		{trainer.TypeScore{Total: 10, Scored: 0}, "- (0/10)"},
		{trainer.TypeScore{}, "0.000 (0)"},
	} {
		if got := evalCell(c.ts); got != c.want {
			t.Errorf("evalCell(%+v) = %q, want %q", c.ts, got, c.want)
		}
	}
}
