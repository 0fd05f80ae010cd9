package trainer

import (
	"context"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// speculation is the next step's rollouts started before the gate decided
// which skill the step will use.
type speculation struct {
	t       *Trainer
	bySkill map[string][]*pb.Task
}

// speculate submits step g's rollouts for each of skills when the run
// speculates and step g is in the current epoch. The real step later
// submits the same task ids and so picks up these futures or results.
func (t *Trainer) speculate(ctx context.Context, g int, skills ...string) (*speculation, error) {
	sp := &speculation{t: t}
	if !t.s.Speculate || t.nextBatches == nil {
		return sp, nil
	}
	sp.bySkill = map[string][]*pb.Task{}
	for _, sk := range skills {
		if _, dup := sp.bySkill[sk]; dup {
			continue
		}
		var tasks []*pb.Task
		for _, b := range t.nextBatches {
			tasks = append(tasks, t.rolloutTasks(t.batchRollout(g, sk, b))...)
		}
		futs, err := t.submit(ctx, tasks)
		if err != nil {
			return nil, err
		}
		sp.bySkill[sk] = tasks
		// Account each result as it lands: a branch the gate rules out is
		// still paid for (the real step's use of the other counts once).
		for i, f := range futs {
			go func() {
				if !landed(ctx, f) {
					return
				}
				if res := f.Result(); res.GetOutcome() != pb.Outcome_OUTCOME_CANCELLED {
					t.account("rollout", "target", tasks[i], res)
				}
			}()
		}
	}
	return sp, nil
}

// settle cancels the speculative rollouts of every skill but next (the one
// the next step will use), accounting any a worker finishes anyway.
func (sp *speculation) settle(ctx context.Context, next string) {
	keep := map[string]bool{}
	for _, task := range sp.bySkill[next] {
		keep[task.GetId()] = true
	}
	var ids []string
	byID := map[string]*pb.Task{}
	for sk, tasks := range sp.bySkill {
		if sk == next {
			continue
		}
		for _, task := range tasks {
			if !keep[task.GetId()] {
				ids = append(ids, task.GetId())
				byID[task.GetId()] = task
			}
		}
	}
	if len(ids) > 0 {
		sp.t.withdraw(ctx, func(res *pb.Result) {
			if task := byID[res.GetTaskId()]; task != nil {
				sp.t.account("rollout", "target", task, res)
			}
		}, byID, ids...)
	}
}
