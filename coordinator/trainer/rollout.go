package trainer

import (
	"context"
	"fmt"
	"slices"
	"strings"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/telemetry"
	"google.golang.org/protobuf/proto"
)

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
	// Order, if set, is the order the tasks are queued in: a permutation
	// of the item indices. Workers take tasks in queue order, so the
	// results Stop decides on can be made to come first. Results are
	// returned in item order whatever the order.
	Order []int
	// Window, if set, is how many tasks may be in flight given the
	// results so far (by item index): tasks are published in queue order
	// as results come in, and those not yet published when Stop fires are
	// never made. nil publishes every task at once.
	Window func(done []rollResult) int
}

// rollout runs one item per task with a skill and returns the results in
// item order. Task ids are content-addressed (skill, item, sample, split,
// benchmark config, target model), so the same measurement asked twice in
// a run is made once.
func (t *Trainer) rollout(ctx context.Context, rq rolloutReq) (_ []rollResult, _ bool, err error) {
	ctx, span := t.stageSpan(ctx, rq.Stage, len(rq.Items))
	defer telemetry.End(span, &err)
	tasks := t.rolloutTasks(rq)
	n := len(tasks)
	queue := queueOrder(rq.Order, rq.Items)
	futs := make([]Future, n)
	// known marks tasks whose result was already there when submitted
	// (replayed, reused, or run in the background): they are not part of
	// this wave's call graph.
	known := make([]bool, n)
	arrived := make(chan int, n)
	submitted := 0
	// The wave's stragglers are hedged: the loop waits for every result.
	hw := t.hedge.wave(ctx, rq.Stage, "target", t.s.Target.GetModel(), n, t.d.TargetSlots())
	defer hw.close()
	// submitTo publishes the tasks up to position k of the queue.
	submitTo := func(k int) error {
		k = min(k, n)
		if k <= submitted {
			return nil
		}
		idx := queue[submitted:k]
		batch := make([]*pb.Task, len(idx))
		for j, i := range idx {
			batch[j] = tasks[i]
		}
		fs, err := t.submit(ctx, batch)
		if err != nil {
			return err
		}
		hw.pending(n - k)
		fs = hw.track(batch, fs)
		for j, i := range idx {
			f := fs[j]
			futs[i] = f
			select {
			case <-f.Done():
				known[i] = true
			default:
			}
			go func() {
				select {
				case <-f.Done():
					arrived <- i
				case <-ctx.Done():
				}
			}()
		}
		submitted = k
		return nil
	}
	out := make([]rollResult, len(rq.Items))
	for i, it := range rq.Items {
		out[i].Item = it
	}
	first := n
	if rq.Window != nil {
		first = rq.Window(out)
	}
	if err := submitTo(first); err != nil {
		return nil, false, err
	}
	t.fill.foreground(n)
	resolved := 0
	defer func() { t.fill.foreground(-(n - resolved)) }()
	t.prog.StartWave(rq.Stage, n)
	waveStart := t.now()
	ran := 0
	defer func() { t.waves.Record(rq.Stage, "target", n, ran, waveStart) }()
	stopped := false
	for resolved < submitted {
		var i int
		select {
		case i = <-arrived:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
		res := futs[i].Result()
		resolved++
		t.fill.foreground(-1)
		if res.GetOutcome() != pb.Outcome_OUTCOME_CANCELLED {
			out[i].Res = res
			if !known[i] && !t.replayed(tasks[i].GetId()) {
				ran++
			}
			t.account(rq.Stage, "target", tasks[i], res)
			t.prog.TaskDone(rq.Stage, res.GetOutcome() == pb.Outcome_OUTCOME_OK)
			if !stopped && rq.Stop != nil && rq.Stop(out, resolved) {
				stopped = true
				t.cancelRest(ctx, rq.Stage, tasks, futs, queue[:submitted], hw)
			}
		}
		if !stopped && rq.Window != nil {
			if err := submitTo(resolved + rq.Window(out)); err != nil {
				return nil, false, err
			}
		}
	}
	t.recordPredictions(rq, tasks, out)
	return out, stopped, nil
}

// cancelRest withdraws the submitted tasks of a stopped wave that have no
// result yet, in queue order: the tasks workers would take next leave the
// queue first.
func (t *Trainer) cancelRest(ctx context.Context, stage string, tasks []*pb.Task, futs []Future, queued []int, hw *hedgeWave) {
	var ids []string
	byID := make(map[string]*pb.Task)
	for _, j := range queued {
		select {
		case <-futs[j].Done():
		default:
			ids = append(ids, tasks[j].GetId())
			byID[tasks[j].GetId()] = tasks[j]
		}
	}
	if len(ids) == 0 {
		return
	}
	// Their hedge copies go too (spend of the same task).
	for _, id := range hw.copyIDs(ids) {
		ids = append(ids, id)
		byID[id] = byID[strings.TrimSuffix(id, hedgeSuffix)]
	}
	// A cancelled task a worker had already started may still finish: its
	// calls were made, so they count.
	t.withdraw(ctx, func(res *pb.Result) {
		if task := byID[res.GetTaskId()]; task != nil {
			t.account(stage, "target", task, res)
		}
	}, byID, ids...)
}

// queueOrder is the order a wave's tasks are queued in: order if it is
// one, else the longest prompt first (item order among equals). A wave
// waits for its slowest task, and a longer prompt is the longer call
// that can be known before it is made: started first, it is less often
// the one the wave waits for.
func queueOrder(order []int, items []bench.Item) []int {
	if len(order) == len(items) {
		return order
	}
	out := make([]int, len(items))
	for i := range out {
		out[i] = i
	}
	slices.SortStableFunc(out, func(a, b int) int { return len(items[b].Raw) - len(items[a].Raw) })
	return out
}

// submit publishes tasks, re-dispatching recorded failures once when the
// run retries failed tasks.
func (t *Trainer) submit(ctx context.Context, tasks []*pb.Task) ([]Future, error) {
	t.hedge.substitute(tasks)
	if t.s.RetryFailed {
		for _, task := range tasks {
			if r, ok := t.d.Lookup(task.GetId()); ok && r.GetOutcome() != pb.Outcome_OUTCOME_OK {
				task.Id += "~retry"
			}
		}
	}
	futs, err := t.d.Submit(ctx, tasks...)
	if err != nil {
		return nil, fmt.Errorf("dispatch: %w", err)
	}
	return futs, nil
}

// rolloutTasks builds the tasks of a rollout request; their ids depend only
// on what determines the result (skill, item, sample, split, benchmark,
// target, feedback, batch seed), so equal requests share results.
func (t *Trainer) rolloutTasks(rq rolloutReq) []*pb.Task {
	hash := skillHash(rq.Skill)
	t.d.AddSkill(hash, rq.Skill)
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

// batchRollout is the training rollout of one accumulation batch of step g
// with a skill.
func (t *Trainer) batchRollout(g int, skill string, b plannedBatch) rolloutReq {
	items := make([]bench.Item, len(b.Indices))
	for i, idx := range b.Indices {
		items[i] = t.splits.Train[idx]
	}
	return rolloutReq{Stage: "rollout", Step: g, Skill: skill, Items: items, Split: bench.SplitTrain, Feedback: true, BatchSeed: b.Seed}
}
