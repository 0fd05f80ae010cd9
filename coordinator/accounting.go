package coordinator

import (
	"sort"
	"sync"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// Totals counts calls and tokens.
type Totals struct {
	Tasks        int64 `json:"tasks"`
	FailedTasks  int64 `json:"failed_tasks"`
	Calls        int64 `json:"calls"`
	FailedCalls  int64 `json:"failed_calls"`
	Retries      int64 `json:"retries"`
	RateLimited  int64 `json:"rate_limited"`
	Input        int64 `json:"input_tokens"`
	Output       int64 `json:"output_tokens"`
	CacheRead    int64 `json:"cache_read_tokens"`
	CacheWrite   int64 `json:"cache_write_tokens"`
	Reasoning    int64 `json:"reasoning_tokens"`
	InvalidReply int64 `json:"invalid_replies"`
	// Reused counts results used again (a skill measured again on the same
	// items in this run): no call was made, so nothing else is counted.
	Reused int64 `json:"reused_results,omitempty"`
}

func (t *Totals) add(o Totals) {
	t.Tasks += o.Tasks
	t.FailedTasks += o.FailedTasks
	t.Calls += o.Calls
	t.FailedCalls += o.FailedCalls
	t.Retries += o.Retries
	t.RateLimited += o.RateLimited
	t.Input += o.Input
	t.Output += o.Output
	t.CacheRead += o.CacheRead
	t.CacheWrite += o.CacheWrite
	t.Reasoning += o.Reasoning
	t.InvalidReply += o.InvalidReply
	t.Reused += o.Reused
}

func (t Totals) sub(o Totals) Totals {
	return Totals{
		Tasks: t.Tasks - o.Tasks, FailedTasks: t.FailedTasks - o.FailedTasks, Calls: t.Calls - o.Calls,
		FailedCalls: t.FailedCalls - o.FailedCalls, Retries: t.Retries - o.Retries, RateLimited: t.RateLimited - o.RateLimited,
		Input: t.Input - o.Input, Output: t.Output - o.Output, CacheRead: t.CacheRead - o.CacheRead,
		CacheWrite: t.CacheWrite - o.CacheWrite, Reasoning: t.Reasoning - o.Reasoning, InvalidReply: t.InvalidReply - o.InvalidReply,
		Reused: t.Reused - o.Reused,
	}
}

// Tokens is input + output.
func (t Totals) Tokens() int64 { return t.Input + t.Output }

type acctKey struct{ Stage, Role, Model string }

// Accounting aggregates usage reported in results per stage × role × model.
// It counts what workers report in results, never process-local counters.
type Accounting struct {
	mu sync.Mutex
	by map[acctKey]*Totals
	// seen holds the task ids already counted: a result is paid for once,
	// however often the loop uses it.
	seen map[string]struct{}
}

// NewAccounting returns empty accounting.
func NewAccounting() *Accounting {
	return &Accounting{by: map[acctKey]*Totals{}, seen: map[string]struct{}{}}
}

// Add counts one task result. A result whose task id was counted before
// only counts as reused.
func (a *Accounting) Add(stage, role, model string, res *pb.Result) {
	if id := res.GetTaskId(); id != "" {
		a.mu.Lock()
		_, dup := a.seen[id]
		a.seen[id] = struct{}{}
		a.mu.Unlock()
		if dup {
			a.addTotals(acctKey{stage, role, model}, Totals{Reused: 1})
			return
		}
	}
	model, d := usageTotals(model, res)
	d.Tasks = 1
	if res.GetOutcome() != pb.Outcome_OUTCOME_OK {
		d.FailedTasks = 1
	}
	if res.GetOutcome() == pb.Outcome_OUTCOME_INVALID_REPLY {
		d.InvalidReply = 1
	}
	a.addTotals(acctKey{stage, role, model}, d)
}

func (a *Accounting) addTotals(k acctKey, d Totals) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.by[k]
	if t == nil {
		t = &Totals{}
		a.by[k] = t
	}
	t.add(d)
}

// AddSpend counts the calls and tokens of a result that duplicates one
// already counted (the same task run again): spend, not a new task.
func (a *Accounting) AddSpend(stage, role, model string, res *pb.Result) {
	model, d := usageTotals(model, res)
	a.addTotals(acctKey{stage, role, model}, d)
}

// usageTotals converts a result's usage; the model it names wins over the
// task's.
func usageTotals(model string, res *pb.Result) (string, Totals) {
	u := res.GetUsage()
	if u.GetModel() != "" {
		model = u.GetModel()
	}
	return model, Totals{
		Calls: int64(u.GetCalls()), FailedCalls: int64(u.GetFailedCalls()), Retries: int64(u.GetRetries()),
		RateLimited: int64(u.GetRateLimited()), Input: u.GetInputTokens(), Output: u.GetOutputTokens(),
		CacheRead: u.GetCacheReadTokens(), CacheWrite: u.GetCacheWriteTokens(), Reasoning: u.GetReasoningTokens(),
	}
}

// CountInvalid counts a reply that parsed as JSON but had the wrong shape.
func (a *Accounting) CountInvalid(stage string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := acctKey{stage, "optimizer", ""}
	t := a.by[k]
	if t == nil {
		t = &Totals{}
		a.by[k] = t
	}
	t.InvalidReply++
}

// Snapshot returns totals by stage.
func (a *Accounting) Snapshot() map[string]Totals {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]Totals{}
	for k, t := range a.by {
		s := out[k.Stage]
		s.add(*t)
		out[k.Stage] = s
	}
	return out
}

// Since returns per-stage totals accumulated since an earlier Snapshot.
func (a *Accounting) Since(prev map[string]Totals) map[string]Totals {
	now := a.Snapshot()
	out := map[string]Totals{}
	for k, t := range now {
		d := t.sub(prev[k])
		if d != (Totals{}) {
			out[k] = d
		}
	}
	return out
}

// Total sums everything.
func (a *Accounting) Total() Totals {
	a.mu.Lock()
	defer a.mu.Unlock()
	var t Totals
	for _, v := range a.by {
		t.add(*v)
	}
	return t
}

// Row is one line of tokens.json.
type Row struct {
	Stage string `json:"stage"`
	Role  string `json:"role"`
	Model string `json:"model"`
	Totals
}

// Report is the content of tokens.json.
func (a *Accounting) Report() map[string]any {
	a.mu.Lock()
	rows := make([]Row, 0, len(a.by))
	for k, t := range a.by {
		rows = append(rows, Row{Stage: k.Stage, Role: k.Role, Model: k.Model, Totals: *t})
	}
	a.mu.Unlock()
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Stage != rows[j].Stage {
			return rows[i].Stage < rows[j].Stage
		}
		if rows[i].Role != rows[j].Role {
			return rows[i].Role < rows[j].Role
		}
		return rows[i].Model < rows[j].Model
	})
	return map[string]any{"rows": rows, "by_stage": a.Snapshot(), "total": a.Total()}
}
