package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/skillfleet/skillfleet/pkg/queue"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// A worker serves every run on the fleet. Each task names its run; the
// worker finds the run's coordinator in the run directory (the
// [queue.RunsBucket] key-value bucket, where every live coordinator
// process lists its runs at its one address), falling back to the address
// written in the task, and keeps one gRPC connection per coordinator
// address it meets — one per process, however many of its runs it serves:
// dialled on demand, registered and heart-beaten while in use, closed when
// idle.

type clientKey struct{}

// ClientFrom returns the coordinator client of the task whose context this
// is (nil outside a task).
func ClientFrom(ctx context.Context) pb.CoordinatorClient {
	c, _ := ctx.Value(clientKey{}).(pb.CoordinatorClient)
	return c
}

func withClient(ctx context.Context, c pb.CoordinatorClient) context.Context {
	return context.WithValue(ctx, clientKey{}, c)
}

// errRunAway means the task's run has no live coordinator right now.
var errRunAway = errors.New("the run's coordinator is away")

// CoordinatorsConfig configures a worker's coordinator connections.
type CoordinatorsConfig struct {
	// Override, when set, sends every task's result to this address
	// (`worker --coordinator`), whatever the task or the directory say.
	Override string
	// Client, when set, is the one coordinator every task reports to (an
	// existing connection; tests and single-run embedding).
	Client pb.CoordinatorClient
	// Runs is the run directory (nil: tasks' own addresses only).
	Runs *queue.RunTable
	// Dial opens a connection to a coordinator address (TLS options live here).
	Dial func(addr string) (*grpc.ClientConn, error)
	// IdleTimeout closes a connection unused this long (default 2m).
	IdleTimeout time.Duration
}

// coordinators is the worker's set of coordinator connections.
type coordinators struct {
	cfg CoordinatorsConfig
	log *slog.Logger
	id  string
	// conc is reported at registration.
	conc int

	mu    sync.Mutex
	conns map[string]*coordConn
	fixed *coordConn
}

// coordConn is one coordinator: its client, its report stream and use.
type coordConn struct {
	addr       string
	cc         *grpc.ClientConn // nil for a fixed client
	client     pb.CoordinatorClient
	rep        *reporter
	inUse      int
	lastUsed   time.Time
	registered bool
	// takesSpend: the coordinator said at registration that it accounts
	// spend-only reports (Result.spend_only).
	takesSpend bool
}

func newCoordinators(cfg CoordinatorsConfig, id string, conc int, log *slog.Logger) *coordinators {
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 2 * time.Minute
	}
	c := &coordinators{cfg: cfg, log: log, id: id, conc: conc, conns: map[string]*coordConn{}}
	if cfg.Client != nil {
		c.fixed = &coordConn{addr: "(fixed)", client: cfg.Client, rep: newReporter(cfg.Client, log)}
	}
	return c
}

// route returns the coordinator address a task's result goes to, or
// errRunAway when its run has no live coordinator.
func (c *coordinators) route(t *pb.Task) (string, error) {
	if c.cfg.Override != "" {
		return c.cfg.Override, nil
	}
	if rt := c.cfg.Runs; rt != nil {
		info, known, live := rt.Lookup(t.GetRunId())
		switch {
		case known && live:
			return info.Addr, nil
		case known:
			return "", fmt.Errorf("%w (its entry in the run directory is stale)", errRunAway)
		}
		select {
		case <-rt.Ready():
			// The directory is loaded and does not list the run: it
			// ended or stopped. Only a task that names its coordinator
			// (one that does not announce itself) is tried.
			if t.GetCoordinator() == "" {
				return "", fmt.Errorf("%w (not in the run directory)", errRunAway)
			}
		default:
		}
	}
	if t.GetCoordinator() != "" {
		return t.GetCoordinator(), nil
	}
	return "", fmt.Errorf("%w (the task names no coordinator)", errRunAway)
}

