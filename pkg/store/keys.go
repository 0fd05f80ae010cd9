package store

// Key layout. Every key a shared store writes is one of these, placed under
// the store's prefix ([DefaultPrefix] unless configured), so several
// deployments can share one Redis database and an operator can find, size
// or delete skillfleet's keys with one pattern.
const (
	// DefaultPrefix precedes every key.
	DefaultPrefix = "skillfleet:"

	// KeyCache + a [CacheKey] holds one cached value (a string with a TTL).
	KeyCache = "cache:"
	// KeyCounters is one hash: field = counter name, value = its total.
	// Counters never expire.
	KeyCounters = "counters"
	// KeyWorkers is a sorted set of worker ids scored by the time (Unix
	// milliseconds, store clock) their last heartbeat expires.
	KeyWorkers = "workers"
	// KeyWorkerInfo is a hash: field = worker id, value = its WorkerInfo as JSON.
	KeyWorkerInfo = "workers:info"
	// KeyLease + run id holds "<token>:<owner>" with the lease's TTL.
	KeyLease = "lease:"
	// KeyLeaseToken + run id is the fencing-token counter of that run's lease.
	// It never expires, so tokens only grow.
	KeyLeaseToken = "lease-token:"
	// KeyLimit + limiter key holds the limiter's theoretical arrival time
	// (Unix microseconds, store clock), expiring once the bucket is full again.
	KeyLimit = "limit:"
)

// RunCounter is the field of [KeyCounters] holding a run's total of one
// measure (tasks, calls, input_tokens, output_tokens, cache_hits).
func RunCounter(run, measure string) string { return "run:" + run + ":" + measure }
