package trainer_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	simmodel "github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/coordinator/trainer"
	"github.com/skillfleet/skillfleet/internal/fleettest"
	"github.com/skillfleet/skillfleet/pkg/llm"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// holdWatch is a dispatcher that notes every submission of a task id
// another submission still waits on. Two waves holding one in-flight task
// share its future, and a cancel from either (a hedge copy that won, an
// early stop) resolves it as cancelled for both: the other wave then takes
// an infrastructure failure for a result, and what it decides depends on
// the timing.
type holdWatch struct {
	trainer.Dispatcher
	mu     sync.Mutex
	held   map[string]string // task id -> stage of the submission waiting on it
	shared []string
}

func (w *holdWatch) Submit(ctx context.Context, tasks ...*pb.Task) ([]trainer.Future, error) {
	futs, err := w.Dispatcher.Submit(ctx, tasks...)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, task := range tasks {
		id := task.GetId()
		select {
		case <-futs[i].Done():
			continue // recorded: nothing is shared in flight
		default:
		}
		// The seed skill's test evaluation is idle fill's background work
		// by design: the final evaluation finds it running and is never
		// cancelled.
		if prev, ok := w.held[id]; ok && task.GetStage() != "test_baseline" {
			w.shared = append(w.shared, fmt.Sprintf("%s (held by %s, submitted again by %s)", id, prev, task.GetStage()))
		}
		w.held[id] = task.GetStage()
		go func(f trainer.Future, id string) {
			<-f.Done()
			w.mu.Lock()
			delete(w.held, id)
			w.mu.Unlock()
		}(futs[i], id)
	}
	return futs, nil
}

// TestNoTwoWavesHoldOneTask trains the demo for four epochs (with its
// defaults, and with wave hedging on), so that an epoch
// changes nothing and its slow update pairs the skill with itself,
// and checks that no task is submitted while another wave still waits on
// it.
func TestNoTwoWavesHoldOneTask(t *testing.T) {
	t.Parallel()
	for name, extra := range map[string][]string{
		"defaults": nil,
		// Speculation is left out: the real step picks up the speculative
		// rollouts of the skill it uses by design (and speculation cancels
		// only the other skill's).
		"hedge": {"runtime.hedge=true"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := &holdWatch{held: map[string]string{}}
			r := fleettest.Runner{Wrap: func(d trainer.Dispatcher) trainer.Dispatcher { w.Dispatcher = d; return w }}
			dir := t.TempDir()
			// Each call takes a few milliseconds, so that a wave's tasks are
			// still in flight when a concurrent wave submits.
			m := slowModel{simmodel.New(simmodel.Options{}), 5 * time.Millisecond}
			sets := append([]string{"train.num_epochs=4", "optimizer.use_slow_update=true", "optimizer.use_meta_skill=true"}, extra...)
			if _, err := r.Run(t, dir, fleettest.Demo, m, sets...); err != nil {
				t.Fatal(err)
			}
			// The case this guards: an epoch that kept its skill (a slow
			// update pairing a skill with itself).
			var last string
			same := 0
			for _, e := range fleettest.Events(t, dir) {
				if e.Type != "slow_update" {
					continue
				}
				if e.CurrentHash == last {
					same++
				}
				last = e.CurrentHash
			}
			if same == 0 {
				t.Fatal("no epoch kept its skill: the test no longer covers a slow update pairing a skill with itself")
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			if len(w.shared) > 0 {
				t.Errorf("%d submissions of a task another wave still waits on, e.g.:\n%s", len(w.shared), strings.Join(w.shared[:min(5, len(w.shared))], "\n"))
			}
		})
	}
}

// slowModel answers as its model does, after a delay.
type slowModel struct {
	llm.Model
	d time.Duration
}

func (m slowModel) Chat(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	select {
	case <-time.After(m.d):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return m.Model.Chat(ctx, req)
}
