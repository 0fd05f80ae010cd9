package ui

import (
	"context"
	"encoding/json"
	"time"

	"github.com/skillfleet/skillfleet/pkg/store"
)

// Fleet is the live fleet as the coordinator sees it: the workers connected
// to it, the shared registry's workers (every worker process announcing
// itself, whichever coordinator it serves), tasks awaiting results and
// the queue depth per scheduling class.
type Fleet struct {
	Workers       []FleetWorker      `json:"workers"`
	Registry      []store.WorkerInfo `json:"registry,omitempty"`
	RegistryError string             `json:"registry_error,omitempty"`
	// Pending tasks await results; Recorded results are journalled.
	Pending  int `json:"pending"`
	Recorded int `json:"recorded"`
	// Queues are the per-class queue depths (waiting and in delivery).
	Queues []QueueDepth `json:"queues,omitempty"`
	// Limits are the workers' rate limiters per model endpoint, as their
	// last heartbeats reported them.
	Limits []Headroom `json:"limits,omitempty"`
	Notes  []string   `json:"notes,omitempty"`
}

// FleetWorker is one worker connected to this coordinator.
type FleetWorker struct {
	ID          string    `json:"id"`
	Host        string    `json:"host,omitempty"`
	Concurrency int       `json:"concurrency"`
	InFlight    int       `json:"in_flight"`
	Completed   int64     `json:"completed"`
	LastSeen    time.Time `json:"last_seen"`
}

// QueueDepth is one scheduling class's queue.
type QueueDepth struct {
	Class string `json:"class"`
	// Waiting have not been delivered; InDelivery were delivered and not
	// yet acknowledged.
	Waiting    uint64 `json:"waiting"`
	InDelivery int    `json:"in_delivery"`
	Error      string `json:"error,omitempty"`
}

// Headroom is one model endpoint's rate limits in one worker and how much
// of them is left. A zero limit is none.
type Headroom struct {
	Worker   string `json:"worker"`
	Backend  string `json:"backend"`
	Endpoint string `json:"endpoint"`
	Model    string `json:"model"`
	// RPM and TPM are the per-minute limits; RequestsLeft and TokensLeft
	// what may start now. When Shared, the buckets are in Redis, shared by
	// every worker using the store: the coordinator reads their levels
	// from it (nil when it cannot).
	RPM          int64    `json:"requests_per_min,omitempty"`
	RequestsLeft *float64 `json:"requests_left,omitempty"`
	TPM          int64    `json:"tokens_per_min,omitempty"`
	TokensLeft   *float64 `json:"tokens_left,omitempty"`
	// MaxConcurrency is the configured in-flight cap, Cap the adaptive cap
	// now; InFlight and Waiting count calls running and waiting for a slot.
	MaxConcurrency int  `json:"max_concurrency,omitempty"`
	Cap            int  `json:"concurrency_cap,omitempty"`
	InFlight       int  `json:"in_flight"`
	Waiting        int  `json:"waiting"`
	Shared         bool `json:"shared,omitempty"`
}

// FleetView is what the Fleet page shows: the live fleet (nil when this
// process has none) and, per run served, retries and failures by cause.
type FleetView struct {
	Live  *Fleet     `json:"live,omitempty"`
	Error string     `json:"error,omitempty"`
	Runs  []FleetRun `json:"runs"`
	// Time is when Live was read (zero without a live fleet).
	Time time.Time `json:"time,omitzero"`
}

// FleetRun is one served run's retries and failures.
type FleetRun struct {
	Name     string       `json:"name"`
	Failures []FailureRow `json:"failures"`
}

func (s *Server) fleetView() (any, error) {
	v := &FleetView{Runs: []FleetRun{}}
	if s.o.Fleet != nil {
		ctx, cancel := context.WithTimeout(s.ctx, 3*time.Second)
		f, err := s.o.Fleet(ctx)
		cancel()
		if err != nil {
			v.Error = err.Error()
		} else {
			v.Live = f
		}
		v.Time = time.Now().Truncate(time.Second)
	}
	s.mu.Lock()
	targets := append([]*target(nil), s.targets...)
	s.mu.Unlock()
	for _, t := range targets {
		if t.campaign {
			continue
		}
		// The failures are in a run's live part.
		data := t.w.part("live")
		if data == nil {
			continue
		}
		var rv struct {
			Failures []FailureRow `json:"failures"`
		}
		if json.Unmarshal(data, &rv) == nil {
			v.Runs = append(v.Runs, FleetRun{Name: t.name, Failures: rv.Failures})
		}
	}
	return v, nil
}
