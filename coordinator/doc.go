// Package coordinator runs a skillfleet run: [Start] takes a run config
// and returns a [Run] that owns everything the run needs — its identity
// and run directory (locked against a second coordinator), the leader
// lease and decision fence in a shared store, NATS (embedded or external),
// the [Hub] (task stream, result journal, gRPC service), in-process
// workers started through [Deps], the splits, the budgets and stop rules,
// and a disk watchdog — until [Run.Wait] returns. Every command that runs
// a training or an evaluation starts it here, the way a server embeds etcd
// with its embed package.
//
// The decisions themselves are package trainer's; dispatch, rpcserver,
// gate, plan and schedule are the parts it is built from. What this
// package must never do: call a model itself (workers do, through NATS and
// gRPC), or import package worker (in-process workers come in through
// [Deps.StartWorkers]).
//
// Data enters as the run config and the benchmark's split files, and as
// results reported by workers over gRPC; it leaves as the run directory
// (skills, events.jsonl, state.json, tokens.json, summary.json).
package coordinator
