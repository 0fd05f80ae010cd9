package dispatch

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// refusals remembers, per task, the workers that reported they cannot
// serve it (OUTCOME_UNSUPPORTED: a newer wire version, an unknown kind).
// Such a report is not a result: the task stays in the queue for a worker
// that can serve it, and only when its deliveries run out is it recorded
// as failed, with these reasons in the error.
type refusals struct {
	mu sync.Mutex
	// by task id: the worker ids that refused it and the last reason each gave.
	by map[string]map[string]string
}

// refused notes res, a worker's report that it cannot serve a task.
func (d *Dispatcher) refused(res *pb.Result) {
	r := &d.refusals
	r.mu.Lock()
	if r.by == nil {
		r.by = map[string]map[string]string{}
	}
	w := r.by[res.GetTaskId()]
	if w == nil {
		w = map[string]string{}
		r.by[res.GetTaskId()] = w
	}
	_, seen := w[res.GetWorkerId()]
	w[res.GetWorkerId()] = res.GetError()
	r.mu.Unlock()
	if !seen {
		d.log.Warn("worker cannot serve task", "task_id", res.GetTaskId(), "worker_id", res.GetWorkerId(),
			"worker_wire_version", pb.EffectiveWireVersion(res.GetWireVersion()), "err", res.GetError())
	}
}

// refusal says which workers refused task id and why ("" when none did),
// and forgets them.
func (d *Dispatcher) refusal(id string) string {
	r := &d.refusals
	r.mu.Lock()
	w := r.by[id]
	delete(r.by, id)
	r.mu.Unlock()
	if len(w) == 0 {
		return ""
	}
	workers := make([]string, 0, len(w))
	for k := range w {
		workers = append(workers, k)
	}
	sort.Strings(workers)
	parts := make([]string, len(workers))
	for i, k := range workers {
		parts[i] = fmt.Sprintf("worker %s: %s", k, w[k])
	}
	return strings.Join(parts, "; ")
}
