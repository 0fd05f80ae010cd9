package ui

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// fakeRun writes a run dir as the coordinator does, a step at a time.
type fakeRun struct {
	t     testing.TB
	dir   string
	steps int
	total int
	// skill is the text of every skill snapshot; edit the content of
	// every edit (both may hold markup: they are untrusted).
	skill, edit string
	// inputScale multiplies each step's rollout input tokens (1 if 0).
	inputScale int
}

func newFakeRun(t testing.TB, dir string, total int) *fakeRun {
	t.Helper()
	r := &fakeRun{t: t, dir: dir, total: total, skill: "# Skill\n\n- be careful\n", edit: "check the units"}
	r.write("run_id", "fake-run-1\n")
	r.write("skills/skill_v0000.md", r.skill)
	r.event(map[string]any{"type": "baseline", "current_score": 0.1, "best_score": 0.1})
	r.state()
	return r
}

func (r *fakeRun) write(rel, text string) {
	r.t.Helper()
	p := filepath.Join(r.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *fakeRun) writeJSON(rel string, v any) {
	r.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		r.t.Fatal(err)
	}
	r.write(rel, string(b))
}

func (r *fakeRun) event(ev map[string]any) {
	r.t.Helper()
	b, _ := json.Marshal(ev)
	f, err := os.OpenFile(filepath.Join(r.dir, "events.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		r.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		r.t.Fatal(err)
	}
}

func (r *fakeRun) score(step int) float64 { return 0.1 + 0.05*float64(step) }

func (r *fakeRun) state() {
	r.writeJSON("state.json", map[string]any{"phase": fmt.Sprintf("step_%04d", r.steps), "epoch": 1, "last_completed_step": r.steps,
		"total_steps": r.total, "current_score": r.score(r.steps), "best_score": r.score(r.steps), "best_step": r.steps,
		"current_skill_path": fmt.Sprintf("skills/skill_v%04d.md", r.steps)})
}

// step records one more step; odd steps are accepted, even ones rejected.
func (r *fakeRun) step() {
	r.t.Helper()
	r.steps++
	g := r.steps
	action := "accept_new_best"
	if g%2 == 0 {
		action = "reject"
	}
	edits := []map[string]any{{"op": "append", "target": "", "content": r.edit}, {"op": "replace", "target": "be careful", "content": "be careful, step " + fmt.Sprint(g)}}
	dir := fmt.Sprintf("steps/step_%04d/", g)
	r.writeJSON(dir+"merged_patch.json", map[string]any{"edits": edits})
	r.writeJSON(dir+"ranked_edits.json", map[string]any{"edits": edits[:1]})
	r.writeJSON(dir+"edit_apply_report.json", []map[string]any{{"index": 0, "op": "append", "target": "", "content_preview": r.edit, "status": "applied_append"}})
	r.write(dir+"candidate_skill.md", r.skill+r.edit+"\n")
	cand := r.score(g)
	scale := max(r.inputScale, 1)
	r.writeJSON(dir+"record.json", map[string]any{"step": g, "epoch": 1, "action": action, "rollout_hard": 0.2 + 0.01*float64(g), "rollout_soft": 0.3,
		"rollout_n": 8, "candidate_gate_score": cand, "current_score": cand, "best_score": cand, "wall_time_s": 2.0,
		"n_edits_merged": 2, "n_edits_ranked": 1, "edit_apply_summary": map[string]int{"applied_append": 1},
		"tokens": map[string]any{"rollout": map[string]int{"calls": 8, "tasks": 8, "input_tokens": 1000 * g * scale, "output_tokens": 100},
			"merge": map[string]int{"calls": 1, "tasks": 1, "input_tokens": 500, "output_tokens": 50, "retries": 1}}})
	r.write(fmt.Sprintf("skills/skill_v%04d.md", g), r.skill+r.edit+"\n")
	r.write("best_skill.md", r.skill+r.edit+"\n")
	r.event(map[string]any{"type": "step", "epoch": 1, "step": g, "action": action, "candidate_score": cand, "current_score": cand, "best_score": cand})
	r.state()
}

// finish writes what a finished run adds.
func (r *fakeRun) finish() { r.finishPromoted(0) }

// finishPromoted finishes the run; a promoted score above 0 ends it with
// the final skill, measured again, promoted over the best at that score.
func (r *fakeRun) finishPromoted(promoted float64) {
	best, bestStep := r.score(r.steps), r.steps
	if promoted > 0 {
		best, bestStep = promoted, r.total
	}
	r.writeJSON("summary.json", map[string]any{"run_id": "fake-run-1", "benchmark": "sim", "total_steps": r.total, "baseline_selection_score": 0.1,
		"best_selection_score": best, "best_step": bestStep, "final_promoted_to_best": promoted > 0, "test_hard": map[string]float64{"baseline": 0.2, "best": 0.5, "final": 0.45},
		"test_soft": map[string]float64{"baseline": 0.3, "best": 0.6, "final": 0.55}})
	r.writeJSON("tokens.json", map[string]any{"rows": []map[string]any{
		{"stage": "rollout", "role": "target", "model": "gpt-4o-mini", "calls": 8 * r.steps, "input_tokens": 1000, "output_tokens": 100},
		{"stage": "merge", "role": "optimizer", "model": "gpt-4o-mini", "calls": r.steps, "input_tokens": 500, "output_tokens": 50, "retries": 2, "rate_limited": 1,
			"failure_causes": map[string]int{"rate_limited": 1, "stall": 2}},
	}})
}
