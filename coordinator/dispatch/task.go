package dispatch

import (
	"net/http"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// A task's life in the dispatcher. Every task the dispatcher knows has one
// record (a [task]) holding its state, and every change of state happens
// in this file, under the dispatcher's lock:
//
//	submitted ─► publishing ─ack─► queued ─result─► recording ─► recorded
//	    │             ▲              │  ▲              ▲
//	    ▼             │ window       │  └──ack───┐     │ result (any live state)
//	   held ──────────┘              └─lost──► republishing
//
//	any live state ─Cancel─► cancelled; a refused publish ─► failed;
//	cancelled or failed ─Submit─► publishing (or held) again.
//
// A task is published by whoever moved it into publishing or
// republishing, and only that caller settles the publish (see flight):
// the sweep and the max-deliveries advisory both claim a lost task by
// moving it from queued to republishing, so one of them wins and the
// other leaves it alone. A result moves a task to recording from any live
// state; a publish that lands after that finds its claim gone and deletes
// the copy it made.

// state is where a task is in its life.
type state uint8

const (
	// held: a bulk task waiting for the bulk window (window.go).
	held state = iota + 1
	// publishing: its first message of this submission is on its way to
	// the stream.
	publishing
	// queued: a message of it is in the stream at seq.
	queued
	// republishing: its message left the stream without a result (ran out
	// of deliveries, or lost) and a new one is on its way.
	republishing
	// recording: a result is being written to the journal.
	recording
	// recorded: the result is durable; the record has left d.tasks for
	// the compact d.recorded.
	recorded
	// cancelled: Cancel stopped it; a result a worker still finishes is
	// recorded, the report of an attempt stopped by the cancel (outcome
	// CANCELLED) only goes to late (Dispatcher.recordCancelled).
	cancelled
	// failed: it could not be published; submitting it again retries.
	failed
)

var stateNames = [...]string{"", "held", "publishing", "queued", "republishing", "recording", "recorded", "cancelled", "failed"}

func (s state) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

// live reports whether a task in state s still waits for its result.
func (s state) live() bool {
	return s >= held && s <= recording
}

// task is the dispatcher's record of one task id.
type task struct {
	id    string
	stage string
	state state
	// turn counts the record's changes of state: a publisher holds the
	// turn it claimed the task at, and its claim stands while the turn is
	// unchanged.
	turn uint64
	// before is the state a recording came from, restored if the journal
	// refuses the result.
	before state
	// fut is the future of the current submission; nil when no one waits
	// (a cancelled task, or a result for a task never submitted).
	fut *Future
	// late sees the result of a cancelled task a worker finished anyway.
	late func(*pb.Result)

	// t is the task, encoded again for each new message (the encoding
	// would be a second copy of it for as long as the task is pending).
	t *pb.Task
	// subject and trace are its messages' subject and trace headers,
	// fixed at its first publish and never changed (each message gets
	// its own copy of the headers).
	subject string
	trace   nats.Header
	// msgID is the message id of its current message.
	msgID string
	// seq is its message's stream sequence once queued (kept while it is
	// republished or recorded, until the new message lands).
	seq uint64
	// published is when its current message went out.
	published time.Time
	// generation counts the times it ran out of deliveries and was
	// queued again.
	generation int
	// cancels counts the cancels of this id: a task submitted again after
	// a cancel goes out under a fresh message id, or JetStream's
	// de-duplication would drop it.
	cancels int
	// bulk is set while it holds a slot of the bulk window.
	bulk bool
	// data is a held task's encoding.
	data []byte
	// cacheKey is its cache key when the cache missed it.
	cacheKey string
	// payload names its body in the object store while it is live and
	// too large for one message (Options.Payloads).
	payload string
}

// baseMsgID is the message id of the task's first message of this
// submission.
func (t *task) baseMsgID() string {
	if t.cancels > 0 {
		return t.id + "~c" + strconv.Itoa(t.cancels)
	}
	return t.id
}

// freshMsgID is a message id no earlier message of the task used: the
// base id and the time, so it stays as long however often the task is
// queued again.
func (t *task) freshMsgID() string {
	return t.baseMsgID() + "~r" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

// header is a new header map for a message of the task.
func (t *task) header(msgID string) nats.Header {
	h := nats.Header(http.Header(t.trace).Clone())
	if h == nil {
		h = nats.Header{}
	}
	h.Set(nats.MsgIdHdr, msgID)
	return h
}

// setLocked moves t to state s. It keeps the indexes that follow a
// task's state: the stream sequences of tasks with a message, the bulk
// window's slots.
func (d *Dispatcher) setLocked(t *task, s state) {
	t.turn++
	t.state = s
	if !s.live() {
		if t.bulk {
			t.bulk = false
			d.bulkOut--
			d.kick()
		}
		d.dropSeqLocked(t)
		t.data = nil
		if t.payload != "" {
			// Its messages name a body nobody needs now; a
			// submission again puts it under a new name.
			d.unused = append(d.unused, t.payload)
			t.payload = ""
			select {
			case d.unusedBell <- struct{}{}:
			default:
			}
		}
	}
	if s == recorded || s == failed {
		t.t, t.trace = nil, nil
	}
}

// dropSeqLocked forgets t's stream sequence.
func (d *Dispatcher) dropSeqLocked(t *task) {
	if t.seq != 0 && d.seqs[t.seq] == t {
		delete(d.seqs, t.seq)
	}
	t.seq = 0
}

// submitLocked claims task t for a submission: a task recorded before
// answers at once (known), a live one shares its future, any other is
// moved to publishing with a new future (send).
func (d *Dispatcher) submitLocked(pt *pb.Task) (fut *Future, known *rec, send *task) {
	id := pt.GetId()
	if r, ok := d.recorded[id]; ok {
		return newFuture(id, d.fatal, d.Err), &r, nil
	}
	t := d.tasks[id]
	if t != nil && t.state.live() {
		if t.fut == nil {
			// Cancelled while its result was being recorded: the new
			// submission waits for that result.
			t.fut = newFuture(id, d.fatal, d.Err)
		}
		return t.fut, nil, nil
	}
	if t == nil {
		t = &task{id: id}
		d.tasks[id] = t
	}
	t.stage, t.t, t.late, t.cacheKey = pt.GetStage(), pt, nil, ""
	t.fut = newFuture(id, d.fatal, d.Err)
	t.generation = 0
	t.msgID = t.baseMsgID()
	d.setLocked(t, publishing)
	return t.fut, nil, t
}

// holdLocked moves a task being submitted to held, for the pump.
func (d *Dispatcher) holdLocked(t *task, data []byte) {
	t.data = data
	d.setLocked(t, held)
	d.held = append(d.held, heldRef{t: t, turn: t.turn})
	d.kick()
}

// releaseLocked moves held tasks to publishing while the bulk window has
// room, and returns them with their flights' turns.
func (d *Dispatcher) releaseLocked(window int) []*task {
	var out []*task
	for len(d.held) > 0 && d.bulkOut < window {
		var h heldRef
		h, d.held = d.held[0], d.held[1:]
		if h.t.state != held || h.t.turn != h.turn {
			continue // cancelled meanwhile
		}
		d.setLocked(h.t, publishing)
		h.t.bulk = true
		d.bulkOut++
		out = append(out, h.t)
	}
	return out
}

// claimLostLocked moves the task whose message at seq left the stream
// without a result to republishing, once: it returns nil when seq is not
// the message of a queued task, or when the dispatcher has stopped (its
// run withdrew). exhausted says it ran out of deliveries, which counts a
// generation: a task out of generations is recorded as failed instead
// (out is then set).
func (d *Dispatcher) claimLostLocked(seq uint64, exhausted bool) (t *task, out bool) {
	t = d.seqs[seq]
	if t == nil || t.seq != seq || t.state != queued || d.stopped {
		return nil, false
	}
	if exhausted {
		if t.generation+1 >= d.generations() {
			return t, true
		}
		t.generation++
	}
	t.msgID = t.freshMsgID()
	d.setLocked(t, republishing)
	d.flights.Add(1)
	return t, false
}

// landedLocked settles the publish of fl: it returns the outcome the
// task's future gets when the publish failed (fail), and whether the copy
// it made is no longer wanted (del).
func (d *Dispatcher) landedLocked(fl *flight, seq uint64, err error) (fail bool, del bool) {
	t := fl.t
	if t.turn != fl.turn || t.state != fl.from {
		// The claim is gone: the task was answered, cancelled or
		// submitted again while its message was on its way. A new copy
		// of it would only run again, as would the copy of a cancelled
		// task the stream had already.
		return false, err == nil && (fl.fresh || t.state == cancelled)
	}
	switch {
	case err == nil:
		d.dropSeqLocked(t)
		t.seq, t.published = seq, time.Now()
		d.seqs[seq] = t
		d.setLocked(t, queued)
	case fl.from == republishing:
		// Its earlier message stays its sequence: the lost-task sweep
		// queues it again once the stream answers.
		d.setLocked(t, queued)
	default:
		d.setLocked(t, failed)
		return true, false
	}
	return false, false
}

// failLocked moves a task being submitted to failed and returns its
// future (nil if it had moved on).
func (d *Dispatcher) failLocked(t *task) *Future {
	if !t.state.live() || t.state == recording {
		return nil
	}
	f := t.fut
	t.fut = nil
	d.setLocked(t, failed)
	return f
}

// beginRecordLocked moves task id to recording for a reported result. It
// returns the record, or the status to answer at once: DUPLICATE (with
// the task's stage) for a result recorded before, RETRY while another
// report of it is being recorded.
func (d *Dispatcher) beginRecordLocked(id string) (t *task, status pb.ReportAck_Status, stage string) {
	if r, ok := d.recorded[id]; ok {
		return nil, pb.ReportAck_STATUS_DUPLICATE, r.stage
	}
	t = d.tasks[id]
	switch {
	case t == nil:
		t = &task{id: id}
		d.tasks[id] = t
	case t.state == recording:
		return nil, pb.ReportAck_STATUS_RETRY, ""
	}
	t.before = t.state
	d.setLockedKeepSeq(t, recording)
	return t, pb.ReportAck_STATUS_RECORDED, ""
}

// setLockedKeepSeq moves t to a live state keeping its sequence: a
// recording task's message is still the one a worker acknowledges.
func (d *Dispatcher) setLockedKeepSeq(t *task, s state) {
	t.turn++
	t.state = s
}

// endRecordLocked ends a recording: at locates the durable result, or
// err says why the journal refused it, and the task goes back to where
// it was. It returns the record's future, late hook and cache key for
// the caller to resolve outside the lock.
func (d *Dispatcher) endRecordLocked(t *task, at rec, err error) (fut *Future, late func(*pb.Result), cacheKey string) {
	if err != nil {
		if t.before == 0 {
			delete(d.tasks, t.id)
		}
		d.setLockedKeepSeq(t, t.before)
		return nil, nil, ""
	}
	fut, late, cacheKey = t.fut, t.late, t.cacheKey
	at.stage = t.stage
	d.recorded[t.id] = at
	delete(d.tasks, t.id)
	d.setLocked(t, recorded)
	t.fut, t.late = nil, nil
	return fut, late, cacheKey
}

// cancelLocked moves a live task to cancelled (a recording one stays
// recording, its result going to late). It returns its future and, if
// its message is in the stream, that message's sequence; sent is false
// for a task never published (held), which no worker can report.
func (d *Dispatcher) cancelLocked(id string, late func(*pb.Result)) (fut *Future, seq uint64, sent, ok bool) {
	t := d.tasks[id]
	if t == nil || !t.state.live() || t.fut == nil {
		return nil, 0, false, false
	}
	fut = t.fut
	t.fut = nil
	t.cancels++
	t.late = late
	sent = t.state != held
	if t.state == recording {
		return fut, 0, sent, true
	}
	if t.state == queued || t.state == republishing {
		seq = t.seq
	}
	d.setLocked(t, cancelled)
	return fut, seq, sent, true
}
