package skill_test

import (
	"fmt"

	"github.com/skillfleet/skillfleet/pkg/skill"
)

func ExampleApply() {
	doc := "# Answering\n\nCite the passage.\n\n" + skill.SlowStart + "\nKeep answers short.\n" + skill.SlowEnd + "\n"
	edits := []skill.Edit{
		{Op: "insert_after", Target: "Cite the passage.", Content: "Quote numbers exactly."},
		{Op: "ADD", Content: "Answer in English."}, // mapped to append (NormalizeOps)
		{Op: "replace", Target: "Keep answers short.", Content: "Be verbose."},
		{Op: "delete", Target: "Ask the user."},
	}
	out, reports := skill.Apply(doc, edits, skill.ApplyOptions{NormalizeOps: true})
	fmt.Print(out)
	for _, r := range reports {
		fmt.Println(r.Index, r.Op, r.NormalizedFrom, r.Status)
	}
	// Output:
	// # Answering
	//
	// Cite the passage.
	//
	// Quote numbers exactly.
	//
	// Answer in English.
	//
	// <!-- SLOW_UPDATE_START -->
	// Keep answers short.
	// <!-- SLOW_UPDATE_END -->
	// 0 insert_after  applied_insert_after
	// 1 append ADD applied_append_before_protected_region
	// 2 replace  skipped_protected_region
	// 3 delete  skipped_delete_target_not_found
}

func ExampleDiff() {
	before := "# Answering\nCite the passage.\nBe brief.\nStop.\n"
	after := "# Answering\nCite the passage.\nQuote numbers exactly.\nBe brief.\n"
	fmt.Print(skill.Diff(before, after))
	// Output:
	// --- a
	// +++ b
	// @@ -1,4 +1,4 @@
	//  # Answering
	//  Cite the passage.
	// +Quote numbers exactly.
	//  Be brief.
	// -Stop.
}
