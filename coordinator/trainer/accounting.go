package trainer

import (
	"sort"
	"sync"

	"github.com/skillfleet/skillfleet/pkg/pricing"
	"github.com/skillfleet/skillfleet/pkg/usage"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// Totals counts calls and tokens (see [usage.Totals]).
type Totals = usage.Totals

type acctKey struct{ Stage, Role, Model string }

// Accounting aggregates usage reported in results per stage × role × model.
// It counts what workers report in results, never process-local counters.
type Accounting struct {
	mu sync.Mutex
	by map[acctKey]*Totals
	// seen holds the task ids already counted: a result is paid for once,
	// however often the loop uses it.
	seen map[string]struct{}
	// spent holds the attempt ids (Result.attempt_id) whose usage was
	// counted: an attempt is paid for once, however often its worker
	// reports it (a report sent again after a late ack, a spend report
	// after a RETRY of a report that was recorded after all) and whichever
	// path it comes by; a different attempt of a task counted before is
	// spend of its own.
	spent map[string]struct{}
}

// NewAccounting returns empty accounting.
func NewAccounting() *Accounting {
	return &Accounting{by: map[acctKey]*Totals{}, seen: map[string]struct{}{}, spent: map[string]struct{}{}}
}

// firstSpend reports whether res's usage is still to be counted, and
// marks it counted: true for a result without an attempt id (a worker
// before the field), unless [Accounting.AddHedged] saw its task.
func (a *Accounting) firstSpend(res *pb.Result) bool {
	id := res.GetAttemptId()
	if id == "" {
		return true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, dup := a.spent[id]; dup {
		return false
	}
	a.spent[id] = struct{}{}
	return true
}

// Add counts one task result and reports whether it was counted for the
// first time: a result whose task id was counted before only counts as
// reused, and as spend when it comes from another attempt than the one
// counted (a task withdrawn while it ran, whose spend was counted, and
// asked for again).
func (a *Accounting) Add(stage, role, model string, res *pb.Result) (first bool) {
	if id := res.GetTaskId(); id != "" {
		a.mu.Lock()
		_, dup := a.seen[id]
		a.seen[id] = struct{}{}
		a.mu.Unlock()
		if dup {
			var d Totals
			if res.GetAttemptId() != "" && !res.GetCached() && a.firstSpend(res) {
				model, d = usageTotals(model, res)
			}
			d.Reused = 1
			a.addTotals(acctKey{stage, role, model}, d)
			return false
		}
	}
	model, d := usageTotals(model, res)
	if res.GetCached() {
		a.addTotals(acctKey{stage, role, model}, Totals{CacheHits: 1, SavedCalls: d.Calls, SavedInput: d.Input, SavedOutput: d.Output})
		return true
	}
	if !a.firstSpend(res) {
		// Its attempt's usage came in before (a spend report): the task
		// counts, its calls do not again.
		d = Totals{}
	}
	d.Tasks = 1
	if res.GetOutcome() != pb.Outcome_OUTCOME_OK {
		d.FailedTasks = 1
	}
	if res.GetOutcome() == pb.Outcome_OUTCOME_INVALID_REPLY {
		d.InvalidReply = 1
	}
	a.addTotals(acctKey{stage, role, model}, d)
	return true
}

func (a *Accounting) addTotals(k acctKey, d Totals) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.by[k]
	if t == nil {
		t = &Totals{}
		a.by[k] = t
	}
	t.Add(d)
}

// AddSpend counts the calls and tokens of a result that duplicates one
// already counted (the same task run again): spend, not a new task.
func (a *Accounting) AddSpend(stage, role, model string, res *pb.Result) {
	if !a.firstSpend(res) {
		return
	}
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
	t := Totals{
		Calls: int64(u.GetCalls()), FailedCalls: int64(u.GetFailedCalls()), Retries: int64(u.GetRetries()),
		RateLimited: int64(u.GetRateLimited()), Input: u.GetInputTokens(), Output: u.GetOutputTokens(),
		CacheRead: u.GetCacheReadTokens(), CacheWrite: u.GetCacheWriteTokens(), Reasoning: u.GetReasoningTokens(),
	}
	for name, n := range u.GetFailedCauses() {
		t.Causes.AddNamed(name, int64(n))
	}
	return model, t
}

// IsLingerNote reports whether res is a worker's note that a task the
// coordinator cancelled is still finishing a call: spend-only, cancelled,
// with no usage. Its spend comes in the task's final report.
func IsLingerNote(res *pb.Result) bool {
	return res.GetSpendOnly() && res.GetOutcome() == pb.Outcome_OUTCOME_CANCELLED && res.GetUsage() == nil
}

// HedgedStage is the stage tokens.json counts the losing attempts of
// hedged tasks under, whatever stage they were hedged in.
const HedgedStage = "hedged"

// AddHedged counts the result of a hedged task's losing attempt (the
// original or its copy, whichever answered second or was withdrawn while
// running) under [HedgedStage]: its calls and tokens are spend, each of
// its calls a hedged attempt; it is no task of its own.
//
// Each attempt is counted once: a loser run twice (redelivered while it
// ran, each run reporting when withdrawn) is the spend of both runs.
// Without attempt ids (an older worker), a task id is counted once.
func (a *Accounting) AddHedged(role, model string, res *pb.Result) {
	if id := res.GetTaskId(); id != "" {
		a.mu.Lock()
		_, dup := a.seen[id]
		a.seen[id] = struct{}{}
		a.mu.Unlock()
		if dup && res.GetAttemptId() == "" {
			return
		}
	}
	if !a.firstSpend(res) {
		return
	}
	model, d := usageTotals(model, res)
	d.Causes.Hedged += d.Calls
	a.addTotals(acctKey{HedgedStage, role, model}, d)
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
		s.Add(*t)
		out[k.Stage] = s
	}
	return out
}

// Since returns per-stage totals accumulated since an earlier Snapshot.
func (a *Accounting) Since(prev map[string]Totals) map[string]Totals {
	now := a.Snapshot()
	out := map[string]Totals{}
	for k, t := range now {
		d := t.Sub(prev[k])
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
		t.Add(*v)
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

// PriceRows returns the accounting as rows a price table prices.
func (a *Accounting) PriceRows() []pricing.Row {
	a.mu.Lock()
	defer a.mu.Unlock()
	rows := make([]pricing.Row, 0, len(a.by))
	for k, t := range a.by {
		rows = append(rows, pricing.Row{Stage: k.Stage, Role: k.Role, Model: k.Model, Calls: t.Calls,
			Input: t.Input, Output: t.Output, CacheRead: t.CacheRead, CacheWrite: t.CacheWrite})
	}
	return rows
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
