package dispatch

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/pkg/store"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// Cache serves the results of tasks measured before — by this run before
// a restart, by another run, or by any coordinator sharing the store — so
// that a paid result is never paid for again. Only successful results are
// stored. A served result is recorded in the journal like any other (with
// Result.Cached set), so a resumed run replays the same result even if the
// store has lost it since.
type Cache struct {
	// Store holds the values; wrap a shared store with [store.Degrading] so
	// that an unreachable store reads as misses.
	Store store.Cache
	// Key returns a task's content address, or ok=false for tasks that
	// are not cached. Equal keys must mean equal inputs: the key must name
	// everything the result depends on and nothing run-specific.
	Key func(*pb.Task) (key string, ok bool)
	// TTL of stored values (0 = the store's default).
	TTL time.Duration
	// Timeout bounds one lookup (default 2s); a slow store is a miss.
	Timeout time.Duration

	hits, misses, stores atomic.Int64

	// queue holds the values waiting to be stored; written is non-nil
	// while the writer goroutine runs, which drains the queue, and closed
	// when it ends (the queue empty). Flush waits for it.
	mu      sync.Mutex
	queue   []cachePut
	written chan struct{}
}

type cachePut struct {
	key   string
	value []byte
}

// putConcurrency bounds the puts in flight at once, and putTimeout one put.
const (
	putConcurrency = 8
	putTimeout     = 5 * time.Second
)

// CacheCounts are a cache's lookups as this process saw them.
type CacheCounts struct{ Hits, Misses, Stores int64 }

// Counts returns the cache's traffic so far.
func (c *Cache) Counts() CacheCounts {
	return CacheCounts{Hits: c.hits.Load(), Misses: c.misses.Load(), Stores: c.stores.Load()}
}

// lookup fetches the cached results of tasks concurrently; out[i] is nil
// on a miss (or for a task that is not cached). keys[i] is the task's key
// ("" for none).
func (c *Cache) lookup(ctx context.Context, tasks []*pb.Task) ([]*pb.Result, []string) {
	out := make([]*pb.Result, len(tasks))
	keys := make([]string, len(tasks))
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	lctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i, t := range tasks {
		k, ok := c.Key(t)
		if !ok {
			continue
		}
		keys[i] = k
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			v, hit, err := c.Store.Get(lctx, k)
			if err != nil || !hit {
				c.misses.Add(1)
				return
			}
			var r pb.Result
			if proto.Unmarshal(v, &r) != nil || r.GetOutcome() != pb.Outcome_OUTCOME_OK {
				c.misses.Add(1)
				return
			}
			c.hits.Add(1)
			r.TaskId = t.GetId()
			r.Cached = true
			r.WorkerId = "cache"
			r.Attempt = 0
			out[i] = &r
		}()
	}
	wg.Wait()
	return out, keys
}

// store queues a fresh successful result to be saved under key. One
// writer goroutine at a time saves the queue, at most putConcurrency puts
// at once; it starts when a value is queued and ends when the queue is
// empty.
func (c *Cache) store(key string, res *pb.Result) {
	if key == "" || res.GetCached() || res.GetOutcome() != pb.Outcome_OUTCOME_OK {
		return
	}
	v, err := proto.Marshal(res)
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queue = append(c.queue, cachePut{key, v})
	if c.written == nil {
		c.written = make(chan struct{})
		go c.write(c.written)
	}
}

// write saves the queued values until the queue is empty. The puts do not
// end with the run's context: a result paid for is stored while the run
// stops too (Flush waits for them), each put bounded by putTimeout.
func (c *Cache) write(done chan struct{}) {
	for {
		c.mu.Lock()
		batch := c.queue
		c.queue = nil
		if len(batch) == 0 {
			c.written = nil
			close(done)
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		var wg sync.WaitGroup
		sem := make(chan struct{}, putConcurrency)
		for _, p := range batch {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				ctx, cancel := context.WithTimeout(context.Background(), putTimeout)
				defer cancel()
				if c.Store.Put(ctx, p.key, p.value, c.TTL) == nil {
					c.stores.Add(1)
				}
			})
		}
		wg.Wait()
	}
}

// Flush waits until every value queued so far is stored (or its put
// failed) and the writer goroutine has ended.
func (c *Cache) Flush() {
	for {
		c.mu.Lock()
		done := c.written
		c.mu.Unlock()
		if done == nil {
			return
		}
		<-done
	}
}
