// Package trainer is SkillOpt's training loop: it owns a run's skill state
// and makes every decision — baseline, minibatch rollouts, reflection,
// merge, ranking and clipping to the learning-rate budget, the gate on the
// selection split, slow update at epoch ends, the meta skill, and the test
// evaluations of the baseline, best and final skills.
//
// It calls no model and touches no network: every piece of model work is a
// task handed to a [Dispatcher] (the coordinator's hub over NATS and gRPC,
// or package memdispatch in tests), and every decision is written through a
// [RunDir] (events.jsonl, state.json, snapshots).
//
// Task ids are functions of their inputs, so resuming a run is replaying
// it: [Trainer.Run] over the same run dir re-derives each decision from the
// recorded results, checks it against the event log line by line, and
// dispatches only the tasks that have no result yet.
//
// The files follow the loop: run.go (the run, epochs, test evaluations),
// step*.go (one step, phase by phase), measure.go (scoring a skill on a
// split), optimize.go and rollout.go (building tasks), speculate.go and
// idlefill.go (work started early whose results a later decision may use),
// epoch.go (slow update and the meta skill at epoch ends).
// A run is started by coordinator.Start, which wires
// the dispatcher, run dir and stop rules.
package trainer
