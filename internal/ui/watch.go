package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// part is one named piece of a view, sent to a page as an event of that
// name. A run's view has two (its base and its live part) so that a page
// following a live run gets the small part every second and the large one
// once a step.
type part struct {
	event string
	value any
	// raw, when set, is value already as JSON (a part that did not change
	// is not marshalled again).
	raw []byte
}

// watch keeps one view (a run, a campaign, the fleet) and tells the open
// pages when it changes. It polls only while a page is subscribed: with no
// page open it costs nothing; a request without a stream re-checks at most
// once per poll interval.
type watch struct {
	ctx   context.Context
	poll  time.Duration
	fp    func() string // cheap change detector (nil: always rebuild)
	build func() ([]part, error)

	mu      sync.Mutex
	lastFP  string
	names   []string
	data    map[string][]byte
	version map[string]int64
	err     error
	errV    int64
	checked time.Time
	subs    map[chan struct{}]struct{}
	polling bool
}

func newWatch(ctx context.Context, poll time.Duration, fp func() string, build func() ([]part, error)) *watch {
	return &watch{ctx: ctx, poll: poll, fp: fp, build: build, subs: map[chan struct{}]struct{}{},
		data: map[string][]byte{}, version: map[string]int64{}}
}

// one is a build function for a view of one part, "view".
func one(f func() (any, error)) func() ([]part, error) {
	return func() ([]part, error) {
		v, err := f()
		if err != nil {
			return nil, err
		}
		return []part{{event: "view", value: v}}, nil
	}
}

// refresh rebuilds the view if its files changed; it reports whether any
// part's JSON changed.
func (w *watch) refresh() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.checked = time.Now()
	fp := ""
	if w.fp != nil {
		fp = w.fp()
		if w.names != nil && fp == w.lastFP {
			return false
		}
	}
	parts, err := w.build()
	datas := make([][]byte, len(parts))
	for i, p := range parts {
		if err != nil {
			break
		}
		if p.raw != nil {
			datas[i] = p.raw
			continue
		}
		datas[i], err = json.Marshal(p.value)
	}
	if err != nil {
		changed := w.err == nil || w.err.Error() != err.Error()
		if changed {
			w.errV++
		}
		w.err = err
		// The files may be mid-write: try again on the next poll.
		w.lastFP = ""
		return changed
	}
	w.lastFP = fp
	changed := w.err != nil
	w.err = nil
	names := make([]string, len(parts))
	for i, p := range parts {
		names[i] = p.event
		if !bytes.Equal(datas[i], w.data[p.event]) {
			w.data[p.event] = datas[i]
			w.version[p.event]++
			changed = true
		}
	}
	w.names = names
	return changed
}

func (w *watch) fresh() {
	w.mu.Lock()
	stale := time.Since(w.checked) >= w.poll || (w.names == nil && w.err == nil)
	w.mu.Unlock()
	if stale {
		w.refresh()
	}
}

// current is the whole view as one JSON object (its parts merged),
// refreshed if the last check is old.
func (w *watch) current() ([]byte, error) {
	w.fresh()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return nil, w.err
	}
	if len(w.names) == 1 {
		return w.data[w.names[0]], nil
	}
	merged := map[string]json.RawMessage{}
	for _, n := range w.names {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(w.data[n], &m); err != nil {
			return nil, err
		}
		for k, v := range m {
			merged[k] = v
		}
	}
	return json.Marshal(merged)
}

// part is one part's JSON, refreshed if the last check is old (nil when
// the view has no such part or failed to build).
func (w *watch) part(name string) []byte {
	w.fresh()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return nil
	}
	return w.data[name]
}

func (w *watch) subscribe() chan struct{} {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.subs[ch] = struct{}{}
	if !w.polling {
		w.polling = true
		go w.loop()
	}
	return ch
}

func (w *watch) unsubscribe(ch chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.subs, ch)
}

// loop polls while anyone is subscribed.
func (w *watch) loop() {
	t := time.NewTicker(w.poll)
	defer t.Stop()
	for {
		select {
		case <-w.ctx.Done():
			w.mu.Lock()
			w.polling = false
			w.mu.Unlock()
			return
		case <-t.C:
		}
		w.mu.Lock()
		if len(w.subs) == 0 {
			w.polling = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		if !w.refresh() {
			continue
		}
		w.mu.Lock()
		for ch := range w.subs {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
		w.mu.Unlock()
	}
}

// stream sends the view as Server-Sent Events: every part now, then each
// part that changed, with a comment line as keep-alive. The browser's
// EventSource reconnects by itself when the server goes away and comes
// back (the "retry" line sets its delay).
func (w *watch) stream(rw http.ResponseWriter, r *http.Request) {
	fl, ok := rw.(http.Flusher)
	if !ok {
		http.Error(rw, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	h := rw.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	ch := w.subscribe()
	defer w.unsubscribe(ch)
	sent := map[string]int64{}
	var sentErr int64
	send := func() bool {
		var b bytes.Buffer
		w.mu.Lock()
		if w.err != nil {
			if w.errV != sentErr {
				msg, _ := json.Marshal(w.err.Error())
				fmt.Fprintf(&b, "event: failure\ndata: %s\n\n", msg)
				sentErr = w.errV
			}
		} else {
			for _, n := range w.names {
				if v := w.version[n]; v != sent[n] {
					fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", n, w.data[n])
					sent[n] = v
				}
			}
		}
		w.mu.Unlock()
		if b.Len() == 0 {
			return true
		}
		if _, err := rw.Write(b.Bytes()); err != nil {
			return false
		}
		fl.Flush()
		return true
	}
	if _, err := fmt.Fprint(rw, "retry: 1000\n\n"); err != nil {
		return
	}
	w.fresh()
	if !send() {
		return
	}
	keep := time.NewTicker(15 * time.Second)
	defer keep.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-w.ctx.Done():
			return
		case <-ch:
			if !send() {
				return
			}
		case <-keep.C:
			if _, err := fmt.Fprint(rw, ": keep-alive\n\n"); err != nil {
				return
			}
			fl.Flush()
		}
	}
}
