package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillfleet/skillfleet/pkg/queue"
)

// The lost-task sweep first asks the stream how many messages it holds
// on the run's subjects (stream info with a subject filter: one request,
// one reply): when that is at least the run's published pending tasks,
// none is lost and the sweep is done. Otherwise it asks which of the
// run's pending messages the stream still holds with one batched direct
// get per run subject filter: the
// server streams back every message of the run from the oldest pending
// sequence on, and a pending sequence missing from that answer is a
// candidate for republishing. Only those candidates — rare — are checked
// one by one against the stream leader (a direct get may be answered by a
// replica), so a sweep costs a constant number of round trips whatever
// the backlog. When the stream does not allow direct gets (a stream made
// or updated by an older process), every pending task is checked one by
// one.

// sweepTimeout bounds one batched direct get; numPendingHeader says, on a
// batch's end, how many matching messages follow it.
const (
	sweepTimeout     = 10 * time.Second
	numPendingHeader = "Nats-Num-Pending"
)

// directGetRequest is JetStream's direct get request, batched: batch
// messages from seq on whose subject matches next_by_subj.
type directGetRequest struct {
	Seq        uint64 `json:"seq"`
	NextBySubj string `json:"next_by_subj"`
	Batch      int    `json:"batch"`
}

// sweepCand is a queued task the sweep looks at.
type sweepCand struct {
	t   *task
	seq uint64
	// filter is the subject filter of the task's run.
	filter string
	// class is the scheduling class of the task's subject ("" when the
	// subject names none).
	class queue.Class
	// floorDue: the task has been queued floorAge, so the sweep also
	// asks whether its class consumer is done with its message.
	floorDue bool
}

// floorAge is how long a task stays queued before the sweep compares its
// message with its class consumer's ack floor. A message the stream
// still holds is lost that way only when it ran out of deliveries unheard,
// which takes its deliveries' AckWaits; waiting keeps a round where
// nothing is lost at one request while a backlog is young.
var floorAge = 30 * time.Second

// ackFloor says up to which stream sequence a class's consumer has
// finished with every message: acknowledged or out of deliveries.
type ackFloor func(context.Context, queue.Class) (uint64, error)

// consumerFloor is the ack floor of class's consumer, from its info.
func (d *Dispatcher) consumerFloor(ctx context.Context, class queue.Class) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, sweepTimeout)
	defer cancel()
	cons, err := d.o.Stream.Consumer(ctx, class.Consumer())
	if err != nil {
		return 0, err
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return 0, err
	}
	return info.AckFloor.Stream, nil
}

// runFilter is the subject filter matching every task message of the run
// the message on subject belongs to.
func runFilter(subject string) string {
	return queue.RunSubjects(subject[strings.LastIndexByte(subject, '.')+1:])
}

// missing returns the candidates whose message the stream no longer seems
// to hold, or holds at or below its class consumer's ack floor, where no
// worker is handed it again: a message that ran out of deliveries while
// no process of its run heard the advisory (the run's member killed, or
// the advisory sent during a leader election), which a resumed run took
// as queued when its publish was de-duplicated against it. On any
// failure of the batched read it returns every candidate, for the caller
// to check one by one.
func (d *Dispatcher) missing(ctx context.Context, r *sweepRound, stored func(context.Context, string) (uint64, error), floor ackFloor) []sweepCand {
	cands := r.cands
	if !d.directGets() {
		return cands
	}
	type span struct {
		lo, hi uint64
		n      int
	}
	spans := map[string]*span{}
	for _, c := range cands {
		s := spans[c.filter]
		if s == nil {
			s = &span{lo: c.seq, hi: c.seq}
			spans[c.filter] = s
		}
		s.lo, s.hi = min(s.lo, c.seq), max(s.hi, c.seq)
		s.n++
	}
	held := map[uint64]bool{}
	for filter, s := range spans {
		if n, err := stored(ctx, filter); err == nil && n >= r.published[filter] {
			// Nothing of this run left the stream (a task answered
			// meanwhile leaves one fewer, and is checked below).
			for _, c := range cands {
				if c.filter == filter {
					held[c.seq] = true
				}
			}
			continue
		}
		// The run's messages in the span are its pending tasks and the
		// few copies a cancel or a republish left behind; the batch is
		// sized for them so that one request usually covers the span.
		d.mu.Lock()
		page := len(d.seqs) + 64
		d.mu.Unlock()
		if err := d.storedSeqs(ctx, filter, s.lo, s.hi, page, held); err != nil {
			d.log.Debug("batched sweep read failed; checking pending tasks one by one", "err", err)
			return cands
		}
	}
	floors := map[queue.Class]uint64{}
	var out []sweepCand
	for _, c := range cands {
		if !held[c.seq] {
			out = append(out, c)
			continue
		}
		if c.class == "" || !c.floorDue {
			continue
		}
		f, ok := floors[c.class]
		if !ok {
			var err error
			if f, err = floor(ctx, c.class); err != nil {
				f = 0 // unknown: the next round looks again
			}
			floors[c.class] = f
		}
		if c.seq <= f {
			out = append(out, c)
		}
	}
	return out
}

// Sweep republishes queued tasks whose message left the stream without a
// result: a worker terminated it while this coordinator was away, it ran
// out of deliveries with no coordinator listening, or another process
// purged it. A message leaves the work queue when a worker acknowledges
// it, and a worker acknowledges only after the result is recorded, so a
// queued task whose message is gone is lost, never merely finished.
// Tasks published within minAge are left alone. It returns how many tasks
// it republished. A dispatcher with a [Sweeper] is swept by it; Sweep
// still sweeps it alone when called.
func (d *Dispatcher) Sweep(ctx context.Context, minAge time.Duration) int {
	r := d.sweepRound(minAge)
	if r == nil {
		return 0
	}
	return d.sweepWith(ctx, r, d.storedCount, d.consumerFloor)
}

