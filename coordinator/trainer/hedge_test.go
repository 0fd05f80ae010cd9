package trainer_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	simmodel "github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/internal/fleettest"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// straggling wraps the sim model: the first call with a chosen content
// (about one in eight) is held for hold, every other call for base; a
// second call with the same content (a hedge copy) is not held. It counts
// the calls it answered, as a provider's bill does.
type straggling struct {
	inner      llm.Model
	base, hold time.Duration

	mu      sync.Mutex
	seen    map[[32]byte]bool
	held    atomic.Int64
	billed  atomic.Int64
	input   atomic.Int64
	started atomic.Int64
}

func (s *straggling) Chat(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	h := sha256.New()
	for _, m := range req.Messages {
		h.Write([]byte(m.Role))
		h.Write([]byte(m.Text()))
	}
	var k [32]byte
	copy(k[:], h.Sum(nil))
	s.mu.Lock()
	first := !s.seen[k]
	s.seen[k] = true
	s.mu.Unlock()
	wait := s.base
	if first && k[0]%8 == 0 {
		wait = s.hold
		s.held.Add(1)
	}
	s.started.Add(1)
	select {
	case <-time.After(wait):
	case <-ctx.Done():
		return nil, &llm.Error{Kind: llm.KindCancelled, Msg: "cancelled", Err: ctx.Err()}
	}
	resp, err := s.inner.Chat(ctx, req)
	if err == nil {
		s.billed.Add(1)
		s.input.Add(resp.Usage.InputTokens)
	}
	return resp, err
}

// TestWaveHedgeKeepsDecisions: with some first calls held far past their
// peers, hedging the waves' stragglers makes copies that answer for them,
// the decisions and the skill are those of the run without hedging, and
// every call the model answered is in tokens.json, the losing attempts'
// under the cause hedged.
func TestWaveHedgeKeepsDecisions(t *testing.T) {
	t.Parallel()
	plain, _, err := fleettest.Reference(t, fleettest.Demo, idleFillOn)
	if err != nil {
		t.Fatal(err)
	}
	m := &straggling{inner: simmodel.New(simmodel.Options{}), base: 5 * time.Millisecond, hold: 4 * time.Second, seen: map[[32]byte]bool{}}
	dir, _, err := fleettest.RunDemo(t, m, idleFillOn, "runtime.hedge=true")
	if err != nil {
		t.Fatal(err)
	}
	sameDecisions(t, plain, dir, "with hedging")
	var tok struct {
		Total struct {
			Calls  int64 `json:"calls"`
			Input  int64 `json:"input_tokens"`
			Causes struct {
				Hedged int64 `json:"hedged"`
			} `json:"failure_causes"`
		} `json:"total"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "tokens.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &tok); err != nil {
		t.Fatal(err)
	}
	if m.held.Load() == 0 {
		t.Fatal("no call was held: the test straggles nothing")
	}
	if tok.Total.Causes.Hedged == 0 {
		t.Errorf("no hedged attempt in tokens.json (%d calls held)", m.held.Load())
	}
	// Every answered call is billed once; held calls cut short by their
	// copy's win were answered only if they ran to the end.
	if tok.Total.Calls < m.billed.Load() || tok.Total.Calls > m.started.Load() {
		t.Errorf("tokens.json counts %d calls; the model answered %d of %d started", tok.Total.Calls, m.billed.Load(), m.started.Load())
	}
	if tok.Total.Input < m.input.Load() {
		t.Errorf("tokens.json counts %d input tokens; the model answered %d", tok.Total.Input, m.input.Load())
	}
	// summary.json says which stages' copies were made and which won: a
	// copy is one hedged attempt unless it won (then its original is).
	var sum struct {
		Hedge map[string]struct{ Copies, Won int } `json:"hedge"`
	}
	if b, err = os.ReadFile(filepath.Join(dir, "summary.json")); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	copies, won := 0, 0
	for stage, c := range sum.Hedge {
		if c.Won > c.Copies {
			t.Errorf("summary.json hedge %s: %d copies won of %d", stage, c.Won, c.Copies)
		}
		copies, won = copies+c.Copies, won+c.Won
	}
	if copies == 0 || won == 0 {
		t.Errorf("summary.json hedge %v: want copies made and won", sum.Hedge)
	}
	if int64(copies) < tok.Total.Causes.Hedged {
		t.Errorf("summary.json counts %d copies, tokens.json %d hedged attempts", copies, tok.Total.Causes.Hedged)
	}
}

// stallFirst wraps the sim model: the first call of one prompt (stage)
// gets no reply until it is cancelled, as a provider that accepts a
// request and never answers; after safety it gives up and answers, so
// that a run without a copy ends and says so instead of hanging.
type stallFirst struct {
	inner  llm.Model
	stage  string
	safety time.Duration

	taken     atomic.Bool
	cancelled atomic.Bool
	outlived  atomic.Bool
}

func (s *stallFirst) Chat(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if req.Stage == s.stage && s.taken.CompareAndSwap(false, true) {
		select {
		case <-ctx.Done():
			s.cancelled.Store(true)
			return nil, &llm.Error{Kind: llm.KindCancelled, Msg: "cancelled", Err: ctx.Err()}
		case <-time.After(s.safety):
			s.outlived.Store(true)
		}
	}
	return s.inner.Chat(ctx, req)
}

// TestWaveHedgeCopiesAStalledFirstCall: the run's first ranking call — a
// one-call optimizer wave whose stage has no time of its own yet — never
// answers. The hedger copies it from the optimizer model's other stages'
// times (or every model's), the copy answers, the stalled attempt is
// withdrawn, and the run makes the decisions of the run without stalls.
func TestWaveHedgeCopiesAStalledFirstCall(t *testing.T) {
	t.Parallel()
	plain, _, err := fleettest.Reference(t, fleettest.Demo, idleFillOn)
	if err != nil {
		t.Fatal(err)
	}
	m := &stallFirst{inner: simmodel.New(simmodel.Options{}), stage: "ranking", safety: time.Minute}
	dir, _, err := fleettest.RunDemo(t, m, idleFillOn, "runtime.hedge=true")
	if err != nil {
		t.Fatal(err)
	}
	if !m.taken.Load() {
		t.Fatal("the run made no ranking call: the test stalls nothing")
	}
	if m.outlived.Load() || !m.cancelled.Load() {
		t.Errorf("the stalled ranking call was not withdrawn for a copy (it ran %v out)", m.safety)
	}
	sameDecisions(t, plain, dir, "with a stalled first ranking call")
}

// sameDecisions checks that run dir got the events.jsonl and best_skill.md
// of run dir want; how names the difference in the error.
func sameDecisions(t *testing.T, want, got, how string) {
	t.Helper()
	for _, f := range []string{"events.jsonl", "best_skill.md"} {
		a, err := os.ReadFile(filepath.Join(want, f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(got, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs %s:\n%s\nwant:\n%s", f, how, b, a)
		}
	}
}
