package trainer

import (
	"context"
	"errors"
	"fmt"

	"github.com/skillfleet/skillfleet/coordinator/plan"
	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/rundir"
	"github.com/skillfleet/skillfleet/pkg/telemetry"
)

// The run-dir records are pkg/rundir's, shared with pkg/report.
type (
	// Summary is written to summary.json at the end of a run.
	Summary = rundir.Summary
	// StepRecord is written to steps/step_NNNN/record.json.
	StepRecord = rundir.StepRecord
	// BatchRecord describes one accumulation batch of a step.
	BatchRecord = rundir.BatchRecord
	// LRDecision is the autonomous learning-rate controller's decision.
	LRDecision = rundir.LRDecision
	// TypeScore is a per-task-type score.
	TypeScore = rundir.TypeScore
)

// Run trains from the initial skill (or continues a run dir) to the end
// and returns the summary.
func (t *Trainer) Run(ctx context.Context) (_ *Summary, err error) {
	ctx, span := telemetry.StartSpan(ctx, t.tracer, telemetry.SpanRun, telemetry.Attrs{Run: t.s.RunID})
	defer telemetry.End(span, &err)
	start := t.now()
	trainN := len(t.splits.Train)
	if t.s.TrainSize > 0 && t.s.TrainSize != trainN {
		return nil, fmt.Errorf("train.train_size is %d but the train split has %d items", t.s.TrainSize, trainN)
	}
	if trainN == 0 {
		return nil, errors.New("the train split is empty")
	}
	if len(t.selItems()) == 0 {
		return nil, errors.New("the val (selection) split is empty")
	}
	spe := plan.StepsPerEpoch(trainN, t.s.BatchSize, t.s.Accumulation)
	t.st = State{Version: 1, ConfigHash: t.s.ConfigHash, TotalSteps: t.s.NumEpochs * spe}
	init := t.s.SkillInit
	if t.s.SkillAware {
		init = injectAppendix(init)
	}
	t.setCurrent(init, 0, false, "initial_skill")
	t.st.Best, t.st.BestHash, t.st.BestOrigin = init, skillHash(init), "initial_skill"
	t.rd.WriteFile(SkillFile(0), t.s.SkillInit)
	if t.rd.Resuming() {
		t.log.InfoContext(ctx, "resuming run: replaying recorded results", "run_dir", t.s.RunDir, "events", t.rd.ExistingEvents())
		t.prog.Phase("resuming: replaying recorded results")
	}

	// Baseline.
	t.prog.Phase("baseline on selection split")
	m, _, err := t.measureSel(ctx, "baseline", 0, init, -1)
	if err != nil {
		return nil, err
	}
	t.selCache[t.st.CurrentHash] = m
	t.setCurrent(init, m.Score, true, "initial_skill")
	t.startIdleFill(ctx)
	t.st.BestScore = m.Score
	baseline := m.Score
	if err := t.rd.Emit(Event{Type: "baseline", CurrentHash: t.st.CurrentHash, BestHash: t.st.BestHash, CurrentScore: round6(m.Score), BestScore: round6(m.Score), Counts: map[string]int{"selection_items": m.N, "scored": m.Scored}}); err != nil {
		return nil, err
	}
	t.prog.Decision("baseline", m.Score, m.Score)
	if err := t.saveState(); err != nil {
		return nil, err
	}

	counts := map[string]int{}
	for e := 1; e <= t.s.NumEpochs; e++ {
		if err := t.runEpoch(ctx, e, spe, trainN); err != nil {
			return nil, err
		}
	}
	for _, ev := range t.rd.Emitted() {
		if ev.Type != "step" {
			continue
		}
		switch ev.Action {
		case ActAcceptNewBest, ActAccept, ActForceAccept:
			counts["accept"]++
		case ActReject:
			counts["reject"]++
		default:
			counts["skip"]++
		}
	}
	sum, err := t.final(ctx, baseline)
	if err != nil {
		return nil, fmt.Errorf("final evaluation: %w", err)
	}
	sum.Accepts, sum.Rejects, sum.Skips = counts["accept"], counts["reject"], counts["skip"]
	sum.WallTime = t.now().Sub(start).Seconds()
	sum.Prefetch = t.prefetchCounts()
	t.settleWithdrawn(ctx)
	sum.Hedge = t.hedge.hedgeCounts()
	sum.Tokens = t.acct.Total()
	t.rd.WriteJSON("summary.json", sum)
	t.rd.WriteJSON("tokens.json", t.acct.Report())
	t.st.Done = true
	t.st.Phase = "done"
	if err := t.saveState(); err != nil {
		return nil, err
	}
	return sum, nil
}

