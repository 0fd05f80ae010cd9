package coordinator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/skillfleet/skillfleet/coordinator/trainer"
	"github.com/skillfleet/skillfleet/pkg/pricing"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// stopRules stops the run at a phase boundary when ctx ends (a signal, or
// [Run.Stop]), on a STOP file in the run dir, or once a budget is reached.
func stopRules(ctx context.Context, runDir string, s trainer.Settings, tr *trainer.Trainer, prices *pricing.Table) func() error {
	start := time.Now()
	return func() error {
		if ctx.Err() != nil {
			return trainer.ErrStopped
		}
		if _, err := os.Stat(filepath.Join(runDir, "STOP")); err == nil {
			_ = os.Remove(filepath.Join(runDir, "STOP"))
			return fmt.Errorf("%w: STOP file found in the run dir", trainer.ErrStopped)
		}
		tot := tr.Accounting().Total()
		switch {
		case s.MaxTokens > 0 && tot.Tokens() >= s.MaxTokens:
			return fmt.Errorf("%w: budget.max_tokens (%d tokens spent, limit %d)", trainer.ErrBudget, tot.Tokens(), s.MaxTokens)
		case s.MaxCalls > 0 && tot.Calls >= s.MaxCalls:
			return fmt.Errorf("%w: budget.max_calls (%d calls made, limit %d)", trainer.ErrBudget, tot.Calls, s.MaxCalls)
		case s.MaxWall > 0 && time.Since(start) >= s.MaxWall:
			return fmt.Errorf("%w: budget.max_wall (%s elapsed)", trainer.ErrBudget, time.Since(start).Round(time.Second))
		}
		if s.MaxUSD > 0 && prices != nil {
			if usd := prices.Price(tr.Accounting().PriceRows()).Total; usd >= s.MaxUSD {
				return fmt.Errorf("%w: budget.max_usd ($%.4f spent at the prices of %s as of %s, limit $%.4f)",
					trainer.ErrBudget, usd, prices.Source(), prices.AsOf(), s.MaxUSD)
			}
		}
		return nil
	}
}

// budgetPrices is the price table budget.max_usd is enforced with (t,
// else the built-in table); nil when there is no dollar budget. Every
// model of the run must have a price: a budget that cannot count some
// spend is refused, not guessed.
func budgetPrices(t *pricing.Table, s trainer.Settings) (*pricing.Table, error) {
	if s.MaxUSD <= 0 {
		return nil, nil
	}
	if t == nil {
		t = pricing.Default()
	}
	for _, m := range []*pb.ModelSpec{s.Target, s.Optimizer, s.Rewriter} {
		if m == nil || m.GetModel() == "" {
			continue
		}
		if _, _, ok := t.Lookup(m.GetModel()); !ok {
			return nil, fmt.Errorf("budget.max_usd: the price table %s has no price for model %q; add it there or pass a table that has one with --prices FILE", t.Source(), m.GetModel())
		}
	}
	return t, nil
}

// minFreeBytes is the free space below which a run stops cleanly rather
// than let the journal, the run dir or the NATS store fail mid-write.
const minFreeBytes = 1 << 20

// diskSpaceLeft reports a file system nearly full under dir as an error
// wrapping syscall.ENOSPC (nil where free space cannot be measured).
func diskSpaceLeft(dir string) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return nil
	}
	if free := st.Bavail * uint64(st.Bsize); free < minFreeBytes {
		return fmt.Errorf("%w (%d KiB free; a run stops below %d KiB)", syscall.ENOSPC, free>>10, minFreeBytes>>10)
	}
	return nil
}
