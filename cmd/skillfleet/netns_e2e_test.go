package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/coordinator/dispatch"
)

// EnvRequireNetns makes the multi-host test fail, instead of skip, where
// network namespaces cannot be created (.ci/run sets it).
const EnvRequireNetns = "SKILLFLEET_REQUIRE_NETNS"

// netns is a set of network namespaces made for one test: a hub with a
// bridge on a private subnet, and worker namespaces each linked to the
// bridge by a veth pair. Everything is removed when the test ends.
type netns struct {
	t      *testing.T
	hub    string
	links  map[string]string // worker namespace → its veth end in the hub
	prefix string
}

const hubIP = "10.213.0.1"

func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// newNetns builds the hub and n worker namespaces, or skips (fails under
// $SKILLFLEET_REQUIRE_NETNS) with the reason they cannot be made.
func newNetns(t *testing.T, workers int) *netns {
	t.Helper()
	tag := fmt.Sprintf("%d", os.Getpid()%100000)
	n := &netns{t: t, hub: "sfhub" + tag, links: map[string]string{}, prefix: tag}
	unavailable := func(err error) {
		if os.Getenv(EnvRequireNetns) != "" {
			t.Fatalf("network namespaces are required ($%s is set) but cannot be created: %v", EnvRequireNetns, err)
		}
		t.Skipf("skipping the multi-host test: network namespaces cannot be created here (needs root and iproute2): %v", err)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		unavailable(err)
	}
	if err := ipCmd("netns", "add", n.hub); err != nil {
		unavailable(err)
	}
	t.Cleanup(func() { _ = ipCmd("netns", "del", n.hub) })
	steps := [][]string{
		{"-n", n.hub, "link", "set", "lo", "up"},
		{"-n", n.hub, "link", "add", "br0", "type", "bridge"},
		{"-n", n.hub, "addr", "add", hubIP + "/24", "dev", "br0"},
		{"-n", n.hub, "link", "set", "br0", "up"},
	}
	for i := 1; i <= workers; i++ {
		ns := fmt.Sprintf("sfw%d_%s", i, tag)
		hubEnd, wEnd := fmt.Sprintf("sfh%d%s", i, tag), fmt.Sprintf("sfv%d%s", i, tag)
		if err := ipCmd("netns", "add", ns); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ipCmd("netns", "del", ns) })
		n.links[ns] = hubEnd
		steps = append(steps,
			[]string{"link", "add", hubEnd, "type", "veth", "peer", "name", wEnd},
			[]string{"link", "set", hubEnd, "netns", n.hub},
			[]string{"link", "set", wEnd, "netns", ns},
			[]string{"-n", n.hub, "link", "set", hubEnd, "master", "br0"},
			[]string{"-n", n.hub, "link", "set", hubEnd, "up"},
			[]string{"-n", ns, "link", "set", "lo", "up"},
			[]string{"-n", ns, "addr", "add", fmt.Sprintf("10.213.0.%d/24", 10+i), "dev", wEnd},
			[]string{"-n", ns, "link", "set", wEnd, "up"},
		)
	}
	for _, s := range steps {
		if err := ipCmd(s...); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// workers returns the worker namespaces in order.
func (n *netns) workers() []string {
	var out []string
	for i := 1; ; i++ {
		ns := fmt.Sprintf("sfw%d_%s", i, n.prefix)
		if _, ok := n.links[ns]; !ok {
			return out
		}
		out = append(out, ns)
	}
}

// in starts a program inside a namespace.
func (n *netns) in(ns string, name string, args ...string) *proc {
	n.t.Helper()
	return startCmd(n.t, "ip", append([]string{"netns", "exec", ns, name}, args...)...)
}

// cut takes a worker namespace's link to the hub down.
func (n *netns) cut(ns string) {
	n.t.Helper()
	if err := ipCmd("-n", n.hub, "link", "set", n.links[ns], "down"); err != nil {
		n.t.Fatal(err)
	}
}

func buildNatsd(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "natsd")
	cmd := exec.Command("go", "build", "-o", out, "./scripts/bench/natsd")
	cmd.Dir = repoRoot(t)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build natsd: %v\n%s", err, b)
	}
	return out
}

