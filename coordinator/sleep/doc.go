// Package sleep drives a skillfleet sleep night: mined tasks are replayed
// as ordinary rollout tasks on the fleet (the "sleep" benchmark of
// pkg/nightly), and one gated epoch ([Consolidate]) edits the learned
// block of the skill and, if enabled, of the memory file. A skill that is
// a package travels as its bundle (the replays give the target the whole
// package), and its edits may also create or append reference files.
//
// The epoch's phases are the step_* files, in order: the baseline (val
// replays under the live documents), then for each evolved document the
// train replays and one reflection on their failures, a gate trial of each
// proposed edit, and the final check on fresh replays. Every replay wave
// is scored as the trainer scores a selection evaluation ([Measure], with
// coordinator/gate's metric), so gate_metric and gate_mixed_weight mean
// the same in `sleep` and `train`.
//
// The target may be an agent CLI (the exec backend: Codex, Claude Code),
// built from train's keys by [Specs]; a replay it fails stops the night
// with an [*AgentFailure] instead of being left out of the scores.
//
// [Options] are the sleep commands' flags over the config file, and
// [RunCommand], [StatusCommand], [HarvestCommand], [AdoptCommand] and
// [Options.ScheduleCommand] the commands; cmd/skillfleet only parses the
// flags and maps the errors to exit codes.
//
// Harvest, mining, judging, staging and adoption are pkg/nightly's; this
// package decides.
package sleep
