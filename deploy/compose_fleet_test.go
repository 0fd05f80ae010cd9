package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/skillfleet/skillfleet/coordinator/dispatch"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// The container test: docker-compose.yml and the Dockerfile as shipped,
// on a real Docker engine. scripts/container-test.sh prepares the engine
// and the image (skillfleet:local) and runs it with
// SKILLFLEET_CONTAINER_TEST=1; elsewhere it skips.

// compose runs the compose CLI ($SKILLFLEET_COMPOSE, or docker compose /
// docker-compose, whichever answers) in the repository root.
type compose struct {
	t       *testing.T
	cli     []string
	project string
	files   []string
}

func newCompose(t *testing.T, project string, files ...string) *compose {
	t.Helper()
	var cli []string
	if s := os.Getenv("SKILLFLEET_COMPOSE"); s != "" {
		cli = strings.Fields(s)
	} else if exec.Command("docker", "compose", "version").Run() == nil {
		cli = []string{"docker", "compose"}
	} else {
		cli = []string{"docker-compose"}
	}
	return &compose{t: t, cli: cli, project: project, files: append([]string{"docker-compose.yml"}, files...)}
}

func (c *compose) cmd(ctx context.Context, args ...string) *exec.Cmd {
	full := append([]string{}, c.cli[1:]...)
	for _, f := range c.files {
		full = append(full, "-f", f)
	}
	full = append(full, append([]string{"-p", c.project}, args...)...)
	cmd := exec.CommandContext(ctx, c.cli[0], full...)
	cmd.Dir = ".."
	return cmd
}

// run runs a compose command to its end and fails the test on an error.
func (c *compose) run(args ...string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := c.cmd(ctx, args...).CombinedOutput()
	if err != nil {
		c.t.Fatalf("%s %s: %v\n%s", strings.Join(c.cli, " "), strings.Join(args, " "), err, out)
	}
}

// down removes the project's containers, networks and volumes.
func (c *compose) down() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if out, err := c.cmd(ctx, "down", "-v", "-t", "2", "--remove-orphans").CombinedOutput(); err != nil {
		c.t.Errorf("compose down: %v\n%s", err, out)
	}
}

// containers returns the ids of a service's containers (running or not),
// oldest first. It asks the engine directly: the compose CLI can take
// seconds to start on a busy machine.
func (c *compose) containers(service string) []string {
	c.t.Helper()
	ids := strings.Fields(docker(c.t, "ps", "-aq", "--no-trunc",
		"--filter", "label=com.docker.compose.project="+c.project,
		"--filter", "label=com.docker.compose.service="+service))
	slices.Reverse(ids)
	return ids
}

func docker(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func containerTestEnabled(t *testing.T) {
	if os.Getenv("SKILLFLEET_CONTAINER_TEST") != "1" {
		t.Skip("needs a Docker engine and the image: run scripts/container-test.sh (SKILLFLEET_CONTAINER_TEST=1)")
	}
	if out, err := exec.Command("docker", "image", "inspect", "-f", "{{.Id}}", "skillfleet:local").CombinedOutput(); err != nil {
		t.Fatalf("no image skillfleet:local (scripts/container-test.sh builds it): %v\n%s", err, out)
	}
}

// journalBytes is the size of every cell's results journal so far.
func journalBytes(campaignDir string) int64 {
	var n int64
	files, _ := filepath.Glob(filepath.Join(campaignDir, "cells", "*", "results.journal"))
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			n += st.Size()
		}
	}
	return n
}

