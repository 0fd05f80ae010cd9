package trainer

import (
	"context"
	"log/slog"
	"time"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// Dispatcher runs the trainer's tasks: the consumer-side seam between the
// decisions (this package) and whatever executes model work — the
// coordinator's hub over NATS and gRPC, or an in-memory executor in tests.
//
// Task ids are content-addressed, so a dispatcher must treat a submitted id
// it already knows (in flight or recorded) as the same task: it returns the
// existing future or result and runs nothing new.
type Dispatcher interface {
	// Submit publishes tasks and returns one future per task, in order.
	Submit(ctx context.Context, tasks ...*pb.Task) ([]Future, error)
	// CancelWith cancels tasks that have not finished; their futures
	// resolve with OUTCOME_CANCELLED. A task already running may still
	// finish: late receives such a result (its calls were made). It
	// returns the ids of the cancelled tasks that a worker may still be
	// running, whose reports the run waits for at its end (nil: none to
	// wait for).
	CancelWith(ctx context.Context, late func(*pb.Result), ids ...string) []string
	// Lookup returns a recorded result.
	Lookup(id string) (*pb.Result, bool)
	// AddSkill makes a skill text available to the executors by hash
	// before a task naming the hash is submitted.
	AddSkill(hash, text string)
	// TargetSlots is how many target tasks the executors run at once
	// (0 when unknown); idle fill releases background work up to it.
	TargetSlots() int
}

// Future is a submitted task's eventual result.
type Future interface {
	// Done is closed when the result is in.
	Done() <-chan struct{}
	// Result is the result once Done is closed.
	Result() *pb.Result
	// Wait blocks until the result is in or ctx ends.
	Wait(ctx context.Context) (*pb.Result, error)
}

// RunDir is where the trainer writes the run directory: decisions
// (events.jsonl, replayed and checked on resume), snapshots and records.
type RunDir interface {
	// Emit appends a decision, or checks it against the recorded one when
	// the run resumes.
	Emit(Event) error
	// Emitted are the events emitted (or replayed) by this process.
	Emitted() []Event
	// WriteFile and WriteJSON write a file atomically; an error is also
	// kept and returned by Failed from then on.
	WriteFile(rel, text string) error
	WriteJSON(rel string, v any) error
	// Failed is the first write error, or nil.
	Failed() error
	// Resuming reports whether events were recorded before this process;
	// ExistingEvents is how many.
	Resuming() bool
	ExistingEvents() int
	// SetFence installs a check made before each new event is written.
	SetFence(func() error)
}

// Progress receives what the run is doing, for a terminal or dashboard.
type Progress interface {
	Step(epoch, epochs, step, steps int, cur, best float64)
	Phase(name string)
	StartWave(stage string, n int)
	TaskDone(stage string, ok bool)
	Decision(what string, cur, best float64)
}

// Waves records each wave of tasks the trainer dispatched and waited for
// (waves.jsonl: the run's call graph).
type Waves interface {
	Record(stage, class string, tasks, ran int, start time.Time)
}

// Deps are the trainer's collaborators. Dispatch and RunDir are required;
// the others default to doing nothing.
type Deps struct {
	Dispatch Dispatcher
	RunDir   RunDir
	Logger   *slog.Logger
	Progress Progress
	Waves    Waves
	// Replayed holds the ids of tasks whose results were recorded before
	// this process started (they are not part of this process's call graph).
	Replayed map[string]struct{}
	// Now is the clock for step timings (default time.Now).
	Now func() time.Time
}

type noProgress struct{}

func (noProgress) Step(int, int, int, int, float64, float64) {}
func (noProgress) Phase(string)                              {}
func (noProgress) StartWave(string, int)                     {}
func (noProgress) TaskDone(string, bool)                     {}
func (noProgress) Decision(string, float64, float64)         {}

type noWaves struct{}

func (noWaves) Record(string, string, int, int, time.Time) {}
