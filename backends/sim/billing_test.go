package sim

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestRequestAbandonedByClientIsFinishedAndBilled: a client that gives up
// while the reply is being produced is billed like one that waited, as a
// provider bills it; the reply is counted as abandoned, not served.
func TestRequestAbandonedByClientIsFinishedAndBilled(t *testing.T) {
	s := NewServer(New(Options{}), ServerOptions{Latency: Latency{Fixed: 300 * time.Millisecond}})
	hs := httptest.NewServer(s)
	defer hs.Close()
	b, _ := json.Marshal(targetBody("sim"))
	body := string(b)
	send := func(timeout time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := hs.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := send(50 * time.Millisecond); err == nil {
		t.Fatal("a 50 ms client timeout against 300 ms latency succeeded")
	}
	deadline := time.Now().Add(5 * time.Second)
	for s.Stats().Billed == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	st := s.Stats()
	if st.Requests != 1 || st.Billed != 1 || st.Abandoned != 1 || st.Served != 0 {
		t.Fatalf("after an abandoned request: requests %d billed %d abandoned %d served %d, want 1 1 1 0", st.Requests, st.Billed, st.Abandoned, st.Served)
	}
	if st.BilledInputTokens <= 0 || st.BilledOutputTokens <= 0 {
		t.Fatalf("abandoned reply billed %d in / %d out tokens, want both > 0", st.BilledInputTokens, st.BilledOutputTokens)
	}
	// The same request waited for is billed exactly as much.
	if err := send(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	st2 := s.Stats()
	if st2.Served != 1 || st2.Billed != 2 || st2.BilledInputTokens != 2*st.BilledInputTokens || st2.BilledOutputTokens != 2*st.BilledOutputTokens {
		t.Fatalf("served request: %+v, want served 1, billed 2 with twice the abandoned request's tokens", st2)
	}
	if st2.InputTokens != st.BilledInputTokens || st2.OutputTokens != st.BilledOutputTokens {
		t.Fatalf("served tokens %d/%d, want the billed tokens of one request %d/%d", st2.InputTokens, st2.OutputTokens, st.BilledInputTokens, st.BilledOutputTokens)
	}
}

// TestStalledRequestIsNotBilled: a stall produces no reply, so nothing is
// billed when its client leaves.
func TestStalledRequestIsNotBilled(t *testing.T) {
	s := NewServer(New(Options{}), ServerOptions{FaultRateStall: 1})
	hs := httptest.NewServer(s)
	defer hs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"sim","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := hs.Client().Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("a stalled request was answered")
	}
	time.Sleep(100 * time.Millisecond)
	if st := s.Stats(); st.Requests != 1 || st.Billed != 0 || st.Faults[FaultStall] != 1 {
		t.Fatalf("stats %+v: want 1 request, 1 stall, nothing billed", st)
	}
}