// waitFor polls cond every 200 ms until it holds or the campaign
// container has exited.
func waitFor(t *testing.T, what, campaign, campaignDir string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for !cond() {
		if docker(t, "inspect", "-f", "{{.State.Running}}", campaign) != "true" {
			t.Fatalf("campaign ended before %s (journals %d bytes)", what, journalBytes(campaignDir))
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after 5 minutes", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// fleetCampaign is the demo campaign at six seeds, three cells at a time:
// long enough in work (about twice the shipped sim-demo) that two workers
// are still busy when the fleet grows, whatever the machine's speed.
func fleetCampaign(configs string) string {
	return fmt.Sprintf("name: sim-fleet\nmax_active_runs: 3\nmatrix:\n  configs: [%s/demo.yaml]\n  seeds: [1, 2, 3, 4, 5, 6]\n", configs)
}

// composeCommand is a service's command in docker-compose.yml.
func composeCommand(t *testing.T, service string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Services map[string]struct {
			Command []string `json:"command"`
		} `json:"services"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	cmd := f.Services[service].Command
	if len(cmd) == 0 {
		t.Fatalf("docker-compose.yml: service %s has no command", service)
	}
	return cmd
}

// TestComposeFleetGrowsAndLosesWorkers runs a campaign on the compose
// fleet as shipped: two worker containers at first, six once results come
// in, then two of them killed (SIGKILL) while they hold tasks. The
// campaign service runs its shipped command with one change, --config
// naming fleetCampaign (mounted beside the shipped configs), and sim-llm
// answers with a fixed latency. Every cell
// must make the decisions it makes alone (the same campaign run by the
// skillfleet binary on this host, in-process workers), every result must
// be recorded once, the added workers must take work, and the campaign
// container must exit 0.
func TestComposeFleetGrowsAndLosesWorkers(t *testing.T) {
	containerTestEnabled(t)
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
	if err := os.WriteFile(filepath.Join(extra, "campaign.yaml"), []byte(fleetCampaign("/configs")), 0o644); err != nil {
		t.Fatal(err)
	}
	refCampaign := filepath.Join(tmp, "ref-campaign.yaml")
	if err := os.WriteFile(refCampaign, []byte(fleetCampaign(filepath.Join(root, "configs"))), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := composeCommand(t, "campaign")
	replaced := false
	for i, a := range cmd {
		if strings.HasPrefix(a, "--config=") {
			cmd[i], replaced = "--config=/extra/campaign.yaml", true
		}
	}
	if !replaced {
		t.Fatalf("campaign command %v has no --config=", cmd)
	}
	// The simulated model answers after 250 ms, as a remote model would:
	// two workers' 48 slots then bound the campaign's pace, so the fleet
	// grows while most of the work is still queued, however fast this
	// machine runs the model. Latency changes no answer.
	sim := append(composeCommand(t, "sim-llm"), "--latency=250ms")
	override := filepath.Join(tmp, "fleet.yml")
	ov, _ := json.Marshal(map[string]any{"services": map[string]any{
		"campaign": map[string]any{"command": cmd, "volumes": []string{extra + ":/extra:ro"}},
		"sim-llm":  map[string]any{"command": sim},
	}})
	if err := os.WriteFile(override, ov, 0o644); err != nil {
		t.Fatal(err)
	}

	bin := filepath.Join(tmp, "skillfleet")
	build := exec.Command("go", "build", "-o", bin, "./cmd/skillfleet")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	c := newCompose(t, fmt.Sprintf("sfct%d", os.Getpid()), override)
	t.Cleanup(c.down)
	c.run("up", "-d", "--scale", "worker=2")
	tUp := time.Since(t0)
	t.Logf("%.1fs: up -d --scale worker=2 returned", tUp.Seconds())

	vol := docker(t, "volume", "inspect", "-f", "{{.Mountpoint}}", c.project+"_runs")
	dir := filepath.Join(vol, "campaigns", "sim-demo")
	campaign := c.containers("campaign")
	if len(campaign) != 1 {
		t.Fatalf("campaign containers: %v", campaign)
	}
	first := c.containers("worker")
	if len(first) != 2 {
		t.Fatalf("worker containers after up --scale worker=2: %v", first)
	}

	waitFor(t, "the first results", campaign[0], dir, func() bool { return journalBytes(dir) > 0 })
	tGrow := time.Since(t0)
	grownAt := journalBytes(dir)
	c.run("up", "-d", "--no-deps", "--no-recreate", "--scale", "worker=6", "worker")
	t.Logf("%.1fs: scaled to 6 workers (journals %d bytes when it began, %d now)", time.Since(t0).Seconds(), grownAt, journalBytes(dir))
	all := c.containers("worker")
	if len(all) != 6 {
		t.Fatalf("worker containers after --scale worker=6: %v", all)
	}
	var added []string
	for _, id := range all {
		if !slices.Contains(first, id) {
			added = append(added, id)
		}
	}

	// Kill one of the first workers and one of the added ones, once the
	// added ones have had time to take tasks.
	scaledAt := journalBytes(dir)
	waitFor(t, "more results after the scale-up", campaign[0], dir, func() bool { return journalBytes(dir) > scaledAt+2_000_000 })
	tKill := time.Since(t0)
	killed := []string{first[0], added[0]}
	for _, id := range killed {
		docker(t, "kill", id)
	}

	// The campaign ends by itself with exit 0.
	code := docker(t, "wait", campaign[0])
	tEnd := time.Since(t0)
	if code != "0" {
		logs, _ := exec.Command("docker", "logs", "--tail", "60", campaign[0]).CombinedOutput()
		t.Fatalf("campaign container exited %s\n%s", code, logs)
	}

	// The reference: the same campaign alone, on this host (after the
	// container run, so as not to slow it).
	ref := filepath.Join(tmp, "ref")
	refCmd := exec.Command(bin, "campaign", "--config", refCampaign, "--out", ref)
	refCmd.Dir = root
	if out, err := refCmd.CombinedOutput(); err != nil {
		t.Fatalf("reference campaign on the host: %v\n%s", err, out)
	}

	// Every cell as alone, every result once.
	cells, _ := filepath.Glob(filepath.Join(ref, "cells", "*"))
	if len(cells) < 4 {
		t.Fatalf("reference has %d cells", len(cells))
	}
	workerHosts := map[string]string{}
	for _, id := range all {
		workerHosts[docker(t, "inspect", "-f", "{{.Config.Hostname}}", id)] = id
	}
	byContainer := map[string]int{}
	for _, rc := range cells {
		for _, r := range cellAsAlone(t, rc, filepath.Join(dir, "cells", filepath.Base(rc))) {
			host, _, _ := strings.Cut(r.GetWorkerId(), "-")
			if id, ok := workerHosts[host]; ok {
				byContainer[id]++
			}
		}
	}
	for _, id := range added {
		if slices.Contains(killed, id) {
			continue
		}
		if byContainer[id] == 0 {
			t.Errorf("worker container %s, added mid-campaign, recorded no result", id[:12])
		}
	}
	var counts []string
	for _, id := range all {
		tag := ""
		if slices.Contains(killed, id) {
			tag = " (killed)"
		}
		counts = append(counts, fmt.Sprintf("%s%s: %d", id[:12], tag, byContainer[id]))
	}
	t.Logf("results by worker container: %s", strings.Join(counts, ", "))
	t.Logf("timeline: compose up -d (2 workers, healthy) at %.1fs; scaled to 6 at %.1fs (journals %d of %d bytes); killed 2 at %.1fs; campaign exit 0 at %.1fs (%.1fs after the kill)",
		tUp.Seconds(), tGrow.Seconds(), grownAt, journalBytes(dir), tKill.Seconds(), tEnd.Seconds(), (tEnd - tKill).Seconds())
}

// TestComposeFailingCampaignEndsUp: a campaign that fails at once makes
// `up --exit-code-from campaign` return its exit status within seconds,
// with workers still starting (a config that does not exist; exit 2).
func TestComposeFailingCampaignEndsUp(t *testing.T) {
	containerTestEnabled(t)
	override := filepath.Join(t.TempDir(), "failing.yml")
	if err := os.WriteFile(override, []byte(`services:
  campaign:
    command: ["campaign", "--config=/configs/campaigns/no-such-campaign.yaml", "--nats=nats://nats:4222", "--workers=0", "--out=/runs/campaigns/none"]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newCompose(t, fmt.Sprintf("sfcf%d", os.Getpid()), override)
	t.Cleanup(c.down)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	t0 := time.Now()
	out, err := c.cmd(ctx, "up", "--scale", "worker=8", "--exit-code-from", "campaign").CombinedOutput()
	tUp := time.Since(t0)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("up --exit-code-from campaign: %v (want exit status 2, the campaign's)\n%s", err, tail(out, 40))
	}
	ids := c.containers("campaign")
	if len(ids) != 1 {
		t.Fatalf("campaign containers: %v", ids)
	}
	fin, err := time.Parse(time.RFC3339Nano, docker(t, "inspect", "-f", "{{.State.FinishedAt}}", ids[0]))
	if err != nil {
		t.Fatal(err)
	}
	after := t0.Add(tUp).Sub(fin)
	t.Logf("up returned exit 2 after %.1fs, %.1fs after the campaign container exited", tUp.Seconds(), after.Seconds())
	if after > 30*time.Second {
		t.Errorf("up returned %.1fs after the campaign failed, want seconds", after.Seconds())
	}
	for _, id := range c.containers("worker") {
		if st := docker(t, "inspect", "-f", "{{.State.Running}}", id); st != "false" {
			t.Errorf("worker %s still running after up returned", id[:12])
		}
	}
}

func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// cellAsAlone checks a campaign cell the containers ran (got) against the
// same cell run alone on the host (ref): events.jsonl and best_skill.md
// equal, every task recorded once and at least one result. It returns the
// cell's recorded results.
func cellAsAlone(t *testing.T, ref, got string) []*pb.Result {
	t.Helper()
	name := filepath.Base(ref)
	for _, f := range []string{"events.jsonl", "best_skill.md"} {
		want, errW := os.ReadFile(filepath.Join(ref, f))
		have, errH := os.ReadFile(filepath.Join(got, f))
		switch {
		case errors.Is(errW, os.ErrNotExist) && errors.Is(errH, os.ErrNotExist):
		case errW != nil || errH != nil:
			t.Errorf("cell %s %s: reference %v, containers %v", name, f, errW, errH)
		case !bytes.Equal(want, have):
			t.Errorf("cell %s: %s differs from the cell run alone", name, f)
		}
	}
	j, results, err := dispatch.OpenJournal(filepath.Join(got, "results.journal"), true)
	if err != nil {
		t.Fatalf("cell %s: %v", name, err)
	}
	_ = j.Close()
	seen := map[string]int{}
	for _, r := range results {
		seen[r.GetTaskId()]++
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("cell %s: task %s recorded %d times", name, id, n)
		}
	}
	if len(results) == 0 {
		t.Errorf("cell %s: no results recorded", name)
	}
	return results
}