// final runs §1.6: final validation and promotion, then the test
// evaluations of baseline, best and final — all concurrently.
func (t *Trainer) final(ctx context.Context, baseline float64) (*Summary, error) {
	t.writeBest()
	sum := &Summary{Version: 1, RunID: t.s.RunID, Bench: t.s.Bench, TotalSteps: t.st.TotalSteps, BaselineScore: round6(baseline),
		BaselineHash: skillHash(t.s.SkillInit), BestSkillPath: "best_skill.md", SelectionEvalN: len(t.selItems())}
	if err := t.saveState(); err != nil {
		return nil, err
	}
	t.prog.Phase("final evaluation")
	t.fill.stop()
	same := t.st.CurrentHash == t.st.BestHash
	// The final selection comes first: it decides whether the final skill
	// is promoted, and so which skills are measured on test.
	if same {
		v := round6(t.st.BestScore)
		sum.FinalScore = &v
	} else {
		m, ok := t.selCache[t.st.CurrentHash]
		if !ok {
			var err error
			m, _, err = t.measureSel(ctx, "final_selection", t.st.TotalSteps, t.st.Current, -1)
			if err != nil {
				return nil, err
			}
		}
		v := round6(m.Score)
		sum.FinalScore = &v
		if m.Score > t.st.BestScore {
			sum.Promoted = true
			was := t.st.BestScore
			t.st.Best, t.st.BestHash, t.st.BestScore, t.st.BestStep, t.st.BestOrigin = t.st.Current, t.st.CurrentHash, m.Score, t.st.TotalSteps, t.st.CurrentOrigin
			t.writeBest()
			t.prog.Decision(fmt.Sprintf("final: the final skill is promoted to best (selection %.3f → %.3f)", was, m.Score), t.st.CurrentScore, t.st.BestScore)
		}
	}
	// Then each distinct skill that is reported — baseline, best (after
	// any promotion), final — is measured on test once, all at once.
	tests := map[string][]rollResult{}
	if t.s.EvalTest {
		type job struct {
			names []string
			skill string
		}
		var jobs []*job
		byHash := map[string]*job{}
		for _, n := range []struct{ name, skill string }{{"baseline", t.s.SkillInit}, {"best", t.st.Best}, {"final", t.st.Current}} {
			h := skillHash(n.skill)
			if j, ok := byHash[h]; ok {
				j.names = append(j.names, n.name)
				continue
			}
			j := &job{names: []string{n.name}, skill: n.skill}
			byHash[h] = j
			jobs = append(jobs, j)
		}
		results := make([][]rollResult, len(jobs))
		fns := make([]func() error, len(jobs))
		for i, j := range jobs {
			fns[i] = func() (err error) {
				results[i], _, err = t.rollout(ctx, rolloutReq{Stage: "test_" + j.names[0], Step: t.st.TotalSteps, Skill: j.skill, Items: t.testItems(), Split: bench.SplitTest})
				return err
			}
		}
		if err := parallel(fns...); err != nil {
			return nil, err
		}
		for i, j := range jobs {
			for _, n := range j.names {
				tests[n] = results[i]
			}
		}
	}
	sum.BestScore, sum.BestStep, sum.BestOrigin, sum.CurrentOrigin = round6(t.st.BestScore), t.st.BestStep, t.st.BestOrigin, t.st.CurrentOrigin
	sum.BestSkillHash, sum.FinalSkillHash = t.st.BestHash, t.st.CurrentHash
	ev := Event{Type: "final", BestHash: t.st.BestHash, CurrentHash: t.st.CurrentHash, BestScore: round6(t.st.BestScore), CurrentScore: round6(t.st.CurrentScore), Action: "done"}
	if sum.Promoted {
		ev.Action = "promote_final"
	}
	if t.s.EvalTest {
		sum.Test, sum.TestHard, sum.TestSoft = map[string]map[string]TypeScore{}, map[string]float64{}, map[string]float64{}
		sum.TestEvalN = len(t.testItems())
		ev.Scores = map[string]float64{}
		for _, name := range []string{"baseline", "best", "final"} {
			bt := byTaskType(tests[name])
			sum.Test[name] = bt
			sum.TestHard[name] = round6(bt["overall"].Hard)
			sum.TestSoft[name] = round6(bt["overall"].Soft)
			ev.Scores["test_"+name+"_hard"] = sum.TestHard[name]
			t.rd.WriteJSON(fmt.Sprintf("test_eval_%s/summary.json", name), bt)
		}
		db := round6(sum.TestHard["best"] - sum.TestHard["baseline"])
		df := round6(sum.TestHard["final"] - sum.TestHard["baseline"])
		sum.DeltaBestHard, sum.DeltaFinalHard = &db, &df
	}
	if err := t.rd.Emit(ev); err != nil {
		return nil, err
	}
	return sum, nil
}

func (t *Trainer) saveState() error {
	if err := t.rd.Failed(); err != nil {
		return err // never record progress past a file that was not written
	}
	t.st.CurrentPath = SkillFile(max(t.st.Step, 0))
	t.st.BestPath = "best_skill.md"
	return t.rd.WriteJSON("state.json", t.st)
}

// runEpoch runs one epoch's steps and its boundary under an epoch span,
// each step under its own span.
func (t *Trainer) runEpoch(ctx context.Context, e, spe, trainN int) (err error) {
	ctx, span := telemetry.StartSpan(ctx, t.tracer, telemetry.SpanEpoch, telemetry.Attrs{Epoch: e})
	defer telemetry.End(span, &err)
	t.st.Epoch = e
	t.buffer = nil
	batches := epochBatches(trainN, t.s.BatchSize, t.s.Accumulation, t.s.Seed, e, spe)
	for s := range spe {
		if err := t.checkStop(); err != nil {
			return err
		}
		g := (e-1)*spe + s + 1
		t.nextBatches = nil
		if s+1 < spe {
			t.nextBatches = batches[(s+1)*t.s.Accumulation : (s+2)*t.s.Accumulation]
		}
		sctx, sspan := telemetry.StartSpan(ctx, t.tracer, telemetry.SpanStep, telemetry.Attrs{Step: g})
		err := t.runStep(sctx, e, s, g, batches[s*t.s.Accumulation:(s+1)*t.s.Accumulation])
		telemetry.End(sspan, &err)
		if err != nil {
			return fmt.Errorf("step %d: %w", g, err)
		}
	}
	if err := t.epochBoundary(ctx, e, e*spe); err != nil {
		return fmt.Errorf("epoch %d boundary: %w", e, err)
	}
	return nil
}
