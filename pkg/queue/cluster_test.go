package queue_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/queue/queuetest"
)

func clusterJS(t *testing.T, nodes []*queue.Embedded) jetstream.JetStream {
	t.Helper()
	var urls []string
	for _, n := range nodes {
		urls = append(urls, n.URL())
	}
	nc, err := nats.Connect(strings.Join(urls, ","))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// replicasOf is how many servers keep stream, by its cluster info.
func replicasOf(t *testing.T, js jetstream.JetStream, stream string) (config int, placed int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatalf("stream %s: %v", stream, err)
	}
	info := s.CachedInfo()
	if info.Cluster == nil || info.Cluster.Leader == "" {
		t.Fatalf("stream %s: no cluster leader in %+v", stream, info.Cluster)
	}
	return info.Config.Replicas, 1 + len(info.Cluster.Replicas)
}

// TestReplicatedStreamAndBucketOnACluster: on a three-node JetStream
// cluster the task stream and the run directory take the replica count
// asked for; a process that asks for none keeps it; more replicas than
// servers is an error naming the setting, returned at once.
func TestReplicatedStreamAndBucketOnACluster(t *testing.T) {
	nodes := queuetest.StartCluster(t, 3)
	js := clusterJS(t, nodes)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	if _, err := queue.EnsureStream(ctx, js, queue.StreamOptions{Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := queue.RunsKV(ctx, js, 3); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{queue.StreamName, "KV_" + queue.RunsBucket} {
		if cfg, placed := replicasOf(t, js, s); cfg != 3 || placed != 3 {
			t.Errorf("%s: %d replicas configured, on %d servers; want 3 and 3", s, cfg, placed)
		}
	}

	// A worker or a run started without the setting keeps the count.
	if _, err := queue.EnsureStream(ctx, js, queue.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := queue.RunsKV(ctx, js, 0); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{queue.StreamName, "KV_" + queue.RunsBucket} {
		if cfg, placed := replicasOf(t, js, s); cfg != 3 || placed != 3 {
			t.Errorf("%s after a process without the setting: %d replicas configured, on %d servers; want 3 and 3", s, cfg, placed)
		}
	}

	// Refused after a grace that lets a cluster whose servers started
	// together learn of each other, never a hang.
	start := time.Now()
	_, err := queue.EnsureStream(ctx, js, queue.StreamOptions{Replicas: 5})
	if err == nil || !strings.Contains(err.Error(), "--nats-replicas") {
		t.Errorf("5 replicas on 3 servers: err = %v, want one naming --nats-replicas", err)
	}
	t.Logf("5 replicas on 3 servers, refused after %s: %v", time.Since(start).Round(time.Millisecond), err)
	if d := time.Since(start); d > 25*time.Second {
		t.Errorf("refusing 5 replicas took %s", d)
	}
	if cfg, _ := replicasOf(t, js, queue.StreamName); cfg != 3 {
		t.Errorf("a refused update changed the stream to %d replicas", cfg)
	}
	if _, err := queue.EnsureStream(ctx, js, queue.StreamOptions{Replicas: 6}); err == nil || !strings.Contains(err.Error(), "got 6") {
		t.Errorf("6 replicas: err = %v, want the limit", err)
	}
}

// TestReplicasOnOneServer: a single server keeps one replica; asking for
// three is an error naming the setting.
func TestReplicasOnOneServer(t *testing.T) {
	e := queuetest.Start(t)
	js := clusterJS(t, []*queue.Embedded{e})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := queue.EnsureStream(ctx, js, queue.StreamOptions{Replicas: 3})
	if err == nil || !strings.Contains(err.Error(), "--nats-replicas") {
		t.Errorf("3 replicas on one server: err = %v, want one naming --nats-replicas", err)
	}
	_, err = queue.RunsKV(ctx, js, 3)
	if err == nil || !strings.Contains(err.Error(), "--nats-replicas") {
		t.Errorf("run directory with 3 replicas on one server: err = %v, want one naming --nats-replicas", err)
	}
	if _, err := queue.RunsKV(ctx, js, 0); err != nil {
		t.Fatal(err)
	}
}

// TestRunTableThroughALostServer: the server leading the run directory
// stops; a worker's view keeps the announced run live throughout and
// sees a run announced after the failover.
func TestRunTableThroughALostServer(t *testing.T) {
	nodes := queuetest.StartCluster(t, 3)
	js := clusterJS(t, nodes)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	kv, err := queue.RunsKV(ctx, js, 3)
	if err != nil {
		t.Fatal(err)
	}
	stop, err := queue.Announce(ctx, kv, queue.RunInfo{RunID: "r1", Addr: "127.0.0.1:1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	wjs := clusterJS(t, nodes)
	wkv, err := queue.RunsKV(ctx, wjs, 0)
	if err != nil {
		t.Fatal(err)
	}
	rt := queue.NewRunTable()
	go func() { _ = rt.Watch(ctx, wkv) }()
	<-rt.Ready()
	if _, _, live := rt.Lookup("r1"); !live {
		t.Fatal("r1 not live before the failover")
	}
	leader, _ := replicasOfLeader(t, js, "KV_"+queue.RunsBucket)
	for _, n := range nodes {
		if n.Name() == leader {
			n.Shutdown()
		}
	}
	lost := time.Now()
	var stop2 func()
	defer func() {
		if stop2 != nil {
			stop2()
		}
	}()
	for time.Since(lost) < 30*time.Second {
		if _, _, live := rt.Lookup("r1"); !live {
			t.Fatalf("r1 taken for abandoned %s after the run directory's leader %s stopped", time.Since(lost), leader)
		}
		if stop2 == nil && time.Since(lost) > 2*queue.StaleAfter {
			if stop2, err = queue.Announce(ctx, kv, queue.RunInfo{RunID: "r2", Addr: "127.0.0.1:2"}, nil); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, live := rt.Lookup("r2"); live {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("r2, announced after the failover, not seen in %s", time.Since(lost))
}

func replicasOfLeader(t *testing.T, js jetstream.JetStream, stream string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	return s.CachedInfo().Cluster.Leader, nil
}
