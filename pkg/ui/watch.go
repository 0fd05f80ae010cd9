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

// watch keeps one view (a run, a campaign, the fleet) and tells the open
// pages when it changes. It polls only while a page is subscribed: with no
// page open it costs nothing; a request without a stream re-checks at most
// once per poll interval.
type watch struct {
	ctx   context.Context
	poll  time.Duration
	fp    func() string // cheap change detector (nil: always rebuild)
	build func() (any, error)

	mu      sync.Mutex
	lastFP  string
	data    []byte
	err     error
	checked time.Time
	subs    map[chan struct{}]struct{}
	polling bool
}

func newWatch(ctx context.Context, poll time.Duration, fp func() string, build func() (any, error)) *watch {
	return &watch{ctx: ctx, poll: poll, fp: fp, build: build, subs: map[chan struct{}]struct{}{}}
}

// refresh rebuilds the view if its files changed; it reports whether the
// view's JSON changed.
func (w *watch) refresh() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.checked = time.Now()
	fp := ""
	if w.fp != nil {
		fp = w.fp()
		if w.data != nil && fp == w.lastFP {
			return false
		}
	}
	v, err := w.build()
	var data []byte
	if err == nil {
		data, err = json.Marshal(v)
	}
	if err != nil {
		changed := w.err == nil || w.err.Error() != err.Error()
		w.err = err
		// The files may be mid-write: try again on the next poll.
		w.lastFP = ""
		return changed
	}
	w.lastFP = fp
	changed := w.err != nil || !bytes.Equal(data, w.data)
	w.err, w.data = nil, data
	return changed
}

// current is the view's JSON, refreshed if the last check is old.
func (w *watch) current() ([]byte, error) {
	w.mu.Lock()
	stale := time.Since(w.checked) >= w.poll || (w.data == nil && w.err == nil)
	w.mu.Unlock()
	if stale {
		w.refresh()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.data, w.err
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

// stream sends the view as Server-Sent Events: now, then on every change,
// with a comment line as keep-alive. The browser's EventSource reconnects
// by itself when the server goes away and comes back.
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
	send := func() bool {
		data, err := w.current()
		var b bytes.Buffer
		if err != nil {
			msg, _ := json.Marshal(err.Error())
			fmt.Fprintf(&b, "event: failure\ndata: %s\n\n", msg)
		} else {
			fmt.Fprintf(&b, "event: view\ndata: %s\n\n", data)
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
