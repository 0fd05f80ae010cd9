package dispatch_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/coordinator/dispatch"
	"github.com/skillfleet/skillfleet/pkg/store"
	"github.com/skillfleet/skillfleet/pkg/store/memstore"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// gatedStore is a real in-memory store whose puts wait for open to be
// closed; it keeps the most puts it saw in flight at once.
type gatedStore struct {
	store.Cache
	open           chan struct{}
	inflight, most atomic.Int64
}

func (g *gatedStore) Put(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	n := g.inflight.Add(1)
	defer g.inflight.Add(-1)
	for {
		m := g.most.Load()
		if n <= m || g.most.CompareAndSwap(m, n) {
			break
		}
	}
	select {
	case <-g.open:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.Cache.Put(ctx, key, value, ttl)
}

// TestCachePutsAreBoundedAndJoinedByRun: results recorded faster than the
// store takes them are stored a bounded number at a time, and the
// dispatcher's Run returns only once every one is stored.
func TestCachePutsAreBoundedAndJoinedByRun(t *testing.T) {
	const n = 100
	g := &gatedStore{Cache: memstore.New(memstore.Options{}).Cache(), open: make(chan struct{})}
	cache := &dispatch.Cache{Store: g, Key: func(t *pb.Task) (string, bool) { return "k/" + t.GetId(), true }}
	nc, js, stream := startQueue(t)
	d := dispatch.New(dispatch.Options{NC: nc, JS: js, Stream: stream, Cache: cache, RunPrefix: "r/"})
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- d.Run(ctx) }()

	tasks := make([]*pb.Task, n)
	for i := range tasks {
		tasks[i] = noopTask(fmt.Sprintf("r/c/%d", i))
	}
	if _, err := d.Submit(ctx, tasks...); err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		record(d, &pb.Result{TaskId: task.GetId(), Outcome: pb.Outcome_OUTCOME_OK})
	}
	cancel()
	var once sync.Once
	release := func() { once.Do(func() { close(g.open) }) }
	defer release()
	select {
	case err := <-ran:
		t.Fatalf("Run returned (%v) with %d puts waiting", err, n)
	case <-time.After(200 * time.Millisecond):
	}
	release()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	if got := cache.Counts().Stores; got != n {
		t.Errorf("Run returned with %d of %d results stored", got, n)
	}
	if most := g.most.Load(); most > 8 {
		t.Errorf("%d puts were in flight at once, want at most 8", most)
	}
}
