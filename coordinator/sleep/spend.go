package sleep

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/nightly"
	"github.com/skillfleet/skillfleet/pkg/pricing"
)

// SharedSpend is one night's spend shared by the consolidations that run
// at once in it ([Settings].Shared).
type SharedSpend struct {
	mu    sync.Mutex
	spend Spend
}

// Total is what the night has spent so far.
func (p *SharedSpend) Total() Spend {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.spend
}

func (p *SharedSpend) add(d Spend) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.spend.Tokens += d.Tokens
	p.spend.Calls += d.Calls
	p.spend.USD += d.USD
}

// charge adds a usage of role's model to the night's spend.
func (n *night) charge(role string, u llm.Usage, calls int) {
	d := Spend{Tokens: u.InputTokens + u.OutputTokens, Calls: calls}
	if n.s.Cost != nil {
		d.USD = n.s.Cost(role, u)
	}
	n.mu.Lock()
	n.out.Spend.Tokens += d.Tokens
	n.out.Spend.Calls += d.Calls
	n.out.Spend.USD += d.USD
	n.mu.Unlock()
	if n.s.Shared != nil {
		n.s.Shared.add(d)
	}
}

// chargeExtra adds a replay's spend to the part of the night's spend that
// kind (rollouts, dream, recall) added.
func (n *night) chargeExtra(kind string, r Replay) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.out.Extra == nil {
		n.out.Extra = map[string]Spend{}
	}
	sp := n.out.Extra[kind]
	sp.Tokens += r.Usage.InputTokens + r.Usage.OutputTokens
	sp.Calls += r.Calls
	if n.s.Cost != nil {
		sp.USD += n.s.Cost("target", r.Usage)
	}
	n.out.Extra[kind] = sp
}

// afford refuses work the budget cannot pay for: est is its expected
// tokens (0 = unknown: only the spend so far is checked).
func (n *night) afford(stage, role string, est int64) error {
	n.mu.Lock()
	sp := n.out.Spend
	n.mu.Unlock()
	if n.s.Shared != nil {
		sp = n.s.Shared.Total()
	}
	if n.s.MaxTokens > 0 && sp.Tokens+est > n.s.MaxTokens {
		return fmt.Errorf("%w: max_tokens_per_night %d: %d tokens spent, the %s stage needs about %d more", ErrBudget, n.s.MaxTokens, sp.Tokens, stage, est)
	}
	if n.s.MaxUSD > 0 {
		next := 0.0
		if n.s.Cost != nil {
			next = n.s.Cost(role, llm.Usage{InputTokens: est})
		}
		if sp.USD+next > n.s.MaxUSD || sp.USD >= n.s.MaxUSD {
			return fmt.Errorf("%w: max_usd_per_night $%.4f: $%.4f spent, the %s stage needs about $%.4f more", ErrBudget, n.s.MaxUSD, sp.USD, stage, next)
		}
	}
	return nil
}

// replay runs one wave of replays after checking the budget can pay for
// it, and charges what it spent.
func (n *night) replay(ctx context.Context, stage, doc string, tasks []nightly.Task, sample int) ([]Replay, error) {
	rs, err := n.replayUnchecked(ctx, stage, doc, tasks, sample)
	if err != nil {
		return nil, err
	}
	if err := n.pending(); err != nil {
		return nil, err
	}
	return rs, nil
}

// pending is the handoff check between waves: an error when calls of
// the waves so far wait for answers. A replay whose call waits failed
// without a score: its wave is not measured, and nothing that depends on
// it is asked.
func (n *night) pending() error {
	if n.d.Pending == nil {
		return nil
	}
	return n.d.Pending()
}