// acquire returns the connection for a task, dialling and registering it
// if needed; release must follow.
func (c *coordinators) acquire(ctx context.Context, t *pb.Task) (*coordConn, error) {
	if c.fixed != nil {
		c.ensureRegistered(ctx, c.fixed)
		return c.fixed, nil
	}
	addr, err := c.route(t)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	cn, ok := c.conns[addr]
	if !ok {
		if c.cfg.Dial == nil {
			c.mu.Unlock()
			return nil, errors.New("no way to dial coordinators")
		}
		cc, err := c.cfg.Dial(addr)
		if err != nil {
			c.mu.Unlock()
			return nil, fmt.Errorf("dial coordinator %s: %w", addr, err)
		}
		client := pb.NewCoordinatorClient(cc)
		cn = &coordConn{addr: addr, cc: cc, client: client, rep: newReporter(client, c.log.With("coordinator", addr))}
		c.conns[addr] = cn
		c.log.Info("coordinator connection opened", "coordinator", addr, "run_id", t.GetRunId())
	}
	cn.inUse++
	cn.lastUsed = time.Now()
	c.mu.Unlock()
	c.ensureRegistered(ctx, cn)
	return cn, nil
}

func (c *coordinators) release(cn *coordConn) {
	c.mu.Lock()
	cn.inUse--
	cn.lastUsed = time.Now()
	c.mu.Unlock()
}

// ensureRegistered registers the worker with a coordinator once (best
// effort: a failure is retried at the next heartbeat).
func (c *coordinators) ensureRegistered(ctx context.Context, cn *coordConn) {
	c.mu.Lock()
	done := cn.registered
	c.mu.Unlock()
	if done {
		return
	}
	host, _ := os.Hostname()
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	resp, err := cn.client.Register(rctx, &pb.RegisterRequest{WorkerId: c.id, Hostname: host, Concurrency: int32(c.conc)})
	if err != nil {
		c.log.Debug("register with coordinator", "coordinator", cn.addr, "err", err)
		return
	}
	c.mu.Lock()
	cn.registered = true
	cn.takesSpend = resp.GetTakesSpendReports()
	c.mu.Unlock()
}

// all returns every open connection.
func (c *coordinators) all() []*coordConn {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*coordConn, 0, len(c.conns)+1)
	if c.fixed != nil {
		out = append(out, c.fixed)
	}
	for _, cn := range c.conns {
		out = append(out, cn)
	}
	return out
}

// heartbeat tells every connected coordinator this worker is alive, and
// closes connections idle for IdleTimeout.
func (c *coordinators) heartbeat(ctx context.Context, inFlight int32, completed int64, limits []*pb.LimitStatus) {
	for _, cn := range c.all() {
		hctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		resp, err := cn.client.Heartbeat(hctx, &pb.HeartbeatRequest{WorkerId: c.id, InFlight: inFlight, Completed: completed, Limits: limits})
		cancel()
		if err == nil && !resp.GetKnown() {
			c.mu.Lock()
			cn.registered = false // the coordinator restarted
			c.mu.Unlock()
			c.ensureRegistered(ctx, cn)
		}
	}
	c.reap(time.Now())
}

// reap closes connections nobody used for IdleTimeout.
func (c *coordinators) reap(now time.Time) {
	c.mu.Lock()
	var idle []*coordConn
	for addr, cn := range c.conns {
		if cn.inUse == 0 && now.Sub(cn.lastUsed) >= c.cfg.IdleTimeout {
			delete(c.conns, addr)
			idle = append(idle, cn)
		}
	}
	c.mu.Unlock()
	for _, cn := range idle {
		cn.rep.close()
		_ = cn.cc.Close()
		c.log.Info("coordinator connection closed (idle)", "coordinator", cn.addr)
	}
}

func (c *coordinators) close() {
	c.mu.Lock()
	conns := c.conns
	c.conns = map[string]*coordConn{}
	fixed := c.fixed
	c.mu.Unlock()
	if fixed != nil {
		fixed.rep.close()
	}
	for _, cn := range conns {
		cn.rep.close()
		_ = cn.cc.Close()
	}
}

// takesSpend reports whether cn's coordinator accounts spend-only reports.
func (c *coordinators) takesSpend(cn *coordConn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return cn.takesSpend
}
