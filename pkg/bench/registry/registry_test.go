package registry

import (
	"strings"
	"testing"
)

func TestEveryBenchmarkIsRegistered(t *testing.T) {
	want := []string{"alfworld", "docvqa", "jsonl", "livemath", "officeqa", "searchqa", "sim", "sleep", "spreadsheet", "textgame"}
	if got := strings.Join(Names(), ","); got != strings.Join(want, ",") {
		t.Errorf("Names() = %s, want %s", got, strings.Join(want, ","))
	}
	notes := AnalystNotes()
	for _, n := range want {
		if n == "sim" || n == "jsonl" || n == "sleep" {
			continue // the sim's analysts need no taxonomy; jsonl's and sleep's tasks are the user's
		}
		if len(notes[n]) < 100 {
			t.Errorf("%s has no analyst notes", n)
		}
	}
	if _, err := New("nosuch", nil); err == nil || !strings.Contains(err.Error(), "known: alfworld") {
		t.Errorf("unknown benchmark: %v", err)
	}
	// A ratio-generated split (items.json) is readable for a CSV benchmark.
	if o := LoadOptions("docvqa", 3); o.Files[len(o.Files)-1] != "*.json" || o.Limit != 3 || o.Normalize == nil {
		t.Errorf("docvqa load options: %+v", o)
	}
}