// replayUnchecked is [night.replay] without the handoff check: for waves
// that do not depend on each other (the attempts of a train wave), asked
// together before one check.
func (n *night) replayUnchecked(ctx context.Context, stage, doc string, tasks []nightly.Task, sample int) ([]Replay, error) {
	if len(tasks) == 0 {
		return nil, nil
	}
	skill, memory := nightly.SplitDocs(doc)
	var est int64
	for _, t := range tasks {
		est += nightly.EstimateReplay(t, skill, memory)
	}
	est = max(est, int64(n.perTask*float64(len(tasks))))
	if err := n.afford(stage, "target", est); err != nil {
		return nil, err
	}
	rs, err := n.d.Replayer.Replay(ctx, ReplayRequest{Stage: stage, Doc: doc, Tasks: tasks, Sample: sample})
	if err != nil {
		return nil, err
	}
	var tok int64
	for i, r := range rs {
		n.charge("target", r.Usage, r.Calls)
		tok += r.Usage.InputTokens + r.Usage.OutputTokens
		switch {
		case i < len(tasks) && !nightly.IsHeldOutOrigin(tasks[i].Origin):
			n.chargeExtra(tasks[i].Origin, r)
		case sample > 0 && sample < FreshSample:
			n.chargeExtra("rollouts", r)
		}
	}
	n.mu.Lock()
	n.perTask = (n.perTask*float64(n.replayed) + float64(tok)) / float64(n.replayed+len(rs))
	n.replayed += len(rs)
	n.mu.Unlock()
	n.out.Replays = append(n.out.Replays, rs...)
	if n.s.StopOnFailure {
		for _, r := range rs {
			if r.Err != "" {
				return nil, &AgentFailure{Stage: stage, TaskID: r.TaskID, Outcome: r.Outcome, Cause: r.Err}
			}
		}
	}
	return rs, nil
}

// AgentFailure is a replay the target agent could not run: an
// infrastructure failure (auth, a missing binary, a timeout, a broken
// stream, a non-zero exit), never a score. It stops the night.
type AgentFailure struct {
	Stage, TaskID string
	// Outcome is the result's outcome (OUTCOME_TIMEOUT, ...); Cause the
	// failure as the worker reported it.
	Outcome, Cause string
}

func (e *AgentFailure) Error() string {
	cause := strings.Join(strings.Fields(e.Cause), " ")
	if len(cause) > 400 {
		cause = cause[:400] + "…"
	}
	return fmt.Sprintf("the replay agent failed (%s) on task %s in the %s replays: %s; the night stopped: nothing was staged and no score recorded", e.Outcome, e.TaskID, e.Stage, cause)
}

// reflectEstimate is a reflection's expected tokens: its document, the
// failures shown (at most 8) and a reply allowance.
func reflectEstimate(doc string, fails []nightly.Failure) int64 {
	n := len(doc) + 1200
	for i, f := range fails {
		if i == 8 {
			break
		}
		n += min(len(f.Intent), 400) + min(len(f.Wanted), 400) + min(len(f.Got), 600) + min(len(f.Why), 300) + 80
		if f.Best != nil {
			n += min(len(f.Best.Reply), 600) + min(len(f.Best.Why), 300) + 60
		}
	}
	return int64(n/4) + 800
}

// PriceFunc prices a role's usage ("target" or "optimizer") for
// max_usd_per_night, with the price table at pricesPath (default: the
// built-in one); nil when the night has no dollar budget. A model without
// a price is refused, not guessed.
func PriceFunc(c nightly.Config, pricesPath, target, optimizer string) (func(string, llm.Usage) float64, error) {
	if c.MaxUSD <= 0 {
		return nil, nil
	}
	t := pricing.Default()
	if pricesPath != "" {
		var err error
		if t, err = pricing.Load(pricesPath); err != nil {
			return nil, fmt.Errorf("--prices: %w", err)
		}
	}
	for _, m := range []string{target, optimizer} {
		if _, _, ok := t.Lookup(m); !ok {
			return nil, fmt.Errorf("max_usd_per_night: the price table %s has no price for model %q; pass one that has with --prices FILE", t.Source(), m)
		}
	}
	return func(role string, u llm.Usage) float64 {
		m := target
		if role == "optimizer" {
			m = optimizer
		}
		v, _ := t.Cost(m, u.InputTokens, u.CacheReadTokens, u.OutputTokens)
		return v
	}, nil
}
