package trainer

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/prompts"
	"github.com/skillfleet/skillfleet/pkg/telemetry"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ErrCoverage stops a run whose gate would decide on too few scored items.
var ErrCoverage = errors.New("too few items scored")

// ErrBudget stops a run that reached one of its budgets.
var ErrBudget = errors.New("budget reached")

// ErrStopped stops a run on an operator's request (stop file, signal).
var ErrStopped = errors.New("stopped on request")

// Trainer runs the training loop. It owns the skill state and makes every
// decision; all model work goes through its [Dispatcher].
//
// Resume is replay: task ids are deterministic functions of their inputs,
// so running the loop again over the same run dir re-derives every
// decision from recorded results and dispatches only what is missing. The
// event log is checked line by line against what was written before.
type Trainer struct {
	tracer trace.Tracer
	meters *telemetry.Meters
	s      Settings
	d      Dispatcher
	log    *slog.Logger
	splits *bench.Splits
	prog   Progress
	rd     RunDir
	acct   *Accounting
	now    func() time.Time

	// Decision state. Only the Run goroutine touches it.
	st         State
	buffer     []prompts.BufferEntry
	metaSkill  string
	selCache   map[string]measure
	epochSkill map[int]string // skill at the end of epoch e (after its slow update)
	epochLast  map[int]string // skill after the last step of epoch e (before its slow update)

	// nextBatches are the next step's batches when it is in the same
	// epoch (what speculation may start early), else nil.
	nextBatches []plannedBatch
	// fill runs the seed skill's test evaluation in idle target time.
	fill *idleFill

	// hedge re-issues the stragglers of waves (nil: off).
	hedge *hedger
	// gone are the withdrawn tasks a worker may still be running.
	gone withdrawals

	stopCheck   func() error
	waves       Waves
	preRecorded map[string]struct{}
	// preds are the per-item lines of recent rollout waves (predictions.go).
	preds predictions
}

// State is the decision state, written to state.json after every phase.
type State struct {
	Version       int     `json:"version"`
	ConfigHash    string  `json:"config_hash"`
	Phase         string  `json:"phase"`
	Epoch         int     `json:"epoch"`
	Step          int     `json:"last_completed_step"`
	TotalSteps    int     `json:"total_steps"`
	Current       string  `json:"-"`
	Best          string  `json:"-"`
	CurrentHash   string  `json:"current_hash"`
	BestHash      string  `json:"best_hash"`
	CurrentPath   string  `json:"current_skill_path"`
	BestPath      string  `json:"best_skill_path"`
	CurrentScore  float64 `json:"current_score"`
	BestScore     float64 `json:"best_score"`
	CurrentScored bool    `json:"current_scored"`
	BestStep      int     `json:"best_step"`
	CurrentOrigin string  `json:"current_origin"`
	BestOrigin    string  `json:"best_origin"`
	SchedulerT    int     `json:"scheduler_t"`
	MetaSkill     string  `json:"meta_skill,omitempty"`
	Done          bool    `json:"done"`
}

// SetTelemetry traces the run: spans run > epoch > step > stage, whose
// context the dispatcher carries to the workers' task and model-call spans.
//
// meters (may be nil) count the rollout cache's hits and tokens saved.
func (t *Trainer) SetTelemetry(tr trace.Tracer, meters *telemetry.Meters) {
	if tr != nil {
		t.tracer = tr
	}
	t.meters = meters
}

// stageSpan starts the span of one stage wave.
func (t *Trainer) stageSpan(ctx context.Context, stage string, tasks int) (context.Context, trace.Span) {
	return telemetry.StartSpan(ctx, t.tracer, telemetry.StageSpanName(stage), telemetry.Attrs{Stage: stage},
		trace.WithAttributes(attribute.Int("skillfleet.tasks", tasks)))
}

// SetFence makes every decision (each new events.jsonl line) wait for
// fence to confirm this process still leads the run; an error from fence
// stops the run without writing the decision.
func (t *Trainer) SetFence(fence func() error) { t.rd.SetFence(fence) }

// New prepares a run with settings s over the benchmark items in splits.
func New(s Settings, splits *bench.Splits, d Deps) (*Trainer, error) {
	if d.Dispatch == nil || d.RunDir == nil {
		return nil, errors.New("trainer: Deps.Dispatch and Deps.RunDir are required")
	}
	t := &Trainer{
		s: s, d: d.Dispatch, log: d.Logger, splits: splits, prog: d.Progress, rd: d.RunDir, waves: d.Waves, now: d.Now,
		tracer: noop.NewTracerProvider().Tracer(""), preRecorded: d.Replayed,
		acct:       NewAccounting(),
		selCache:   map[string]measure{},
		epochSkill: map[int]string{},
		epochLast:  map[int]string{},
	}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	if t.prog == nil {
		t.prog = noProgress{}
	}
	if t.waves == nil {
		t.waves = noWaves{}
	}
	if t.now == nil {
		t.now = time.Now
	}
	if s.Hedge.Enabled {
		t.hedge = newHedger(t, s.Hedge, d.Replayed)
	}
	return t, nil
}

// AccountDuplicate counts the spend of a result that duplicates one
// already recorded (the same task run twice by the fleet): calls and
// tokens, not a new task. stage may be empty.
func (t *Trainer) AccountDuplicate(res *pb.Result, stage string) {
	if IsLingerNote(res) {
		// Not spend: a withdrawn attempt says it is finishing a call.
		t.gone.linger(res.GetTaskId(), t.now())
		return
	}
	role, model := "optimizer", t.s.Optimizer.GetModel()
	if strings.Contains(res.GetTaskId(), "/rollout/") {
		role, model = "target", t.s.Target.GetModel()
	}
	t.acct.AddSpend(cmp.Or(stage, "unknown"), role, model, res)
	if !res.GetSpendOnly() {
		t.gone.done(res.GetTaskId(), t.now())
	}
}

// SetStopCheck installs a function consulted at every phase boundary; a
// non-nil error stops the run cleanly with that error.
func (t *Trainer) SetStopCheck(f func() error) { t.stopCheck = f }

// Accounting is the run's token accounting.
func (t *Trainer) Accounting() *Accounting { return t.acct }

func (t *Trainer) checkStop() error {
	if err := t.rd.Failed(); err != nil {
		return err
	}
	if t.stopCheck != nil {
		if err := t.stopCheck(); err != nil {
			return err
		}
	}
	return nil
}

func hashHex(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		var n [8]byte
		l := len(p)
		for i := range 8 {
			n[i] = byte(l >> (8 * i))
		}
		h.Write(n[:])
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// replayed reports whether a task's result came from the journal of an
// earlier process rather than from a worker in this one.
func (t *Trainer) replayed(id string) bool {
	_, ok := t.preRecorded[id]
	return ok
}
