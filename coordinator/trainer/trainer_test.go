package trainer_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	simmodel "github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/coordinator/trainer"
	"github.com/skillfleet/skillfleet/internal/fleettest"
	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// scripted wraps the sim model: override answers chosen prompts itself,
// and every request's prompt kind and user text are recorded.
type scripted struct {
	inner    llm.Model
	override func(kind string, payload json.RawMessage) (string, bool)

	mu    sync.Mutex
	calls []call
}

type call struct {
	Kind string
	User string
}

func (s *scripted) Chat(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	kind := simmodel.RequestKind(req)
	user := ""
	if n := len(req.Messages); n > 0 {
		user = req.Messages[n-1].Text()
	}
	s.mu.Lock()
	s.calls = append(s.calls, call{Kind: kind, User: user})
	s.mu.Unlock()
	if s.override != nil && kind != simmodel.KindTarget {
		_, payload, err := prompts.ExtractPayload(user)
		if err == nil {
			if reply, ok := s.override(kind, payload); ok {
				return &llm.Response{Content: reply, Usage: llm.Usage{InputTokens: 10, OutputTokens: 10}}, nil
			}
		}
	}
	return s.inner.Chat(ctx, req)
}

func (s *scripted) count(kind string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if c.Kind == kind {
			n++
		}
	}
	return n
}

// B11 + B8: an autonomous learning rate of 0 makes no ranking call, and
// the unchanged candidate is rejected without a selection rollout.
func TestZeroBudgetMakesNoRankCallAndNoGateRollout(t *testing.T) {
	t.Parallel()
	m := &scripted{inner: simmodel.New(simmodel.Options{}), override: func(kind string, _ json.RawMessage) (string, bool) {
		if kind == prompts.LRController {
			return `{"learning_rate": 0, "reasoning": "hold still", "confidence": "high", "risk_notes": []}`, true
		}
		return "", false
	}}
	dir, _, err := fleettest.RunDemo(t, m, "optimizer.lr_control_mode=autonomous", "train.num_epochs=1", "evaluation.eval_test=false")
	if err != nil {
		t.Fatal(err)
	}
	if n := m.count(prompts.Ranking); n != 0 {
		t.Errorf("ranking calls = %d, want 0 with a zero budget", n)
	}
	if m.count(prompts.LRController) == 0 {
		t.Fatal("no LR controller call was made")
	}
	for _, e := range fleettest.Events(t, dir) {
		if e.Type == "step" && e.Action != trainer.ActSkipNoPatches && (e.Action != trainer.ActReject || !e.Unchanged) {
			t.Errorf("step %d: action %s unchanged=%v, want reject of an unchanged candidate", e.Step, e.Action, e.Unchanged)
		}
	}
	// The selection split is measured twice: the baseline, and the final
	// validation of the current skill (it differs from the best by the
	// epoch-1 slow-update placeholder). No step measured a candidate.
	targets := m.count(simmodel.KindTarget)
	if want := 40 + 3*20 + 40; targets != want {
		t.Errorf("target calls = %d, want %d (baseline + train rollouts + final validation, no gate rollouts)", targets, want)
	}
}

// Meta-skill routing: the meta skill written at the end of epoch 2 reaches
// the analysts, merges, ranking and LR controller of epoch 3, but never the
// rewrite or slow-update calls.
func TestMetaSkillRouting(t *testing.T) {
	t.Parallel()
	const marker = "META-MARKER-7731"
	m := &scripted{inner: simmodel.New(simmodel.Options{}), override: func(kind string, _ json.RawMessage) (string, bool) {
		if kind == prompts.MetaSkill {
			return `{"reasoning": "r", "meta_skill_content": "` + marker + ` prefer replacing vague lines"}`, true
		}
		return "", false
	}}
	if _, _, err := fleettest.RunDemo(t, m, "evaluation.eval_test=false", "evaluation.use_gate=false"); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	calls := append([]call(nil), m.calls...)
	m.mu.Unlock()
	first := -1
	for i, c := range calls {
		if c.Kind == prompts.MetaSkill {
			first = i
			break
		}
	}
	if first < 0 {
		t.Fatal("no meta skill call")
	}
	routed := map[string]bool{prompts.AnalystFailure: true, prompts.AnalystSuccess: true, prompts.MergeFailure: true,
		prompts.MergeSuccess: true, prompts.MergeFinal: true, prompts.Ranking: true, prompts.LRController: true}
	after := 0
	for i, c := range calls {
		has := strings.Contains(c.User, marker)
		switch {
		case c.Kind == prompts.SlowUpdate || c.Kind == prompts.Rewrite:
			if has {
				t.Errorf("call %d (%s) saw the meta skill; it must not", i, c.Kind)
			}
		case routed[c.Kind] && i < first && has:
			t.Errorf("call %d (%s) saw the meta skill before it existed", i, c.Kind)
		case routed[c.Kind] && i > first:
			after++
			if !has {
				t.Errorf("call %d (%s) after the meta skill did not see it", i, c.Kind)
			}
		}
	}
	if after == 0 {
		t.Error("no optimizer call after the meta skill was written")
	}
}

