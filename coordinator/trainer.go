package coordinator

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/coordinator/gate"
	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/prompts"
	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/telemetry"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// ErrCoverage stops a run whose gate would decide on too few scored items.
var ErrCoverage = errors.New("too few items scored")

// ErrBudget stops a run that reached one of its budgets.
var ErrBudget = errors.New("budget reached")

// ErrStopped stops a run on an operator's request (stop file, signal).
var ErrStopped = errors.New("stopped on request")

// Trainer runs the training loop. It owns the skill state and makes every
// decision; all model work goes through the hub's dispatcher.
//
// Resume is replay: task ids are deterministic functions of their inputs,
// so running the loop again over the same run dir re-derives every
// decision from recorded results and dispatches only what is missing. The
// event log is checked line by line against what was written before.
type Trainer struct {
	tracer trace.Tracer
	meters *telemetry.Meters
	s      Settings
	hub    *Hub
	log    *slog.Logger
	splits *bench.Splits
	prog   *Progress
	rd     *runDir
	acct   *Accounting

	// Decision state. Only the Run goroutine touches it.
	st         State
	buffer     []prompts.BufferEntry
	metaSkill  string
	selCache   map[string]measure
	epochSkill map[int]string // skill at the end of epoch e (after its slow update)
	epochLast  map[int]string // skill after the last step of epoch e (before its slow update)
	pairsCache map[int][]pairRecord

	// nextBatches are the next step's batches when it is in the same
	// epoch (what speculation may start early), else nil.
	nextBatches []plannedBatch
	// fill runs the seed skill's test evaluation in idle target time.
	fill *idleFill

	stopCheck   func() error
	waves       *waveLog
	preRecorded map[string]struct{}
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

// measure is a skill's score on the selection split.
type measure struct {
	Hard, Soft float64
	N, Scored  int
	Score      float64
	// Upper is the early-stop bound when the evaluation stopped early.
	Upper float64
	// Bonus is the density bonus included in Score.
	Bonus float64
	// Items are the per-item outcomes in item order (the paired gate
	// compares them item by item).
	Items []gate.Item
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
func (t *Trainer) SetFence(fence func() error) { t.rd.fence = fence }

// NewTrainer prepares a run. splits holds the benchmark items.
func NewTrainer(s Settings, hub *Hub, splits *bench.Splits, log *slog.Logger, prog *Progress) (*Trainer, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rd, err := openRunDir(s.RunDir, s.ConfigHash)
	if err != nil {
		return nil, err
	}
	if prog == nil {
		prog = NewProgress(nil, false)
	}
	t := &Trainer{
		s: s, hub: hub, log: log, splits: splits, prog: prog, rd: rd, tracer: noop.NewTracerProvider().Tracer(""),
		acct:       NewAccounting(),
		selCache:   map[string]measure{},
		epochSkill: map[int]string{},
		epochLast:  map[int]string{},
		pairsCache: map[int][]pairRecord{},
		waves:      openWaveLog(s.RunDir),
	}
	t.preRecorded = hub.D.RecordedIDs()
	hub.D.OnDuplicateSpend(func(res *pb.Result, stage string) {
		role, model := "optimizer", t.s.Optimizer.GetModel()
		if strings.Contains(res.GetTaskId(), "/rollout/") {
			role, model = "target", t.s.Target.GetModel()
		}
		t.acct.AddSpend(cmp.Or(stage, "unknown"), role, model, res)
	})
	return t, nil
}

// SetStopCheck installs a function consulted at every phase boundary; a
// non-nil error stops the run cleanly with that error.
func (t *Trainer) SetStopCheck(f func() error) { t.stopCheck = f }

// Accounting is the run's token accounting.
func (t *Trainer) Accounting() *Accounting { return t.acct }

func (t *Trainer) checkStop() error {
	if err := t.rd.failed(); err != nil {
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

// rollResult is one item's rollout outcome.
type rollResult struct {
	Item bench.Item
	// Res is nil when the task was cancelled before it ran.
	Res *pb.Result
}

func (r rollResult) ok() bool {
	return r.Res != nil && r.Res.GetOutcome() == pb.Outcome_OUTCOME_OK
}

func (r rollResult) hard() float64 { return r.Res.GetRollout().GetHard() }
func (r rollResult) soft() float64 { return r.Res.GetRollout().GetSoft() }

// rolloutReq describes one wave of rollouts.
type rolloutReq struct {
	Stage    string
	Step     int
	Skill    string
	Items    []bench.Item
	Split    string
	Sample   int
	Feedback bool
	// BatchSeed is passed to benchmarks that permute per batch.
	BatchSeed int64
	// Stop, if set, is called as results arrive (in arrival order, with the
	// results so far by item index); returning true cancels the rest.
	Stop func(done []rollResult, finished int) bool
}

// rollout runs one item per task with a skill and returns the results in
// item order. Task ids are content-addressed (skill, item, sample, split,
// benchmark config, target model), so the same measurement asked twice in
// a run is made once.
func (t *Trainer) rollout(ctx context.Context, rq rolloutReq) (_ []rollResult, _ bool, err error) {
	ctx, span := t.stageSpan(ctx, rq.Stage, len(rq.Items))
	defer telemetry.End(span, &err)
	tasks := t.rolloutTasks(rq)
	futs, err := t.submit(ctx, tasks)
	if err != nil {
		return nil, false, err
	}
	// A task whose result was already there (replayed, reused, or run in
	// the background) is not part of this wave's call graph.
	known := make([]bool, len(futs))
	for i, f := range futs {
		select {
		case <-f.Done():
			known[i] = true
		default:
		}
	}
	t.fill.foreground(len(futs))
	resolved := 0
	defer func() { t.fill.foreground(-(len(futs) - resolved)) }()
	out := make([]rollResult, len(rq.Items))
	for i, it := range rq.Items {
		out[i].Item = it
	}
	t.prog.StartWave(rq.Stage, len(tasks))
	waveStart := time.Now()
	ran := 0
	defer func() { t.waves.record(rq.Stage, "target", len(tasks), ran, waveStart) }()
	arrived := make(chan int, len(futs))
	for i, f := range futs {
		go func() {
			select {
			case <-f.Done():
				arrived <- i
			case <-ctx.Done():
			}
		}()
	}
	stopped := false
	for n := 0; n < len(futs); n++ {
		var i int
		select {
		case i = <-arrived:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
		res := futs[i].Result()
		resolved++
		t.fill.foreground(-1)
		if res.GetOutcome() == pb.Outcome_OUTCOME_CANCELLED {
			continue
		}
		out[i].Res = res
		if !known[i] && !t.replayed(tasks[i].GetId()) {
			ran++
		}
		t.account(rq.Stage, "target", tasks[i], res)
		t.prog.TaskDone(rq.Stage, res.GetOutcome() == pb.Outcome_OUTCOME_OK)
		if !stopped && rq.Stop != nil && rq.Stop(out, n+1) {
			stopped = true
			var ids []string
			for j, f := range futs {
				select {
				case <-f.Done():
				default:
					ids = append(ids, tasks[j].GetId())
				}
			}
			byID := make(map[string]*pb.Task, len(ids))
			for j := range futs {
				byID[tasks[j].GetId()] = tasks[j]
			}
			// A cancelled task a worker had already started may still
			// finish: its calls were made, so they count.
			t.hub.D.CancelWith(ctx, func(res *pb.Result) {
				if task := byID[res.GetTaskId()]; task != nil {
					t.account(rq.Stage, "target", task, res)
				}
			}, ids...)
		}
	}
	return out, stopped, nil
}

// submit publishes tasks, re-dispatching recorded failures once when the
// run retries failed tasks.
func (t *Trainer) submit(ctx context.Context, tasks []*pb.Task) ([]*dispatchFuture, error) {
	if t.s.RetryFailed {
		for _, task := range tasks {
			if r, ok := t.hub.D.Lookup(task.GetId()); ok && r.GetOutcome() != pb.Outcome_OUTCOME_OK {
				task.Id += "~retry"
			}
		}
	}
	futs, err := t.hub.D.Submit(ctx, tasks...)
	if err != nil {
		return nil, fmt.Errorf("dispatch: %w", err)
	}
	return futs, nil
}

// optimizerKind maps a prompt name to the task kind that carries it.
func optimizerTask(name string, ot *pb.OptimizerTask) (*pb.Task, error) {
	t := &pb.Task{}
	switch name {
	case prompts.AnalystFailure, prompts.AnalystSuccess:
		t.Kind = &pb.Task_Reflect{Reflect: ot}
	case prompts.MergeFailure, prompts.MergeSuccess, prompts.MergeFinal:
		t.Kind = &pb.Task_Merge{Merge: ot}
	case prompts.Ranking:
		t.Kind = &pb.Task_Rank{Rank: ot}
	case prompts.LRController:
		t.Kind = &pb.Task_Lr{Lr: ot}
	case prompts.Rewrite:
		t.Kind = &pb.Task_Rewrite{Rewrite: ot}
	case prompts.SlowUpdate:
		t.Kind = &pb.Task_SlowUpdate{SlowUpdate: ot}
	case prompts.MetaSkill:
		t.Kind = &pb.Task_Meta{Meta: ot}
	case prompts.Consolidate:
		t.Kind = &pb.Task_Consolidate{Consolidate: ot}
	default:
		return nil, fmt.Errorf("unknown prompt %q", name)
	}
	return t, nil
}

// optCall is one optimizer call to make.
type optCall struct {
	Stage   string
	Step    int
	Name    string
	Index   int
	Mode    string
	Model   *pb.ModelSpec
	Payload any
	// Skill is the skill text the payload embeds (for the hash only).
	Skill string
}

// optResult is an optimizer call's outcome: JSON when OK.
type optResult struct {
	OK    bool
	JSON  []byte
	Error string
}

// optimize runs optimizer calls concurrently and returns their outcomes in order.
func (t *Trainer) optimize(ctx context.Context, calls []optCall) (_ []optResult, err error) {
	ctx, span := t.stageSpan(ctx, calls[0].Stage, len(calls))
	defer telemetry.End(span, &err)
	tasks := make([]*pb.Task, len(calls))
	for i, c := range calls {
		payload, err := json.Marshal(c.Payload)
		if err != nil {
			return nil, fmt.Errorf("encode %s payload: %w", c.Name, err)
		}
		model := c.Model
		if model == nil {
			model = t.s.Optimizer
		}
		mb, _ := proto.Marshal(model)
		id := hashHex([]byte(c.Name), []byte(c.Mode), []byte(t.s.Bench), payload, mb)
		ot := &pb.OptimizerTask{Model: model, Prompt: c.Name, Mode: c.Mode, Bench: t.s.Bench, Payload: payload, SkillHash: skillHash(c.Skill)}
		task, err := optimizerTask(c.Name, ot)
		if err != nil {
			return nil, err
		}
		task.Id = fmt.Sprintf("%s/%s/s%04d/%s-%03d-%s", t.s.RunID, c.Stage, c.Step, c.Name, c.Index, id[:12])
		task.RunId, task.Step, task.Stage = t.s.RunID, int32(c.Step), c.Stage
		task.TimeoutMs = t.s.TaskTimeout.Milliseconds()
		tasks[i] = task
	}
	futs, err := t.submit(ctx, tasks)
	if err != nil {
		return nil, err
	}
	t.fill.optimizerWave(ctx)
	t.prog.StartWave(calls[0].Stage, len(tasks))
	waveStart := time.Now()
	ran := 0
	defer func() { t.waves.record(calls[0].Stage, "optimizer", len(tasks), ran, waveStart) }()
	out := make([]optResult, len(calls))
	for i, f := range futs {
		res, err := f.Wait(ctx)
		if err != nil {
			return nil, err
		}
		t.account(calls[i].Stage, "optimizer", tasks[i], res)
		if !t.replayed(tasks[i].GetId()) {
			ran++
		}
		ok := res.GetOutcome() == pb.Outcome_OUTCOME_OK
		t.prog.TaskDone(calls[i].Stage, ok)
		out[i] = optResult{OK: ok, JSON: res.GetOptimizer().GetJson(), Error: res.GetError()}
		if !ok {
			t.log.WarnContext(ctx, "optimizer call failed", "stage", calls[i].Stage, "step", calls[i].Step, "task_id", tasks[i].GetId(), "outcome", res.GetOutcome().String(), "err", res.GetError())
		}
	}
	return out, nil
}

// optimizeOne runs one call and decodes its reply into out.
func (t *Trainer) optimizeOne(ctx context.Context, c optCall, out any) (bool, error) {
	rs, err := t.optimize(ctx, []optCall{c})
	if err != nil {
		return false, err
	}
	if !rs[0].OK {
		return false, nil
	}
	if err := json.Unmarshal(rs[0].JSON, out); err != nil {
		t.log.WarnContext(ctx, "optimizer reply has the wrong shape", "stage", c.Stage, "step", c.Step, "prompt", c.Name, "err", err)
		t.acct.CountInvalid(c.Stage)
		return false, nil
	}
	return true, nil
}

func (t *Trainer) account(stage, role string, task *pb.Task, res *pb.Result) {
	model := ""
	switch k := task.GetKind().(type) {
	case *pb.Task_Rollout:
		model = k.Rollout.GetTarget().GetModel()
	default:
		model = t.s.Optimizer.GetModel()
	}
	if first := t.acct.Add(stage, role, model, res); first && res.GetCached() && t.meters != nil {
		u := res.GetUsage()
		t.meters.RecordCacheHit(context.Background(), queue.KindOf(task), u.GetInputTokens()+u.GetOutputTokens())
	}
}

// measureSel scores a skill on the selection split, with early stop against
// beat when set (beat < 0 disables it). It returns the measure, whether the
// evaluation stopped early, and the coverage error if too few items scored.
// The means, the early-stop bound and the coverage check are package gate's.
func (t *Trainer) measureSel(ctx context.Context, stage string, step int, skillText string, beat float64) (measure, bool, error) {
	items := t.selItems()
	n := len(items)
	density := t.densityBonus(skillText)
	if t.s.GateRepeats > 1 {
		return t.measureRepeated(ctx, stage, step, skillText, density)
	}
	var upper float64
	var stopFn func([]rollResult, int) bool
	// Early stop is valid with the paired test too: a candidate that
	// cannot strictly beat current is rejected whatever its p-value.
	if t.s.EarlyStop && beat >= 0 && t.s.GateMetric != "" {
		stopFn = func(done []rollResult, _ int) bool {
			stop, ub := gate.EarlyStop(gateItems(done), t.s.GateMetric, t.s.MixedWeight, density, beat)
			upper = ub
			return stop
		}
	}
	rs, stopped, err := t.rollout(ctx, rolloutReq{Stage: stage, Step: step, Skill: skillText, Items: items, Split: bench.SplitVal, Stop: stopFn})
	if err != nil {
		return measure{}, false, err
	}
	m := summarize(rs)
	m.Bonus = density
	m.Score = gate.Score(m.Hard, m.Soft, t.s.GateMetric, t.s.MixedWeight) + density
	if stopped {
		m.Upper = upper
		return m, true, nil
	}
	if _, ok := gate.Coverage(m.Scored, n, t.s.MinCoverage); n > 0 && !ok {
		return m, false, fmt.Errorf("%w: %s scored %d of %d selection items (min_coverage %.2f); infrastructure failures, see the worker logs", ErrCoverage, stage, m.Scored, n, t.s.MinCoverage)
	}
	return m, false, nil
}

// measureRepeated measures a skill gate_repeats times on every selection
// item (samples 0..R-1, which the target answers independently) and scores
// each item by its mean over the repeats it was scored in. Early stop does
// not apply: the bound is over one sample per item.
func (t *Trainer) measureRepeated(ctx context.Context, stage string, step int, skillText string, density float64) (measure, bool, error) {
	items := t.selItems()
	n := len(items)
	sum := make([]gate.Item, n)
	count := make([]int, n)
	for r := range t.s.GateRepeats {
		rs, _, err := t.rollout(ctx, rolloutReq{Stage: stage, Step: step, Skill: skillText, Items: items, Split: bench.SplitVal, Sample: r})
		if err != nil {
			return measure{}, false, err
		}
		for i, it := range gateItems(rs) {
			if it.Status == gate.Scored {
				sum[i].Hard += it.Hard
				sum[i].Soft += it.Soft
				count[i]++
			}
		}
	}
	for i := range sum {
		if count[i] == 0 {
			sum[i] = gate.Item{Status: gate.Failed}
			continue
		}
		sum[i] = gate.Item{Status: gate.Scored, Hard: sum[i].Hard / float64(count[i]), Soft: sum[i].Soft / float64(count[i])}
	}
	ms := gate.Measure(sum)
	m := measure{Hard: ms.Hard, Soft: ms.Soft, N: ms.Total, Scored: ms.Scored, Items: sum, Bonus: density}
	m.Score = gate.Score(m.Hard, m.Soft, t.s.GateMetric, t.s.MixedWeight) + density
	if _, ok := gate.Coverage(m.Scored, n, t.s.MinCoverage); n > 0 && !ok {
		return m, false, fmt.Errorf("%w: %s scored %d of %d selection items over %d repeats (min_coverage %.2f); infrastructure failures, see the worker logs", ErrCoverage, stage, m.Scored, n, t.s.GateRepeats, t.s.MinCoverage)
	}
	return m, false, nil
}

// pairedP is the p-value of the paired test that the candidate beats
// current on the selection items both were scored on: the exact McNemar
// test on hard outcomes when each item was measured once with the hard
// metric, else a paired bootstrap (2000 resamples, seeded by the run seed
// and the step) on per-item gate scores plus each skill's density bonus.
func (t *Trainer) pairedP(cur, cand measure, g int) (float64, error) {
	var a, b []float64
	hardOnce := t.s.GateRepeats <= 1 && t.s.GateMetric == gate.Hard && cur.Bonus == cand.Bonus
	for i := range min(len(cur.Items), len(cand.Items)) {
		x, y := cur.Items[i], cand.Items[i]
		if x.Status != gate.Scored || y.Status != gate.Scored {
			continue
		}
		if hardOnce {
			a, b = append(a, x.Hard), append(b, y.Hard)
			continue
		}
		a = append(a, gate.Score(x.Hard, x.Soft, t.s.GateMetric, t.s.MixedWeight)+cur.Bonus)
		b = append(b, gate.Score(y.Hard, y.Soft, t.s.GateMetric, t.s.MixedWeight)+cand.Bonus)
	}
	if hardOnce {
		r, err := gate.McNemar(a, b, gate.Greater)
		return r.P, err
	}
	r, err := gate.Bootstrap(a, b, pairedResamples, t.s.Seed*1000+int64(g), gate.Greater)
	return r.P, err
}

// pairedResamples is the paired bootstrap's resample count.
const pairedResamples = 2000

// gateItems are rollout results (in item order) as the gate sees them: a
// result not yet in is pending, one that is not OK failed.
func gateItems(rs []rollResult) []gate.Item {
	out := make([]gate.Item, len(rs))
	for i, r := range rs {
		switch {
		case r.Res == nil:
			out[i] = gate.Item{Status: gate.Pending}
		case r.ok():
			out[i] = gate.Item{Status: gate.Scored, Hard: r.hard(), Soft: r.soft()}
		default:
			out[i] = gate.Item{Status: gate.Failed}
		}
	}
	return out
}

// summarize measures results in item order (gate.Measure); it keeps the
// per-item outcomes for the paired gate.
func summarize(rs []rollResult) measure {
	items := gateItems(rs)
	for i := range items {
		if items[i].Status == gate.Pending {
			items[i].Status = gate.Failed // cancelled: no score
		}
	}
	ms := gate.Measure(items)
	return measure{Hard: ms.Hard, Soft: ms.Soft, N: ms.Total, Scored: ms.Scored, Items: items}
}

func (t *Trainer) selItems() []bench.Item {
	items := t.splits.Val
	if t.s.SelEnvNum > 0 && t.s.SelEnvNum < len(items) {
		items = items[:t.s.SelEnvNum]
	}
	return items
}

func (t *Trainer) testItems() []bench.Item {
	items := t.splits.Test
	if t.s.TestEnvNum > 0 && t.s.TestEnvNum < len(items) {
		items = items[:t.s.TestEnvNum]
	}
	return items
}

// byTaskType groups scored results by task type, with "overall".
func byTaskType(rs []rollResult) map[string]TypeScore {
	out := map[string]TypeScore{}
	add := func(k string, r rollResult) {
		s := out[k]
		s.Total++
		if r.ok() {
			s.Scored++
			s.Hard += r.hard()
			s.Soft += r.soft()
		}
		out[k] = s
	}
	for _, r := range rs {
		tt := r.Res.GetRollout().GetTaskType()
		if tt == "" {
			tt = r.Item.TaskType
		}
		if tt == "" {
			tt = "default"
		}
		add(tt, r)
		add("overall", r)
	}
	for k, s := range out {
		if s.Scored > 0 {
			s.Hard /= float64(s.Scored)
			s.Soft /= float64(s.Scored)
		}
		out[k] = s
	}
	return out
}

// TypeScore is a per-task-type score.
type TypeScore struct {
	Total  int     `json:"total"`
	Scored int     `json:"scored"`
	Hard   float64 `json:"hard_acc"`
	Soft   float64 `json:"soft_acc"`
}

func sortedKeys[M ~map[string]V, V any](m M) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// parallel runs fns concurrently and returns the first error.
func parallel(fns ...func() error) error {
	var wg sync.WaitGroup
	errs := make([]error, len(fns))
	for i, f := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// replayed reports whether a task's result came from the journal of an
// earlier process rather than from a worker in this one.
func (t *Trainer) replayed(id string) bool {
	_, ok := t.preRecorded[id]
	return ok
}

// rolloutTasks builds the tasks of a rollout request; their ids depend only
// on what determines the result (skill, item, sample, split, benchmark,
// target, feedback, batch seed), so equal requests share results.
func (t *Trainer) rolloutTasks(rq rolloutReq) []*pb.Task {
	hash := skillHash(rq.Skill)
	t.hub.AddSkill(hash, rq.Skill)
	target, _ := proto.Marshal(t.s.Target)
	tasks := make([]*pb.Task, len(rq.Items))
	for i, it := range rq.Items {
		fb := "0"
		if rq.Feedback {
			fb = "1"
		}
		id := hashHex([]byte(hash), []byte(it.ID), []byte(fmt.Sprint(rq.Sample)), []byte(rq.Split), []byte(t.s.BenchHash), target, []byte(fb), []byte(fmt.Sprint(rq.BatchSeed)), it.Raw)
		tasks[i] = &pb.Task{
			Id:        t.s.RunID + "/rollout/" + id[:24],
			RunId:     t.s.RunID,
			Step:      int32(rq.Step),
			Stage:     rq.Stage,
			TimeoutMs: t.s.TaskTimeout.Milliseconds(),
			Kind: &pb.Task_Rollout{Rollout: &pb.RolloutTask{
				Target: t.s.Target, Bench: t.s.Bench, BenchConfig: t.s.BenchConfig, Item: it.Raw,
				Split: rq.Split, SkillHash: hash, Sample: int32(rq.Sample), EvalFeedback: rq.Feedback, BatchSeed: rq.BatchSeed,
			}},
		}
	}
	return tasks
}
