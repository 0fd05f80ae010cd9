package queue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/queue/queuetest"
)

// waitFor polls cond (the table follows the bucket asynchronously).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 10 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDirectoryHasOneEntryPerProcess: a process serving many runs puts
// one entry per refresh, whatever its number of runs; a watcher finds
// every run at the process's address, sees a withdrawn run go at once and
// every run go with the process; the weights of a process's runs count
// as their sum; a run entry of an older coordinator is still read.
func TestDirectoryHasOneEntryPerProcess(t *testing.T) {
	ns := queuetest.Start(t)
	nc, err := nats.Connect(ns.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	kv, err := queue.RunsKV(ctx, js, 0)
	if err != nil {
		t.Fatal(err)
	}
	rt := queue.NewRunTable()
	wctx, wstop := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { _ = rt.Watch(wctx, kv); close(watched) }()
	defer func() { wstop(); <-watched }()
	<-rt.Ready()

	const runs = 50
	a := queue.NewAnnouncer(kv, "proc-a", "127.0.0.1:7070", nil)
	actx, astop := context.WithCancel(ctx)
	announced := make(chan error, 1)
	go func() { announced <- a.Run(actx) }()
	defer func() { astop(); <-announced }()
	for i := range runs {
		if err := a.Add(ctx, fmt.Sprintf("run-%d", i), 0.5); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "every run listed", func() bool { return len(rt.Live()) == runs })
	if info, known, live := rt.Lookup("run-7"); !known || !live || info.Addr != "127.0.0.1:7070" {
		t.Fatalf("run-7: %+v known %v live %v; want live at 127.0.0.1:7070", info, known, live)
	}
	if w := rt.Weights(""); w != runs*0.5 {
		t.Fatalf("weights of the live runs = %v, want %v", w, runs*0.5)
	}
	if w := rt.Weights(a.Key()); w != 0 {
		t.Fatalf("weights without the process's own = %v, want 0", w)
	}

	// A coordinator of wire version 2 announces each run under its token.
	old, _ := json.Marshal(queue.RunInfo{RunID: "old-run", Addr: "127.0.0.1:9", Weight: 2})
	if _, err := kv.Put(ctx, queue.RunToken("old-run"), old); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the older coordinator's run", func() bool { _, _, live := rt.Lookup("old-run"); return live })
	if w := rt.Weights(a.Key()); w != 2 {
		t.Fatalf("weights with the older coordinator's run = %v, want 2", w)
	}

	var msgs atomic.Int32
	sub, err := nc.Subscribe("$KV."+queue.RunsBucket+"."+a.Key(), func(*nats.Msg) { msgs.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	window := 3 * queue.AnnounceEvery
	time.Sleep(window)
	_ = sub.Unsubscribe()
	if n := msgs.Load(); n < 2 || n > 4 {
		t.Fatalf("a process of %d runs put its entry %d times in %s; want one per %s", runs, n, window, queue.AnnounceEvery)
	}

	a.Remove("run-7")
	waitFor(t, "run-7 withdrawn", func() bool { _, known, live := rt.Lookup("run-7"); return known && !live })
	if _, _, live := rt.Lookup("run-8"); !live {
		t.Fatal("run-8 not live after run-7 was withdrawn")
	}
	astop()
	if err := <-announced; err != nil {
		t.Fatalf("announcer Run: %v", err)
	}
	announced <- nil // for the deferred stop
	waitFor(t, "the process's runs gone with it", func() bool { _, known, live := rt.Lookup("run-8"); return known && !live })
	if _, known, _ := rt.Lookup("never-run"); known {
		t.Fatal("a run never announced is known")
	}
}
