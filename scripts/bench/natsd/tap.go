package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/skillfleet/skillfleet/pkg/queue"
)

// tapCounts counts the messages published on the server by subject
// pattern (acks also by kind: a running task's heartbeat is +WPI): a
// diagnostic of where a bench's NATS traffic goes.
type tapCounts struct {
	nc *nats.Conn
	mu sync.Mutex
	n  map[string]int64
}

func startTap(e *queue.Embedded) (*tapCounts, error) {
	nc, err := e.Connect("natsd-tap")
	if err != nil {
		return nil, err
	}
	t := &tapCounts{nc: nc, n: map[string]int64{}}
	sub, err := nc.Subscribe(">", func(m *nats.Msg) {
		k := pattern(m.Subject)
		if strings.HasPrefix(m.Subject, "$JS.ACK.") {
			// +ACK, +WPI (a running task's heartbeat), -NAK, +TERM.
			kind, _, _ := strings.Cut(string(m.Data), " ")
			k += " " + kind
		}
		t.mu.Lock()
		t.n[k]++
		t.mu.Unlock()
	})
	if err != nil {
		nc.Close()
		return nil, err
	}
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		nc.Close()
		return nil, err
	}
	return t, nil
}

// pattern keeps a subject's first four tokens, with every token that
// names an instance (it holds a digit, or is an inbox or a long id)
// replaced by '*'.
func pattern(subject string) string {
	toks := strings.Split(subject, ".")
	if len(toks) > 4 {
		toks = toks[:4]
	}
	for i, tok := range toks {
		if i > 0 && (strings.ContainsAny(tok, "0123456789") || len(tok) > 16 || toks[0] == "_INBOX") {
			toks[i] = "*"
		}
	}
	return strings.Join(toks, ".")
}

func (t *tapCounts) print(w io.Writer) {
	_ = t.nc.Drain()
	t.mu.Lock()
	defer t.mu.Unlock()
	keys := make([]string, 0, len(t.n))
	for k := range t.n {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return int(t.n[b] - t.n[a]) })
	var total, wpi int64
	for _, k := range keys {
		fmt.Fprintf(w, "tap %10d %s\n", t.n[k], k)
		total += t.n[k]
		if strings.HasSuffix(k, " +WPI") {
			wpi += t.n[k]
		}
	}
	fmt.Fprintf(w, "tap total %d heartbeats %d\n", total, wpi)
}
