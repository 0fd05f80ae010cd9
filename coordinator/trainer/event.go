package trainer

import "github.com/skillfleet/skillfleet/pkg/rundir"

// Event is one line of events.jsonl: a decision (pkg/rundir's record,
// shared with pkg/report).
type Event = rundir.Event

// StepFile names a file of step g's directory in the run dir.
func StepFile(g int, name string) string { return rundir.StepFile(g, name) }

// SkillFile names the skill snapshot after step g in the run dir.
func SkillFile(g int) string { return rundir.SkillFile(g) }
