package trainer

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// A withdrawn attempt whose worker said it is finishing a call (a stalled
// one ends only at its stall deadline) is waited for past the usual
// bound, until its report accounts it; one that never said so is not.
func TestSettleWaitsForALingeringLoser(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHedger(&Trainer{now: time.Now}, HedgePolicy{}, nil)
		h.losers["quiet"] = &loser{at: time.Now(), timeout: time.Hour}
		h.losers["stalled"] = &loser{at: time.Now(), timeout: time.Hour}
		h.linger("stalled")
		h.linger("never-withdrawn") // a note for no loser changes nothing
		done := make(chan struct{})
		go func() {
			h.settle(context.Background())
			close(done)
		}()
		time.Sleep(h.settleBound() + 10*time.Second)
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("settle returned while a withdrawn attempt was still finishing its call")
		default:
		}
		h.mu.Lock()
		_, quiet := h.losers["quiet"]
		delete(h.losers, "stalled") // its report came: accountLoser
		h.mu.Unlock()
		if quiet {
			t.Error("an attempt that never reported is still waited for past the bound")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Fatal("settle did not return once the lingering attempt was accounted")
		}
	})
}
