package trainer

import (
	"testing"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

func attemptResult(task, attempt string, o pb.Outcome, calls int32, in, out int64) *pb.Result {
	return &pb.Result{TaskId: task, AttemptId: attempt, Outcome: o,
		Usage: &pb.Usage{Calls: calls, InputTokens: in, OutputTokens: out}}
}

// TestAccountingCountsEachAttemptOnce: an attempt's usage is counted once
// whichever paths and however often its reports arrive; every other
// attempt of a task is counted as well.
func TestAccountingCountsEachAttemptOnce(t *testing.T) {
	t.Parallel()
	ok := pb.Outcome_OUTCOME_OK
	cases := []struct {
		name string
		feed func(a *Accounting)
		// calls, input and output tokens the provider billed; tasks counted.
		calls, in, out, tasks int64
	}{
		{"a report sent again after a late ack comes back a duplicate", func(a *Accounting) {
			r := attemptResult("r/reflect/1", "a1", ok, 1, 500, 50)
			a.Add("reflect", "optimizer", "o", r)
			a.AddSpend("reflect", "optimizer", "o", attemptResult("r/reflect/1", "a1", ok, 1, 500, 50))
		}, 1, 500, 50, 1},
		{"a spend report after a RETRY for a report that was recorded after all", func(a *Accounting) {
			spend := attemptResult("r/reflect/1", "a1", ok, 1, 500, 50)
			spend.SpendOnly = true
			a.AddSpend("reflect", "optimizer", "o", spend)
			// The first report's recording completes; the task's future resolves.
			a.Add("reflect", "optimizer", "o", attemptResult("r/reflect/1", "a1", ok, 1, 500, 50))
			// The task ran again after the NAK: a second attempt, billed.
			a.AddSpend("reflect", "optimizer", "o", attemptResult("r/reflect/1", "a2", ok, 1, 500, 50))
		}, 2, 1000, 100, 1},
		{"a hedge loser run twice (redelivered while running) reports both runs", func(a *Accounting) {
			a.AddHedged("optimizer", "o", attemptResult("r/reflect/1", "a1", pb.Outcome_OUTCOME_CANCELLED, 1, 500, 50))
			a.AddHedged("optimizer", "o", attemptResult("r/reflect/1", "a2", pb.Outcome_OUTCOME_CANCELLED, 1, 500, 50))
			// The same report again counts nothing.
			a.AddHedged("optimizer", "o", attemptResult("r/reflect/1", "a2", pb.Outcome_OUTCOME_CANCELLED, 1, 500, 50))
		}, 2, 1000, 100, 0},
		{"a task withdrawn while running and asked for again", func(a *Accounting) {
			a.Add("gate", "target", "m", attemptResult("r/rollout/1", "a1", pb.Outcome_OUTCOME_CANCELLED, 2, 300, 20))
			a.Add("gate", "target", "m", attemptResult("r/rollout/1", "a2", ok, 3, 450, 30))
			// The loop using the same result again: reused, nothing spent.
			a.Add("gate", "target", "m", attemptResult("r/rollout/1", "a2", ok, 3, 450, 30))
		}, 5, 750, 50, 1},
		{"results without attempt ids (an older worker) count as before", func(a *Accounting) {
			a.Add("gate", "target", "m", attemptResult("r/rollout/1", "", ok, 3, 450, 30))
			a.Add("gate", "target", "m", attemptResult("r/rollout/1", "", ok, 3, 450, 30))
			a.AddSpend("gate", "target", "m", attemptResult("r/rollout/1", "", ok, 3, 450, 30))
			a.AddHedged("target", "m", attemptResult("r/rollout/2", "", ok, 1, 150, 10))
			a.AddHedged("target", "m", attemptResult("r/rollout/2", "", ok, 1, 150, 10))
		}, 7, 1050, 70, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := NewAccounting()
			c.feed(a)
			tot := a.Total()
			if tot.Calls != c.calls || tot.Input != c.in || tot.Output != c.out || tot.Tasks != c.tasks {
				t.Errorf("counted %d calls, %d in / %d out, %d tasks; billed %d calls, %d / %d, %d tasks",
					tot.Calls, tot.Input, tot.Output, tot.Tasks, c.calls, c.in, c.out, c.tasks)
			}
		})
	}
}