// sweepRound is what one sweep of a dispatcher looks at: its queued
// tasks old enough to be looked at, and how many of its tasks have a
// message in the stream on each run subject filter. It is nil when no
// task is old enough, or the dispatcher stopped.
type sweepRound struct {
	cands     []sweepCand
	published map[string]uint64
}

func (d *Dispatcher) sweepRound(minAge time.Duration) *sweepRound {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return nil
	}
	var cands []sweepCand
	published := map[string]uint64{}
	now := time.Now()
	for seq, t := range d.seqs {
		filter := runFilter(t.subject)
		published[filter]++
		if t.state == queued && now.Sub(t.published) >= minAge {
			class, _ := queue.ClassOfSubject(t.subject)
			cands = append(cands, sweepCand{t: t, seq: seq, filter: filter, class: class, floorDue: now.Sub(t.published) >= floorAge})
		}
	}
	if len(cands) == 0 {
		return nil
	}
	return &sweepRound{cands: cands, published: published}
}

// sweepWith finishes a sweep round: stored says how many messages the
// stream holds on a run subject filter, counted after the round was
// taken, and floor a class consumer's ack floor. A task is republished only if it is still queued at the
// sequence the round saw (claimLostLocked): a task the advisory queued
// again meanwhile, or one being answered, is left alone.
func (d *Dispatcher) sweepWith(ctx context.Context, r *sweepRound, stored func(context.Context, string) (uint64, error), floor ackFloor) int {
	n := 0
	for _, c := range d.missing(ctx, r, stored, floor) {
		if ctx.Err() != nil || !d.vanished(ctx, c.seq) {
			continue
		}
		d.mu.Lock()
		t, _ := d.claimLostLocked(c.seq, false)
		var fl *flight
		if t != nil {
			fl = d.flightLocked(t, republishing)
		}
		d.mu.Unlock()
		if fl == nil {
			continue
		}
		if _, err := d.republish(ctx, fl); err != nil {
			d.log.Warn("republish lost task", "task_id", t.id, "err", err)
			continue
		}
		n++
	}
	if n > 0 {
		d.ring()
	}
	return n
}

// storedCount is how many messages the stream holds on the subjects
// filter matches.
func (d *Dispatcher) storedCount(ctx context.Context, filter string) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, sweepTimeout)
	defer cancel()
	info, err := d.o.Stream.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n, nil
}

// directGets reports whether the task stream answers direct gets.
func (d *Dispatcher) directGets() bool {
	if d.o.Stream == nil || d.o.NC == nil || d.o.JS == nil {
		return false
	}
	info := d.o.Stream.CachedInfo()
	return info != nil && info.Config.AllowDirect
}

// storedSeqs adds to held the sequence of every message the stream holds
// whose subject matches filter, from lo through at least hi, reading page
// messages per request.
func (d *Dispatcher) storedSeqs(ctx context.Context, filter string, lo, hi uint64, page int, held map[uint64]bool) error {
	ctx, cancel := context.WithTimeout(ctx, sweepTimeout)
	defer cancel()
	inbox := d.o.NC.NewInbox()
	sub, err := d.o.NC.SubscribeSync(inbox)
	if err != nil {
		return err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		return err
	}
	subject := d.api("DIRECT.GET.")
	for next := lo; next <= hi; {
		req, _ := json.Marshal(directGetRequest{Seq: next, NextBySubj: filter, Batch: page})
		if err := d.o.NC.PublishRequest(subject, inbox, req); err != nil {
			return err
		}
		more, err := readBatch(ctx, sub, held, &next)
		if err != nil {
			return err
		}
		if !more {
			return nil
		}
	}
	return nil
}

// readBatch reads one batched direct get's answer: the messages, then an
// end-of-batch status saying how many more match. It advances next past
// the last message read and reports whether more remain.
func readBatch(ctx context.Context, sub *nats.Subscription, held map[uint64]bool, next *uint64) (bool, error) {
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return false, err
		}
		switch status := m.Header.Get("Status"); status {
		case "":
		case "204": // end of batch
			pending, err := strconv.ParseUint(m.Header.Get(numPendingHeader), 10, 64)
			if err != nil {
				return false, fmt.Errorf("direct get: end of batch without a pending count: %w", err)
			}
			return pending > 0, nil
		case "404": // nothing matches from the requested sequence on
			return false, nil
		default:
			return false, fmt.Errorf("direct get: status %s %s", status, m.Header.Get("Description"))
		}
		seq, err := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
		if err != nil {
			return false, errors.New("direct get: message without a sequence")
		}
		held[seq] = true
		*next = seq + 1
	}
}

// api is the subject of a JetStream API request about the task stream:
// op ("STREAM.MSG.GET.", "DIRECT.GET.") under the JetStream context's
// prefix, then the stream's name.
func (d *Dispatcher) api(op string) string {
	o := d.o.JS.Options()
	prefix := jetstream.DefaultAPIPrefix
	switch {
	case o.Domain != "":
		prefix = "$JS." + o.Domain + ".API."
	case o.APIPrefix != "":
		prefix = strings.TrimSuffix(o.APIPrefix, ".") + "."
	}
	return prefix + op + d.o.Stream.CachedInfo().Config.Name
}
