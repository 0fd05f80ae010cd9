// Package store holds what many skillfleet processes share and what may be
// lost without changing a training decision: the content-addressed rollout
// cache, counters, the worker registry, the leader lease of each run and
// the shared rate limiters.
//
// # Contracts and implementations
//
// This package declares one small interface per capability ([Cache],
// [Counters], [Registry], [Lease], [Limiter]) and the helpers that only
// need those interfaces: [CacheKey] and [RolloutKey] for cache addresses,
// [Leader] to keep a run's lease, [DegradingCache] and [FallbackLimiter]
// for running on while the shared store is unreachable. Two packages
// implement every interface with concrete types:
//
//   - store/redisstore: a Redis server shared by a fleet (go-redis v9);
//   - store/memstore: one process, for the all-in-one mode and tests.
//
// store/storetest holds the conformance suite both pass and a helper that
// runs a real redis-server for tests.
//
// # What must never live here
//
// State that decides a run (current and best skill, step, buffers, seeds)
// lives only in the coordinator's run directory. Losing everything in this
// package may cost money (cache misses) and time (limits restart) but never
// changes a decision.
//
// # Failure
//
// Every operation takes a context and returns an error when the store is
// unreachable; redisstore keeps its timeouts short so that error comes
// quickly, and reconnects by itself once Redis is back. Callers choose how
// to degrade: a cache error is a miss ([DegradingCache]), a limiter error
// falls back to a local limit ([FallbackLimiter]), and a lease that cannot
// be renewed blocks decisions until it is ([Leader.Held]).
package store