// waitTCP waits until something accepts connections at addr inside ns.
func waitTCP(t *testing.T, ns, addr string) {
	t.Helper()
	host, port, _ := strings.Cut(addr, ":")
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := exec.Command("ip", "netns", "exec", ns, "bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/%s/%s", host, port)).Run()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s in %s", addr, ns)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestMultiHostRunSurvivesACutLink: NATS, Redis, the model server and the
// coordinator in one network namespace, workers in two others, reached
// only over a private test subnet inside those namespaces. Mid-run the
// link to one worker namespace goes down: its in-flight tasks return to
// the queue and the other worker finishes them. The run completes with
// exactly the decisions of an undisturbed run, and every result is
// recorded once.
func TestMultiHostRunSurvivesACutLink(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes in network namespaces")
	}
	root := repoRoot(t)
	ref := filepath.Join(t.TempDir(), "ref")
	if out, err := trainDemo(t, ref, nil, "--workers", "2", "--set", "runtime.idle_fill=false"); err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}

	n := newNetns(t, 2)
	natsd := buildNatsd(t)
	n.in(n.hub, natsd, "--addr", "0.0.0.0:4222", "--store", t.TempDir())
	redisDir := t.TempDir()
	n.in(n.hub, "redis-server", "--port", "6379", "--bind", "0.0.0.0", "--protected-mode", "no",
		"--save", "", "--appendonly", "no", "--dir", redisDir)
	// 10 ms per call keeps the run going long enough to cut it mid-way.
	n.in(n.hub, binary, "sim-llm", "--addr", "0.0.0.0:8089", "--latency", "10ms")
	for _, a := range []string{"127.0.0.1:4222", "127.0.0.1:6379", "127.0.0.1:8089"} {
		waitTCP(t, n.hub, a)
	}
	model := "http://" + hubIP + ":8089/v1"
	dir := filepath.Join(t.TempDir(), "run")
	coord := n.in(n.hub, binary, "coordinator", "--config", filepath.Join(root, "configs", "demo.yaml"), "--out", dir,
		"--nats", "nats://127.0.0.1:4222", "--grpc-addr", "0.0.0.0:7000", "--insecure-grpc", "--redis", "redis://127.0.0.1:6379/0",
		"--log-level", "warn",
		"--set", "env.skill_init="+filepath.Join(root, "configs", "skills", "sim_demo_seed.md"),
		"--set", "runtime.sim_llm=false", "--set", "runtime.idle_fill=false",
		"--set", "model.target_base_url="+model, "--set", "model.optimizer_base_url="+model)
	waitTCP(t, n.hub, "127.0.0.1:7000")
	var workers []*proc
	for _, ns := range n.workers() {
		workers = append(workers, n.in(ns, binary, "worker", "--nats", "nats://"+hubIP+":4222", "--coordinator", hubIP+":7000",
			"--redis", "redis://"+hubIP+":6379/0", "--concurrency", "16", "--optimizer-concurrency", "8", "--log-level", "warn"))
	}

	// Cut the first worker's link once a third of the run's rollouts are
	// recorded (the journal grows as results arrive).
	journal := filepath.Join(dir, "results.journal")
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if st, err := os.Stat(journal); err == nil && st.Size() > 400_000 {
			break
		}
		select {
		case err := <-coord.done:
			t.Fatalf("the run ended before the link was cut (err %v)\n%s", err, coord.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not get going\ncoordinator: %s\nworker: %s", coord.stderr.String(), workers[0].stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	n.cut(n.workers()[0])
	t.Logf("cut the link to %s mid-run", n.workers()[0])

	select {
	case err := <-coord.done:
		if err != nil {
			t.Fatalf("coordinator: %v\n%s", err, coord.stderr.String())
		}
	case <-time.After(5 * time.Minute):
		t.Fatalf("the run did not finish after the cut\n%s", coord.stderr.String())
	}
	if !bytes.Equal(readFile(t, filepath.Join(ref, "events.jsonl")), readFile(t, filepath.Join(dir, "events.jsonl"))) {
		t.Error("the multi-host run with a cut link decided differently from the undisturbed run")
	}
	if !bytes.Equal(readFile(t, filepath.Join(ref, "best_skill.md")), readFile(t, filepath.Join(dir, "best_skill.md"))) {
		t.Error("best_skill.md differs from the undisturbed run")
	}
	// Every result is in the journal exactly once.
	j, results, err := dispatch.OpenJournal(journal, true)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	seen := map[string]bool{}
	for _, r := range results {
		if seen[r.GetTaskId()] {
			t.Errorf("task %s recorded twice", r.GetTaskId())
		}
		seen[r.GetTaskId()] = true
	}
	t.Logf("%d results recorded, each once", len(results))
}
