package trainer_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	simmodel "github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/coordinator/trainer"
	"github.com/skillfleet/skillfleet/internal/fleettest"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// countingModel counts the calls its model answers.
type countingModel struct {
	llm.Model
	calls *atomic.Int64
}

func (m countingModel) Chat(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	m.calls.Add(1)
	return m.Model.Chat(ctx, req)
}

// TestPrefetchKeepsDecisions: prefetching the next step's rollouts into
// idle target slots changes no decision and no skill; the steps really
// take the prefetched rollouts over; the rollouts of steps whose gate
// accepted are withdrawn or paid for under the prefetch stage; and
// tokens.json still counts every call the model answered.
func TestPrefetchKeepsDecisions(t *testing.T) {
	t.Parallel()
	calls := new(atomic.Int64)
	// Calls take a few milliseconds, so prefetched rollouts are still
	// running when the optimizer waves and the gates come and go.
	m := countingModel{slowModel{simmodel.New(simmodel.Options{}), 3 * time.Millisecond}, calls}
	pre, sum, err := fleettest.RunDemo(t, m, idleFillOn, "runtime.prefetch=on", "train.num_epochs=3")
	if err != nil {
		t.Fatal(err)
	}
	ref, _, err := fleettest.RunDemo(t, nil, idleFillOn, "runtime.prefetch=off", "train.num_epochs=3")
	if err != nil {
		t.Fatal(err)
	}
	sameDecisions(t, ref, pre, "with runtime.prefetch=on")
	p := sum.Prefetch
	if p == nil || p.Steps == 0 || p.Released == 0 {
		t.Fatalf("nothing prefetched: %+v", p)
	}
	if p.Kept == 0 {
		t.Errorf("no step took prefetched rollouts over: %+v", p)
	}
	if p.Kept+p.Discarded != p.Released {
		t.Errorf("kept %d + discarded %d != released %d", p.Kept, p.Discarded, p.Released)
	}
	tok := readTokens(t, pre)
	refTok := readTokens(t, ref)
	if got, want := tok.ByStage["rollout"].Tasks, refTok.ByStage["rollout"].Tasks; got != want {
		t.Errorf("rollout tasks %d with prefetch, %d without", got, want)
	}
	accepted := 0
	for _, e := range fleettest.Events(t, pre) {
		if e.Type == "step" && (e.Action == trainer.ActAccept || e.Action == trainer.ActAcceptNewBest || e.Action == trainer.ActForceAccept) {
			accepted++
		}
	}
	if pf := tok.ByStage[trainer.PrefetchStage]; accepted > 0 && p.Discarded > 0 && pf.Calls == 0 && pf.Tasks == 0 {
		t.Logf("the %d discarded prefetched rollouts were all withdrawn before they ran", p.Discarded)
	}
	var billed int64
	for _, st := range tok.ByStage {
		billed += st.Calls
	}
	if billed != calls.Load() {
		t.Errorf("tokens.json counts %d calls, the model answered %d", billed, calls.Load())
	}
}
