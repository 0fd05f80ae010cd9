package backends_test

import (
	"context"
	"fmt"
	"time"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// flakyEcho fails once with a rate limit, then echoes.
type flakyEcho struct{ calls int }

func (f *flakyEcho) Chat(_ context.Context, req *llm.Request) (*llm.Response, error) {
	f.calls++
	if f.calls == 1 {
		return nil, &llm.Error{Kind: llm.KindRateLimited, Status: 429, RetryAfter: time.Second}
	}
	return &llm.Response{Content: "echo: " + req.Messages[0].Content, Model: req.Model}, nil
}

// A spec names its backend; New reads the key from the variable the spec
// names, adds retries, a circuit breaker and (when the options set limits)
// a limiter, and fills unset request fields from the spec.
func ExampleNew() {
	noWait := func(context.Context, time.Duration) error { return nil }
	m, err := backends.New(context.Background(), backends.Spec{Backend: "echo", Model: "echo-1", Options: map[string]string{"rpm": "600"}},
		backends.Deps{Sleep: noWait, Extra: map[string]func(backends.Spec) (llm.Model, error){
			"echo": func(backends.Spec) (llm.Model, error) { return &flakyEcho{}, nil },
		}})
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := m.Chat(context.Background(), &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Content, resp.Model, resp.Attempts, resp.RateLimited)
	// Output: echo: hi echo-1 2 1
}
