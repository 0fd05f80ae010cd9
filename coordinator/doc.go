// Package coordinator owns a skillfleet run: the skill state and every
// decision of the training loop (batches, merges, clipping, the gate, slow
// update, meta skill), the run directory, and the dispatch side that sends
// tasks to workers over NATS JetStream and records their results.
//
// What it must never do: call a model itself, or let a result measured on
// one skill stand for another (every result is keyed by task id, and task
// ids carry a hash of their inputs).
//
// Data enters as the run config and the benchmark's split files, and as
// results reported by workers over gRPC; it leaves as the run directory
// (skills, events.jsonl, state.json, tokens.json, summary.json).
package coordinator