// B6: a forced slow update changes the current skill without a score; it
// is marked unscored, never given a made-up cache entry.
func TestForcedSlowUpdateIsUnscored(t *testing.T) {
	t.Parallel()
	m := &scripted{inner: simmodel.New(simmodel.Options{}), override: func(kind string, _ json.RawMessage) (string, bool) {
		if kind == prompts.SlowUpdate {
			return `{"reasoning": "r", "slow_update_content": "- Always double-check the record number."}`, true
		}
		return "", false
	}}
	dir, _, err := fleettest.RunDemo(t, m, "train.num_epochs=2", "evaluation.eval_test=false")
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, e := range fleettest.Events(t, dir) {
		if e.Type == "slow_update" && e.Epoch == 2 {
			found = true
			if e.Action != trainer.ActForceAccept || !e.Unscored || e.CandidateScore != nil {
				t.Errorf("epoch 2 slow update event = %+v, want an unscored force_accept", e)
			}
		}
	}
	if !found {
		t.Fatal("no slow update event for epoch 2")
	}
	b, _ := os.ReadFile(filepath.Join(dir, "state.json"))
	var st struct {
		CurrentScored bool `json:"current_scored"`
	}
	_ = json.Unmarshal(b, &st)
	if st.CurrentScored {
		t.Error("state.json: current_scored = true after a forced slow update")
	}
}

// B14: a rewrite that drops the protected slow-update block gets it back.
func TestRewriteKeepsProtectedRegions(t *testing.T) {
	t.Parallel()
	m := &scripted{inner: simmodel.New(simmodel.Options{}), override: func(kind string, payload json.RawMessage) (string, bool) {
		if kind == prompts.Rewrite {
			return `{"reasoning": "r", "change_summary": ["rewrote"], "new_skill": "# Rewritten\n\n- Report distances in kilometres, never in miles.\n"}`, true
		}
		if kind == prompts.SlowUpdate {
			return `{"reasoning": "r", "slow_update_content": "- Keep the record number."}`, true
		}
		return "", false
	}}
	dir, _, err := fleettest.RunDemo(t, m, "optimizer.skill_update_mode=rewrite_from_suggestions", "train.num_epochs=2", "evaluation.eval_test=false", "evaluation.use_gate=false")
	if err != nil {
		t.Fatal(err)
	}
	// Steps of epoch 2 run after the epoch-1 placeholder: their candidates keep it.
	cand, err := os.ReadFile(filepath.Join(dir, "steps", "step_0004", "candidate_skill.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cand), "<!-- SLOW_UPDATE_START -->") || !strings.Contains(string(cand), "# Rewritten") {
		t.Errorf("rewritten candidate lost the protected region:\n%s", cand)
	}
}

// B7: an infrastructure failure is a typed outcome, never a score: the
// baseline that cannot score enough selection items stops the run.
func TestInfraFailuresAreNotScores(t *testing.T) {
	t.Parallel()
	w, err := simbench.Generate("demo", 7)
	if err != nil {
		t.Fatal(err)
	}
	broken := []string{w.Val[0].Question, w.Val[1].Question, w.Val[2].Question}
	m := &failing{inner: simmodel.New(simmodel.Options{}), match: broken}
	_, _, err = fleettest.RunDemo(t, m, "runtime.max_deliveries=1", "model.max_retries=0")
	if !errors.Is(err, trainer.ErrCoverage) {
		t.Fatalf("Run() error = %v, want ErrCoverage", err)
	}
	if !strings.Contains(err.Error(), "37 of 40") {
		t.Errorf("error %q does not say 37 of 40 items were scored", err)
	}
}

// failing answers 500 to target calls whose question matches.
type failing struct {
	inner llm.Model
	match []string
}

func (f *failing) Chat(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if simmodel.RequestKind(req) == simmodel.KindTarget {
		u := req.Messages[len(req.Messages)-1].Text()
		for _, q := range f.match {
			if strings.Contains(u, q) {
				return nil, &llm.Error{Kind: llm.KindServer, Status: 500, Msg: "injected"}
			}
		}
	}
	return f.inner.Chat(ctx, req)
}

// Every update mode and option combination runs end to end on the sim and
// does not end below its baseline.
func TestModesRun(t *testing.T) {
	t.Parallel()
	for _, sets := range [][]string{
		{"optimizer.skill_update_mode=full_rewrite_minibatch"},
		{"optimizer.skill_update_mode=rewrite_from_suggestions"},
		{"optimizer.use_skill_aware_reflection=true", "optimizer.skill_aware_consolidate_threshold=3"},
		{"optimizer.longitudinal_pair_policy=changed", "optimizer.slow_update_gate_with_selection=true"},
		{"optimizer.lr_control_mode=autonomous", "evaluation.use_semantic_density=true"},
		{"optimizer.use_slow_update=false", "train.accumulation=2", "gradient.failure_only=true"},
	} {
		t.Run(strings.Join(sets, ","), func(t *testing.T) {
			t.Parallel()
			m := &scripted{inner: simmodel.New(simmodel.Options{})}
			_, sum, err := fleettest.RunDemo(t, m, append(sets, "train.num_epochs=2")...)
			if err != nil {
				t.Fatal(err)
			}
			if sum.BestScore < sum.BaselineScore {
				t.Errorf("best selection score %.3f below baseline %.3f", sum.BestScore, sum.BaselineScore)
			}
		})
	}
}
