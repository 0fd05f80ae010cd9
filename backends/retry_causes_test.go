package backends

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/pkg/llm"
)

// TestRetryCountsAndLogsCauses: every failed attempt is counted by cause
// and logged at info with cause, status and attempt — never the prompt.
func TestRetryCountsAndLogsCauses(t *testing.T) {
	errs := []error{
		&llm.Error{Kind: llm.KindServer, Status: 502, Msg: "bad gateway"},
		&llm.Error{Kind: llm.KindRateLimited, Status: 429},
		&llm.Error{Kind: llm.KindTimeout, Msg: "stalled", Err: llm.ErrStalled},
		&llm.Error{Kind: llm.KindTransport, Msg: "connection reset"},
	}
	n := 0
	m := modelFn(func(context.Context, *llm.Request) (*llm.Response, error) {
		n++
		if n <= len(errs) {
			return nil, errs[n-1]
		}
		return &llm.Response{Content: "ok", Attempts: 1}, nil
	})
	var logs bytes.Buffer
	ctx := llm.WithLogger(context.Background(), slog.New(slog.NewTextHandler(&logs, nil)))
	r := NewRetry(m, RetryPolicy{MaxRetries: 5, Base: time.Millisecond, Cap: time.Millisecond})
	const secret = "PROMPT-TEXT-THAT-MUST-NOT-BE-LOGGED"
	resp, err := r.Chat(ctx, &llm.Request{Model: "m1", Stage: "rollout", Messages: []llm.Message{{Role: "user", Content: secret}}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{llm.CauseServer5xx: 1, llm.CauseRateLimited: 1, llm.CauseStall: 1, llm.CauseTransport: 1}
	if len(resp.FailedCauses) != len(want) {
		t.Fatalf("causes %v, want %v", resp.FailedCauses, want)
	}
	for k, v := range want {
		if resp.FailedCauses[k] != v {
			t.Fatalf("causes %v, want %v", resp.FailedCauses, want)
		}
	}
	out := logs.String()
	for _, s := range []string{"level=INFO", "cause=server_5xx status=502 attempt=1", "cause=rate_limited status=429 attempt=2", "cause=stall status=0 attempt=3", "cause=transport status=0 attempt=4"} {
		if !strings.Contains(out, s) {
			t.Errorf("log lacks %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, secret) {
		t.Errorf("the prompt reached the log:\n%s", out)
	}

	// A call that finally fails carries its causes in the RetryError.
	n = 0
	errs = []error{&llm.Error{Kind: llm.KindServer, Status: 500}, &llm.Error{Kind: llm.KindServer, Status: 500}}
	_, err = NewRetry(m, RetryPolicy{MaxRetries: 1, Base: time.Millisecond}).Chat(context.Background(), &llm.Request{})
	var re *RetryError
	if !errors.As(err, &re) || re.Attempts != 2 || re.Causes[llm.CauseServer5xx] != 2 {
		t.Fatalf("final failure %#v, want 2 attempts with 2 server_5xx causes", err)
	}
}

type modelFn func(context.Context, *llm.Request) (*llm.Response, error)

func (f modelFn) Chat(ctx context.Context, r *llm.Request) (*llm.Response, error) { return f(ctx, r) }
