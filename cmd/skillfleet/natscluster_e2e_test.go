package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillfleet/skillfleet/coordinator/campaign"
	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/queue/queuetest"
)

// natsNode is one nats-server process of a test cluster, restartable
// on the same ports and store.
type natsNode struct {
	name string
	args []string
	p    *proc
}

// natsCluster is three nats-server processes (the pinned module, built
// from scripts/bench/natsd) forming one JetStream cluster on loopback.
type natsCluster struct {
	bin   string
	nodes []*natsNode
	urls  string
}

func startNatsCluster(t *testing.T, n int) *natsCluster {
	t.Helper()
	c := &natsCluster{bin: buildNatsd(t)}
	ports := queuetest.FreePorts(t, 2*n)
	var routes, urls []string
	for i := range n {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[n+i]))
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", ports[i]))
	}
	for i := range n {
		node := &natsNode{name: fmt.Sprintf("n%d", i+1), args: []string{
			"--addr", fmt.Sprintf("127.0.0.1:%d", ports[i]), "--store", t.TempDir(),
			"--name", fmt.Sprintf("n%d", i+1), "--cluster", fmt.Sprintf("127.0.0.1:%d", ports[n+i]),
			"--cluster-name", "skillfleet-e2e", "--routes", strings.Join(routes, ","),
		}}
		c.nodes = append(c.nodes, node)
		c.start(t, node)
	}
	c.urls = strings.Join(urls, ",")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := queuetest.WaitCluster(ctx, c.urls, n); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *natsCluster) start(t *testing.T, node *natsNode) {
	t.Helper()
	node.p = startCmd(t, c.bin, node.args...)
	node.p.line(t, "nats listening on ", 60*time.Second)
}

func (c *natsCluster) node(t *testing.T, name string) *natsNode {
	t.Helper()
	for _, n := range c.nodes {
		if n.name == name {
			return n
		}
	}
	t.Fatalf("no cluster node %q", name)
	return nil
}

// kill ends a node with SIGKILL: no clean shutdown, no leadership handed on.
func (c *natsCluster) kill(t *testing.T, node *natsNode) {
	t.Helper()
	if err := node.p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-node.p.done
}

// streamState is the task stream's leader and whether every replica is
// current (caught up with the leader), by the cluster's own stream info.
func streamState(ctx context.Context, js jetstream.JetStream, stream string) (leader string, current bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return "", false, err
	}
	info := s.CachedInfo()
	if info.Cluster == nil {
		return "", false, fmt.Errorf("stream %s has no cluster info", stream)
	}
	current = info.Cluster.Leader != "" && len(info.Cluster.Replicas) == info.Config.Replicas-1
	for _, r := range info.Cluster.Replicas {
		current = current && r.Current && !r.Offline
	}
	return info.Cluster.Leader, current, nil
}

// journalGrowth watches the total size of the campaign's result journals
// and keeps the times at which it grew.
type journalGrowth struct {
	mu    sync.Mutex
	times []time.Time
}

