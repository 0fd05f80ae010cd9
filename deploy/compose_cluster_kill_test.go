package deploy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillfleet/skillfleet/pkg/queue"
)

// The cluster-kill test (scripts/bench/cluster-kill.sh): the compose
// profile nats-cluster as shipped, its node leading both the task stream
// and the run directory's bucket killed (docker kill, SIGKILL) just as an
// eval cell starts, three times in one campaign. It takes minutes, so it
// runs only with SKILLFLEET_CLUSTER_KILL=1 (and the image skillfleet:local).

// killCells is the campaign: three demo cells, each followed by an
// eval-only cell that measures it, one cell at a time, so that each eval
// cell starts on its own, after the cluster has healed from the kill
// before it.
func killCampaign(configs string) string {
	var b strings.Builder
	b.WriteString("name: sim-cluster-kill\nmax_active_runs: 1\ncells:\n")
	for s := 1; s <= 3; s++ {
		fmt.Fprintf(&b, "  - {name: s%d, config: %s/demo.yaml, seed: %d}\n", s, configs, s)
		fmt.Fprintf(&b, "  - {name: s%d-again, eval: {from: s%d}}\n", s, s)
	}
	return b.String()
}

// clusterNodes are the nats-cluster profile's services, named as their
// servers are (--name=nats-N).
var clusterNodes = []string{"nats-1", "nats-2", "nats-3"}

// killFleet is the running compose cluster as the test sees it.
type killFleet struct {
	t   *testing.T
	c   *compose
	ids map[string]string // node name -> container id
	mu  sync.Mutex
	nc  *nats.Conn
	js  jetstream.JetStream
}

// urls are the client URLs of the running nodes, by the host ports Docker
// published them on (a restarted container may get other ports).
func (f *killFleet) urls() string {
	var us []string
	for _, n := range clusterNodes {
		id := f.ids[n]
		if out, err := exec.Command("docker", "inspect", "-f", "{{.State.Running}}", id).Output(); err != nil || strings.TrimSpace(string(out)) != "true" {
			continue
		}
		out, err := exec.Command("docker", "port", id, "4222/tcp").Output()
		if err != nil {
			continue
		}
		for _, l := range strings.Fields(string(out)) {
			if strings.HasPrefix(l, "127.0.0.1:") {
				us = append(us, "nats://"+l)
			}
		}
	}
	return strings.Join(us, ",")
}

// conn is a JetStream client on the running nodes. It is made anew when it
// has lost its connection or after reset (a restarted node may have other
// ports); otherwise it costs no docker call, so that a leader can be asked
// for in milliseconds.
func (f *killFleet) conn() (jetstream.JetStream, error) {
	f.mu.Lock()
	if f.nc != nil && f.nc.IsConnected() {
		defer f.mu.Unlock()
		return f.js, nil
	}
	f.mu.Unlock()
	u := f.urls()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.nc != nil {
		f.nc.Close()
		f.nc = nil
	}
	if u == "" {
		return nil, errors.New("no NATS node runs")
	}
	// The nodes advertise their compose-network addresses; the test
	// reaches them only by the published ports.
	nc, err := nats.Connect(u, nats.IgnoreDiscoveredServers(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond), nats.Timeout(2*time.Second))
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	f.nc, f.js = nc, js
	return js, nil
}

// reset makes the next conn connect to the nodes running then.
func (f *killFleet) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.nc != nil {
		f.nc.Close()
		f.nc = nil
	}
}

func (f *killFleet) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.nc != nil {
		f.nc.Close()
	}
}

// leader is a stream's leader ("" while it has none or cannot be asked).
func (f *killFleet) leader(stream string) string {
	js, err := f.conn()
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return ""
	}
	if c := s.CachedInfo().Cluster; c != nil {
		return c.Leader
	}
	return ""
}

