package officeqa

import "github.com/skillfleet/skillfleet/pkg/bench"

// Items is what `skillfleet data check` reports of an OfficeQA item: the
// loader itself refuses one without these.
var Items = bench.ItemCheck{Fields: "question, ground_truth (or answer), source_files (non-empty)"}
