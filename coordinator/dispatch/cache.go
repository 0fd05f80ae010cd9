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
	puts                 sync.WaitGroup
}

// CacheCounts are a cache's lookups as this process saw them.
type CacheCounts struct{ Hits, Misses, Stores int64 }

// Counts returns the cache's traffic so far.
func (c *Cache) Counts() CacheCounts {
	return CacheCounts{Hits: c.hits.Load(), Misses: c.misses.Load(), Stores: c.stores.Load()}
}

// lookup fetches the cached results of tasks concurrently; out[i] is nil
// on a miss (or for a task that is not cached). keys[i] is the task's key
// ("" for none).
func (c *Cache) lookup(ctx context.Context, tasks []*pb.Task) (out []*pb.Result, keys []string) {
	out = make([]*pb.Result, len(tasks))
	keys = make([]string, len(tasks))
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

// store saves a fresh successful result under key, in the background.
func (c *Cache) store(key string, res *pb.Result) {
	if key == "" || res.GetCached() || res.GetOutcome() != pb.Outcome_OUTCOME_OK {
		return
	}
	v, err := proto.Marshal(res)
	if err != nil {
		return
	}
	c.puts.Add(1)
	go func() {
		defer c.puts.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if c.Store.Put(ctx, key, v, c.TTL) == nil {
			c.stores.Add(1)
		}
	}()
}

// Flush waits for the values being stored.
func (c *Cache) Flush() { c.puts.Wait() }
