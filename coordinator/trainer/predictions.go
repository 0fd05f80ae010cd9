package trainer

import (
	"bytes"
	"encoding/json"
	"path"
	"strings"
	"sync"

	"github.com/skillfleet/skillfleet/pkg/prompts"
	"github.com/skillfleet/skillfleet/pkg/rundir"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// predictions keeps the lines of the waves of recent directories, so a
// directory's file, rewritten whole after each of its waves, holds every
// wave of it (a step's accumulation batches, a slow update's two skills,
// the repeats of a gate). A resumed run replays its waves in order and
// rewrites the same lines.
type predictions struct {
	mu    sync.Mutex
	lines map[string]map[string][]byte // dir -> task id -> line
	order map[string][]string          // dir -> task ids in first-seen order
	dirs  []string                     // dirs, oldest first
}

// predictionsKept is how many directories' lines stay in memory: enough
// for every wave a step or an epoch boundary runs at once.
const predictionsKept = 16

// recordPredictions writes the per-item lines of a finished wave. A write error is
// kept by the run dir (and stops the run as any other).
func (t *Trainer) recordPredictions(rq rolloutReq, tasks []*pb.Task, out []rollResult) {
	p := &t.preds
	dir := rundir.PredictionsDir(rq.Stage, rq.Step)
	p.mu.Lock()
	if p.lines == nil {
		p.lines, p.order = map[string]map[string][]byte{}, map[string][]string{}
	}
	m := p.lines[dir]
	if m == nil {
		m = map[string][]byte{}
		p.lines[dir] = m
		p.dirs = append(p.dirs, dir)
		if len(p.dirs) > predictionsKept {
			old := p.dirs[0]
			p.dirs = p.dirs[1:]
			delete(p.lines, old)
			delete(p.order, old)
		}
	}
	hash := skillHash(rq.Skill)
	for i, r := range out {
		if r.Res == nil {
			continue // cancelled before it ran: no prediction
		}
		ro := r.Res.GetRollout()
		line, err := json.Marshal(rundir.Prediction{
			ID: r.Item.ID, TaskType: ro.GetTaskType(), Split: rq.Split, Stage: rq.Stage, Step: rq.Step,
			Outcome: outcomeName(r.Res.GetOutcome()), Hard: ro.GetHard(), Soft: ro.GetSoft(), Prediction: ro.GetAnswer(),
			FailReason: ro.GetFailReason(), Error: r.Res.GetError(), NTurns: ro.GetNTurns(), SkillHash: hash,
			Sample: rq.Sample, BatchSeed: rq.BatchSeed, Cached: r.Res.GetCached(), TaskID: tasks[i].GetId(),
		})
		if err != nil {
			continue
		}
		id := tasks[i].GetId()
		if _, ok := m[id]; !ok {
			p.order[dir] = append(p.order[dir], id)
		}
		m[id] = line
	}
	var buf bytes.Buffer
	for _, id := range p.order[dir] {
		buf.Write(m[id])
		buf.WriteByte('\n')
	}
	// Written under the lock: two waves of one directory finishing
	// together must not leave the older file last.
	_ = t.rd.WriteFile(path.Join(dir, rundir.PredictionsFile), buf.String())
	p.mu.Unlock()
}

// outcomeName is an outcome as predictions and inspect name it: "ok",
// "model_error", ...
func outcomeName(o pb.Outcome) string {
	return strings.ToLower(strings.TrimPrefix(o.String(), "OUTCOME_"))
}

// recordMinibatch writes analyst call i of a batch of step g: the items it
// read and its reply.
func (t *Trainer) recordMinibatch(g int, br *batchReflect, i int, r optResult) {
	side := "succ"
	if br.sides[i] == prompts.AnalystFailure {
		side = "fail"
	}
	rec := rundir.Minibatch{Step: g, Side: side, Index: br.wave.calls[i].Index, Items: br.ids[i], OK: r.OK, Error: r.Error, TaskID: br.wave.tasks[i].GetId()}
	if json.Valid(r.JSON) {
		rec.Reply = r.JSON
	}
	_ = t.rd.WriteJSON(rundir.MinibatchFile(g, side, rec.Index), rec)
}