func (g *journalGrowth) watch(ctx context.Context, out string) {
	var last int64
	for {
		var total int64
		matches, _ := filepath.Glob(filepath.Join(out, "cells", "*", "results.journal"))
		for _, m := range matches {
			if fi, err := os.Stat(m); err == nil {
				total += fi.Size()
			}
		}
		if total > last {
			last = total
			g.mu.Lock()
			g.times = append(g.times, time.Now())
			g.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// after is the first growth after t (zero if none).
func (g *journalGrowth) after(t time.Time) time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, x := range g.times {
		if x.After(t) {
			return x
		}
	}
	return time.Time{}
}

// longest is the longest interval between growths.
func (g *journalGrowth) longest() (gap time.Duration, at time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := 1; i < len(g.times); i++ {
		if d := g.times[i].Sub(g.times[i-1]); d > gap {
			gap, at = d, g.times[i-1]
		}
	}
	return gap, at
}

// TestCampaignSurvivesNATSNodeLoss: a campaign on a three-node JetStream
// cluster with every stream and bucket on three replicas, served by two
// worker processes. The node leading the task stream is killed (SIGKILL)
// mid-campaign, restarted once the campaign has moved on, and then the
// stream's leader is killed again. Every cell makes the decisions it
// makes alone, each result is recorded once, and no pause in recorded
// results outlasts the cluster's leader election by more than a few
// seconds.
func TestCampaignSurvivesNATSNodeLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes and runs the demo many times")
	}
	t.Parallel()
	cl := startNatsCluster(t, 3)
	nc, err := nats.Connect(cl.urls, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		start(t, "worker", "--nats", cl.urls, "--nats-replicas", "3", "--concurrency", "12", "--optimizer-concurrency", "8", "--log-level", "warn")
	}
	cells := sixCells()
	spec := writeCampaign(t, cells, 2)
	out := filepath.Join(t.TempDir(), "camp")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var growth journalGrowth
	go growth.watch(ctx, out)
	camp := startIn(t, repoRoot(t), "campaign", "--config", spec, "--out", out, "--nats", cl.urls, "--nats-replicas", "3", "--log-level", "warn")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("campaign stderr:\n%s", camp.stderr.String())
		}
	})

	// waitLeader polls the stream's cluster info until a leader other
	// than gone is elected and returns it with the time it took.
	waitLeader := func(gone string, since time.Time) (string, time.Duration) {
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			if l, _, err := streamState(ctx, js, queue.StreamName); err == nil && l != "" && l != gone {
				return l, time.Since(since)
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("no task stream leader in 60s after %s was killed", gone)
		return "", 0
	}
	// The task stream's leader dies once the first cell is under way.
	camp.line(t, "cell s1: started", 120*time.Second)
	time.Sleep(1500 * time.Millisecond)
	first, _ := waitLeader("", time.Now())
	kill1 := time.Now()
	cl.kill(t, cl.node(t, first))
	leader, elect1 := waitLeader(first, kill1)
	t.Logf("killed %s, the task stream's leader; %s leads after %s", first, leader, elect1.Round(10*time.Millisecond))

	// It comes back once a cell has finished on the two survivors, and
	// catches up.
	for done := false; !done; {
		done = strings.HasSuffix(strings.Fields(camp.line(t, "cell ", 180*time.Second))[2], "done")
	}
	cl.start(t, cl.node(t, first))
	restarted := time.Now()
	for {
		if _, cur, err := streamState(ctx, js, queue.StreamName); err == nil && cur {
			break
		}
		if time.Since(restarted) > 90*time.Second {
			t.Fatalf("restarted %s did not catch up with the task stream in 90s", first)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("restarted %s; all three task stream replicas current after %s", first, time.Since(restarted).Round(10*time.Millisecond))

	// Then another node dies: the stream's leader again (never the node
	// just restarted).
	second, _ := waitLeader("", time.Now())
	if second == first {
		for _, n := range cl.nodes {
			if n.name != first {
				second = n.name
				break
			}
		}
	}
	kill2 := time.Now()
	cl.kill(t, cl.node(t, second))
	leader, elect2 := waitLeader(second, kill2)
	t.Logf("killed %s; %s leads the task stream after %s", second, leader, elect2.Round(10*time.Millisecond))

	select {
	case err := <-camp.done:
		if err != nil {
			var why strings.Builder
			if f, rerr := campaign.Read(out); rerr == nil {
				for _, c := range f.Cells {
					fmt.Fprintf(&why, "cell %s: %s %s\n", c.Name, c.State, c.Error)
				}
			}
			t.Fatalf("campaign: %v\n%s%s", err, why.String(), camp.stderr.String())
		}
	case <-time.After(10 * time.Minute):
		t.Fatalf("campaign not done 10 minutes after the second kill\n%s", camp.stderr.String())
	}
	cancel()
	checkCells(t, out, cells)

	// Pauses: from each kill to the next recorded result, and the longest
	// gap between recorded results over the whole campaign.
	const slack = 10 * time.Second
	for _, k := range []struct {
		what  string
		at    time.Time
		elect time.Duration
	}{{"first kill", kill1, elect1}, {"second kill", kill2, elect2}} {
		next := growth.after(k.at)
		if next.IsZero() {
			t.Errorf("%s: no result recorded after it: the campaign ended before the node was lost", k.what)
			continue
		}
		pause := next.Sub(k.at)
		t.Logf("%s: next result recorded after %s (leader election %s)", k.what, pause.Round(10*time.Millisecond), k.elect.Round(10*time.Millisecond))
		if pause > k.elect+slack {
			t.Errorf("%s: results stalled %s, longer than the leader election (%s) plus %s", k.what, pause, k.elect, slack)
		}
	}
	gap, at := growth.longest()
	t.Logf("longest pause between recorded results: %s, from %s after the first kill", gap.Round(10*time.Millisecond), at.Sub(kill1).Round(10*time.Millisecond))
	if limit := max(elect1, elect2) + slack; gap > limit {
		t.Errorf("results stalled %s, longer than the slower leader election plus %s (%s)", gap, slack, limit)
	}
}