// whole reports whether every stream of the account (tasks, buckets,
// object store) has a leader and all its replicas current, naming the
// first that has not.
func (f *killFleet) whole() (bool, string) {
	js, err := f.conn()
	if err != nil {
		return false, err.Error()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	l := js.ListStreams(ctx)
	n := 0
	for info := range l.Info() {
		n++
		c := info.Cluster
		if c == nil || c.Leader == "" || len(c.Replicas) != info.Config.Replicas-1 {
			return false, info.Config.Name + ": no leader or replicas missing"
		}
		for _, r := range c.Replicas {
			if !r.Current || r.Offline {
				return false, fmt.Sprintf("%s: replica %s not current", info.Config.Name, r.Name)
			}
		}
	}
	if err := l.Err(); err != nil {
		return false, err.Error()
	}
	if n == 0 {
		return false, "no streams yet"
	}
	return true, ""
}

// stepDown asks a stream's leader to hand its leadership to node.
func (f *killFleet) stepDown(stream, node string) error {
	if _, err := f.conn(); err != nil {
		return err
	}
	f.mu.Lock()
	nc := f.nc
	f.mu.Unlock()
	body, _ := json.Marshal(map[string]any{"placement": map[string]any{"preferred": node}})
	msg, err := nc.Request("$JS.API.STREAM.LEADER.STEPDOWN."+stream, body, 5*time.Second)
	if err != nil {
		return err
	}
	var resp struct {
		Success bool `json:"success"`
		Error   *struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return err
	}
	if resp.Error != nil {
		return errors.New(resp.Error.Description)
	}
	return nil
}

// align makes one node lead both the task stream and the run bucket (the
// bucket's leader steps down in favour of the stream's), and returns it.
func (f *killFleet) align(deadline time.Time) (string, error) {
	bucket := "KV_" + queue.RunsBucket
	var last error
	for time.Now().Before(deadline) {
		ls, lb := f.leader(queue.StreamName), f.leader(bucket)
		switch {
		case ls == "" || lb == "":
			last = fmt.Errorf("leaders: stream %q, bucket %q", ls, lb)
		case ls == lb:
			return ls, nil
		default:
			if err := f.stepDown(bucket, ls); err != nil {
				last = fmt.Errorf("step down %s for %s: %w", bucket, ls, err)
			}
			// An election follows the step-down.
			time.Sleep(time.Second)
			continue
		}
		time.Sleep(200 * time.Millisecond)
	}
	return "", fmt.Errorf("no node leads both %s and %s: %w", queue.StreamName, bucket, last)
}

// TestComposeClusterLosesStreamAndBucketLeader: the nats-cluster profile
// with two worker containers runs killCampaign. Each time an eval cell
// starts (its cell directory appears), the node that leads both the task
// stream and the run bucket is killed; once both have a new leader the
// node is started again, and the next round waits until every replica of
// every stream is current. The campaign must end with exit 0, every cell
// with the decisions it makes alone and each result recorded once, and no
// pause between recorded results (all cells' journals) longer than the
// slowest election plus killPauseMargin.
func TestComposeClusterLosesStreamAndBucketLeader(t *testing.T) {
	if os.Getenv("SKILLFLEET_CLUSTER_KILL") != "1" {
		t.Skip("takes minutes on a Docker engine: scripts/bench/cluster-kill.sh (SKILLFLEET_CLUSTER_KILL=1)")
	}
	if out, err := exec.Command("docker", "image", "inspect", "-f", "{{.Id}}", "skillfleet:local").CombinedOutput(); err != nil {
		t.Fatalf("no image skillfleet:local (scripts/bench/cluster-kill.sh builds it): %v\n%s", err, out)
	}
	latency := os.Getenv("SKILLFLEET_CLUSTER_KILL_LATENCY")
	if latency == "" {
		latency = "250ms"
	}
	t0 := time.Now()
	tmp := t.TempDir()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	extra := filepath.Join(tmp, "extra")
	if err := os.MkdirAll(extra, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(extra, "campaign.yaml"), []byte(killCampaign("/configs")), 0o644); err != nil {
		t.Fatal(err)
	}
	refCampaign := filepath.Join(tmp, "ref-campaign.yaml")
	if err := os.WriteFile(refCampaign, []byte(killCampaign(filepath.Join(root, "configs"))), 0o644); err != nil {
		t.Fatal(err)
	}
	// The shipped command with two changes: --config names killCampaign,
	// and no --redis. With Redis, an eval cell reads every answer from the
	// rollout cache its source cell filled: it publishes no task and ends
	// in a fraction of a second, before the election it should meet.
	var cmd []string
	replaced := false
	for _, a := range composeCommand(t, "cluster-campaign") {
		switch {
		case strings.HasPrefix(a, "--config="):
			cmd, replaced = append(cmd, "--config=/extra/campaign.yaml"), true
		case strings.HasPrefix(a, "--redis="):
		default:
			cmd = append(cmd, a)
		}
	}
	if !replaced {
		t.Fatalf("cluster-campaign command %v has no --config=", cmd)
	}
	// The model answers after a fixed latency, as a remote one would: the
	// cells then last long enough for the cluster to heal between kills.
	// Latency changes no answer.
	sim := append(composeCommand(t, "sim-llm"), "--latency="+latency)
	services := map[string]any{
		"cluster-campaign": map[string]any{"command": cmd, "volumes": []string{extra + ":/extra:ro"}},
		"sim-llm":          map[string]any{"command": sim},
	}
	for _, n := range clusterNodes {
		// Client ports for the test's JetStream API calls, on loopback.
		services[n] = map[string]any{"ports": []string{"127.0.0.1::4222"}}
	}
	override := filepath.Join(tmp, "cluster-kill.yml")
	ov, _ := json.Marshal(map[string]any{"services": services})
	if err := os.WriteFile(override, ov, 0o644); err != nil {
		t.Fatal(err)
	}

	t.Setenv("COMPOSE_PROFILES", "nats-cluster")
	c := newCompose(t, fmt.Sprintf("sfck%d", os.Getpid()), override)
	t.Cleanup(c.down)
	c.run("up", "-d", "--scale", "cluster-worker=2", "cluster-campaign", "cluster-worker")
	t.Logf("%.1fs: up -d returned (3 NATS nodes healthy, campaign and 2 workers started)", time.Since(t0).Seconds())

	f := &killFleet{t: t, c: c, ids: map[string]string{}}
	defer f.close()
	for _, n := range clusterNodes {
		ids := c.containers(n)
		if len(ids) != 1 {
			t.Fatalf("%s containers: %v", n, ids)
		}
		f.ids[n] = ids[0]
	}
	campaign := c.containers("cluster-campaign")
	if len(campaign) != 1 {
		t.Fatalf("cluster-campaign containers: %v", campaign)
	}
	vol := docker(t, "volume", "inspect", "-f", "{{.Mountpoint}}", c.project+"_runs")
	dir := filepath.Join(vol, "campaigns", "sim-demo-cluster")

	// The journal watch and the engine wait below end before the test
	// does, on every path out of it.
	ctx, cancel := context.WithCancel(context.Background())
	var bg sync.WaitGroup
	defer func() { cancel(); bg.Wait() }()
	var growth journalGrowth
	bg.Go(func() { growth.watch(ctx, dir) })

	type round struct {
		cell               string
		node               string
		startedAt          time.Time     // the cell's directory seen
		checked            time.Duration // from both leaders last seen on node to the cell's start
		killedAt           time.Time
		stream, bucket     time.Duration // to a new leader of each
		restartedAt        time.Time
		wholeAfterRestart  time.Duration
		before, firstAfter time.Time // recorded results around the kill
	}
	var rounds []round
	// The campaign container's end, watched without polling the engine.
	var exitCode string
	ended := make(chan struct{})
	bg.Go(func() {
		defer close(ended)
		out, err := exec.CommandContext(ctx, "docker", "wait", campaign[0]).Output()
		if err != nil {
			exitCode = "docker wait: " + err.Error()
			return
		}
		exitCode = strings.TrimSpace(string(out))
	})
	running := func() bool {
		select {
		case <-ended:
			return false
		default:
			return true
		}
	}
	for s := 1; s <= 3; s++ {
		cell := fmt.Sprintf("s%d-again", s)
		// The cluster whole again, and one node leading both.
		deadline := time.Now().Add(5 * time.Minute)
		for {
			ok, why := f.whole()
			if ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the cluster is not whole after 5 minutes: %s", s, why)
			}
			time.Sleep(250 * time.Millisecond)
		}
		if _, err := f.align(time.Now().Add(2 * time.Minute)); err != nil {
			t.Fatalf("round %d: %v", s, err)
		}
		cellDir := filepath.Join(dir, "cells", cell)
		if _, err := os.Stat(cellDir); err == nil {
			t.Fatalf("round %d: cell %s started before the cluster had healed from the kill before it (raise SKILLFLEET_CLUSTER_KILL_LATENCY)", s, cell)
		}
		// Wait for the eval cell to start, checking every half second that
		// one node still leads both (an election may move one meanwhile), so
		// that the kill follows the cell's start at once.
		var node string
		checked := time.Time{}
		for {
			if _, err := os.Stat(cellDir); err == nil {
				break
			}
			if time.Since(checked) > 500*time.Millisecond {
				if node, err = f.align(time.Now().Add(time.Minute)); err != nil {
					t.Fatalf("round %d: %v", s, err)
				}
				checked = time.Now()
			}
			if !running() {
				t.Fatalf("round %d: the campaign ended before cell %s started", s, cell)
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: cell %s did not start in 5 minutes", s, cell)
			}
			time.Sleep(20 * time.Millisecond)
		}
		// docker kill returns once the container has stopped: the signal
		// goes out at its start.
		r := round{cell: cell, node: node, startedAt: time.Now()}
		r.checked = r.startedAt.Sub(checked)
		docker(t, "kill", f.ids[node])
		r.killedAt = time.Now()
		r.before = growth.before(r.killedAt)
		// Both streams elect a leader among the two others.
		for r.stream == 0 || r.bucket == 0 {
			if time.Since(r.killedAt) > 3*time.Minute {
				t.Fatalf("round %d: no new leader 3 minutes after killing %s (stream %v, bucket %v)", s, node, r.stream, r.bucket)
			}
			if l := f.leader(queue.StreamName); r.stream == 0 && l != "" && l != node {
				r.stream = time.Since(r.killedAt)
			}
			if l := f.leader("KV_" + queue.RunsBucket); r.bucket == 0 && l != "" && l != node {
				r.bucket = time.Since(r.killedAt)
			}
			time.Sleep(50 * time.Millisecond)
		}
		docker(t, "start", f.ids[node])
		r.restartedAt = time.Now()
		f.reset()
		for {
			if ok, _ := f.whole(); ok {
				break
			}
			if time.Since(r.restartedAt) > 5*time.Minute {
				t.Fatalf("round %d: %s restarted, the cluster not whole after 5 minutes", s, node)
			}
			time.Sleep(250 * time.Millisecond)
		}
		r.wholeAfterRestart = time.Since(r.restartedAt)
		rounds = append(rounds, r)
		t.Logf("round %d: cell %s started; killed %s (leading %s and KV_%s %.2fs before it started; docker kill took %.2fs), at %.1fs; new stream leader after %.1fs, bucket leader after %.1fs; restarted, every replica current %.1fs later",
			s, cell, node, queue.StreamName, queue.RunsBucket, r.checked.Seconds(), r.killedAt.Sub(r.startedAt).Seconds(), r.killedAt.Sub(t0).Seconds(), r.stream.Seconds(), r.bucket.Seconds(), r.wholeAfterRestart.Seconds())
	}

	<-ended
	code := exitCode
	tEnd := time.Since(t0)
	cancel()
	logs, _ := exec.Command("docker", "logs", "--tail", "60", campaign[0]).CombinedOutput()
	if code != "0" {
		t.Fatalf("cluster-campaign container exited %s\n%s", code, logs)
	}
	// The campaign's closing table: each cell's calls and wall.
	if _, table, ok := strings.Cut(string(logs), "\ncampaign sim-cluster-kill:"); ok {
		t.Logf("campaign sim-cluster-kill:%s", table)
	}

	// The pauses: around each kill, and the longest of the campaign.
	var slowest time.Duration
	for i, r := range rounds {
		r.firstAfter = growth.after(r.killedAt)
		slowest = max(slowest, r.stream, r.bucket)
		if r.firstAfter.IsZero() || r.before.IsZero() {
			t.Errorf("round %d (%s, %s): no result recorded after the kill (the kill met no running cell)", i+1, r.cell, r.node)
			continue
		}
		gap := fmt.Sprintf("%.1fs from the last result before the kill to the first after it", r.firstAfter.Sub(r.before).Seconds())
		t.Logf("round %d (%s, %s): %s", i+1, r.cell, r.node, gap)
	}
	longest, at := growth.longest()
	t.Logf("campaign exit 0 at %.1fs; longest pause between recorded results %.1fs (at %.1fs); slowest election %.1fs; bound %.1fs",
		tEnd.Seconds(), longest.Seconds(), at.Sub(t0).Seconds(), slowest.Seconds(), (slowest + killPauseMargin).Seconds())
	if longest > slowest+killPauseMargin {
		t.Errorf("a pause of %.1fs between recorded results (at %.1fs): longer than the slowest election (%.1fs) plus %s",
			longest.Seconds(), at.Sub(t0).Seconds(), slowest.Seconds(), killPauseMargin)
	}

	// The reference: the same campaign alone, on this host (built and run
	// after the containers', so as not to slow them).
	bin := filepath.Join(tmp, "skillfleet")
	build := exec.Command("go", "build", "-o", bin, "./cmd/skillfleet")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ref := filepath.Join(tmp, "ref")
	refCmd := exec.Command(bin, "campaign", "--config", refCampaign, "--out", ref)
	refCmd.Dir = root
	if out, err := refCmd.CombinedOutput(); err != nil {
		t.Fatalf("reference campaign on the host: %v\n%s", err, out)
	}
	cells, _ := filepath.Glob(filepath.Join(ref, "cells", "*"))
	if len(cells) != 6 {
		t.Fatalf("reference has %d cells, want 6", len(cells))
	}
	for _, rc := range cells {
		cellAsAlone(t, rc, filepath.Join(dir, "cells", filepath.Base(rc)))
	}
	var killed []string
	for _, r := range rounds {
		killed = append(killed, r.node)
	}
	slices.Sort(killed)
	t.Logf("killed: %s; %d cells as alone", strings.Join(killed, ", "), len(cells))
}

// killPauseMargin is what a pause in recorded results may last beyond the
// slowest election: the clients' reconnect, the republish of tasks whose
// publish failed during the election, and a loaded machine's scheduling.
const killPauseMargin = 20 * time.Second

// journalGrowth keeps the times at which the campaign's result journals
// (all cells together) grew.
type journalGrowth struct {
	mu    sync.Mutex
	times []time.Time
}

func (g *journalGrowth) watch(ctx context.Context, campaignDir string) {
	var last int64
	for {
		if n := journalBytes(campaignDir); n > last {
			last = n
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

// before is the last growth before t (zero if none).
func (g *journalGrowth) before(t time.Time) time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	var last time.Time
	for _, x := range g.times {
		if x.Before(t) {
			last = x
		}
	}
	return last
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
