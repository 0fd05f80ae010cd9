// Package usage holds the token and call counters of a run: what
// tokens.json, each step record and summary.json carry, written by the
// coordinator and read by reports.
package usage

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
	// CacheHits counts results served by the shared rollout cache (measured
	// by an earlier run): no call was made. SavedCalls, SavedInput and
	// SavedOutput are what those results cost when they were measured.
	CacheHits   int64 `json:"cache_hits,omitempty"`
	SavedCalls  int64 `json:"saved_calls,omitempty"`
	SavedInput  int64 `json:"saved_input_tokens,omitempty"`
	SavedOutput int64 `json:"saved_output_tokens,omitempty"`
	// Causes counts failed and retried call attempts by cause.
	Causes Causes `json:"failure_causes,omitzero"`
}

// Causes counts failed call attempts by cause: one per attempt that did
// not give a usable reply (a retried one, or the last one of a failed call).
type Causes struct {
	RateLimited    int64 `json:"rate_limited,omitempty"`
	Timeout        int64 `json:"timeout,omitempty"`
	Stall          int64 `json:"stall,omitempty"`
	Server5xx      int64 `json:"server_5xx,omitempty"`
	Transport      int64 `json:"transport,omitempty"`
	InvalidReply   int64 `json:"invalid_reply,omitempty"`
	Auth           int64 `json:"auth,omitempty"`
	InvalidRequest int64 `json:"invalid_request,omitempty"`
	Hedged         int64 `json:"hedged,omitempty"`
	Cancelled      int64 `json:"cancelled,omitempty"`
	Other          int64 `json:"other,omitempty"`
}

// fields lists the causes in report order with their fields.
func (c *Causes) fields() []struct {
	Name string
	N    *int64
} {
	return []struct {
		Name string
		N    *int64
	}{
		{"rate_limited", &c.RateLimited}, {"timeout", &c.Timeout}, {"stall", &c.Stall}, {"server_5xx", &c.Server5xx},
		{"transport", &c.Transport}, {"invalid_reply", &c.InvalidReply}, {"auth", &c.Auth},
		{"invalid_request", &c.InvalidRequest}, {"hedged", &c.Hedged}, {"cancelled", &c.Cancelled}, {"other", &c.Other},
	}
}

// AddNamed adds n attempts of the named cause (an unknown name counts as
// other).
func (c *Causes) AddNamed(name string, n int64) {
	for _, f := range c.fields() {
		if f.Name == name {
			*f.N += n
			return
		}
	}
	c.Other += n
}

// Named returns the non-zero counts in report order.
func (c Causes) Named() []NamedCount {
	var out []NamedCount
	for _, f := range c.fields() {
		if *f.N != 0 {
			out = append(out, NamedCount{f.Name, *f.N})
		}
	}
	return out
}

// NamedCount is one cause and its count.
type NamedCount struct {
	Name  string
	Count int64
}

// Total sums every cause.
func (c Causes) Total() int64 {
	var n int64
	for _, f := range c.fields() {
		n += *f.N
	}
	return n
}

// Add adds o to c.
func (c *Causes) Add(o Causes) {
	of := o.fields()
	for i, f := range c.fields() {
		*f.N += *of[i].N
	}
}

// Sub returns c − o.
func (c Causes) Sub(o Causes) Causes {
	of := o.fields()
	for i, f := range c.fields() {
		*f.N -= *of[i].N
	}
	return c
}

// Add adds o to t.
func (t *Totals) Add(o Totals) {
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
	t.CacheHits += o.CacheHits
	t.SavedCalls += o.SavedCalls
	t.SavedInput += o.SavedInput
	t.SavedOutput += o.SavedOutput
	t.Causes.Add(o.Causes)
}

// Sub returns t − o, field by field.
func (t Totals) Sub(o Totals) Totals {
	return Totals{
		Tasks: t.Tasks - o.Tasks, FailedTasks: t.FailedTasks - o.FailedTasks, Calls: t.Calls - o.Calls,
		FailedCalls: t.FailedCalls - o.FailedCalls, Retries: t.Retries - o.Retries, RateLimited: t.RateLimited - o.RateLimited,
		Input: t.Input - o.Input, Output: t.Output - o.Output, CacheRead: t.CacheRead - o.CacheRead,
		CacheWrite: t.CacheWrite - o.CacheWrite, Reasoning: t.Reasoning - o.Reasoning, InvalidReply: t.InvalidReply - o.InvalidReply,
		Reused: t.Reused - o.Reused, CacheHits: t.CacheHits - o.CacheHits, SavedCalls: t.SavedCalls - o.SavedCalls,
		SavedInput: t.SavedInput - o.SavedInput, SavedOutput: t.SavedOutput - o.SavedOutput,
		Causes: t.Causes.Sub(o.Causes),
	}
}

// Tokens is input + output.
func (t Totals) Tokens() int64 { return t.Input + t.Output }
