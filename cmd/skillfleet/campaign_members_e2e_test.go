package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/coordinator/campaign"
)

// The shared-campaign tests: several campaign processes ("members") serve
// one campaign through its state on one NATS server, with worker
// processes of their own, the run dirs on one (shared) volume.

// writeMemberCampaign writes a campaign of demo training cells plus
// eval-only cells (name "x-" + source) measuring the named sources.
func writeMemberCampaign(t *testing.T, name string, cells []testCell, evalFrom []string, maxActive int, budget string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\nmax_active_runs: %d\nno_skill: false\n%scells:\n", name, maxActive, budget)
	for _, c := range cells {
		fmt.Fprintf(&b, "  - name: %s\n    config: configs/demo.yaml\n    set:\n", c.name)
		for _, s := range c.sets {
			k, v, _ := strings.Cut(s, "=")
			fmt.Fprintf(&b, "      %s: %s\n", k, v)
		}
	}
	for _, from := range evalFrom {
		fmt.Fprintf(&b, "  - name: x-%s\n    config: configs/demo.yaml\n    eval: {from: %s}\n", from, from)
	}
	path := filepath.Join(t.TempDir(), "campaign.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// startMember starts a campaign process serving spec as member name.
func startMember(t *testing.T, spec, out, url, name string, extra ...string) *proc {
	t.Helper()
	args := append([]string{"campaign", "--config", spec, "--out", out, "--nats", url, "--member", name, "--lease-ttl", "3s"}, extra...)
	return startIn(t, repoRoot(t), args...)
}

// waitProc waits for a test process to end and returns its error and
// its stdout from here on.
func waitProc(t *testing.T, p *proc, timeout time.Duration) (string, error) {
	t.Helper()
	rest := make(chan string, 1)
	go func() {
		var b strings.Builder
		for {
			s, err := p.stdout.ReadString('\n')
			b.WriteString(s)
			if err != nil {
				rest <- b.String()
				return
			}
		}
	}()
	select {
	case err := <-p.done:
		return <-rest, err
	case <-time.After(timeout):
		t.Fatalf("process %v did not end in %s", p.cmd.Args, timeout)
		return "", nil
	}
}

// twelveCells are the ten training cells of the members campaign (its two
// eval-only cells are added by writeMemberCampaign).
func twelveCells() []testCell { return demoCells("t-", "1", "2", "3", "4", "5") }

// TestCampaignServedByThreeProcesses: twelve cells served by three
// campaign processes on one NATS with two worker processes. Members a and
// b train; member c runs the eval-only cells, so each measures a skill
// another process trained. a is killed (SIGKILL) while it runs cells and
// comes back: every training cell makes exactly the decisions it makes
// alone, each result recorded once, and one campaign.json (and report)
// holds every cell.
func TestCampaignServedByThreeProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes and runs the demo many times")
	}
	t.Parallel()
	url := startNatsd(t)
	startFleetWorker(t, url, "12")
	startFleetWorker(t, url, "12")
	cells := twelveCells()
	spec := writeMemberCampaign(t, "members", cells, []string{"t-s1", "t-mb4-s2"}, 2, "")
	out := filepath.Join(t.TempDir(), "camp")
	a := startMember(t, spec, out, url, "a", "--cells", "t-*")
	b := startMember(t, spec, out, url, "b", "--cells", "t-*")
	c := startMember(t, spec, out, url, "c", "--cells", "x-*")
	a.line(t, "cell t-", 120*time.Second)
	time.Sleep(1500 * time.Millisecond)
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.done
	// Past the lease TTL: b may take a's cells, or a takes them back.
	time.Sleep(4 * time.Second)
	a2 := startMember(t, spec, out, url, "a", "--cells", "t-*")
	for name, p := range map[string]*proc{"a (back)": a2, "b": b, "c": c} {
		if o, err := waitProc(t, p, 15*time.Minute); err != nil {
			t.Fatalf("member %s: %v\n%s\n%s", name, err, o, p.stderr.String())
		}
	}
	f, err := campaign.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	member := map[string]string{}
	for _, cs := range f.Cells {
		member[cs.Name] = cs.Member
		if cs.State != campaign.StateDone {
			t.Errorf("cell %s: %s (%s)", cs.Name, cs.State, cs.Error)
		}
	}
	if len(f.Cells) != 12 {
		t.Fatalf("campaign.json has %d cells", len(f.Cells))
	}
	for _, cell := range cells {
		dir := filepath.Join(out, "cells", cell.name)
		sameDecisions(t, cell.name, dir, aloneRef(t, cell.sets...))
		recordedOnce(t, cell.name, dir)
		if m := member[cell.name]; m != "a" && m != "b" {
			t.Errorf("training cell %s ended by member %q", cell.name, m)
		}
	}
	for _, from := range []string{"t-s1", "t-mb4-s2"} {
		x := "x-" + from
		if member[x] != "c" {
			t.Errorf("eval cell %s ended by member %q, want c", x, member[x])
		}
		if !strings.Contains(string(readFile(t, filepath.Join(out, "cells", x, campaign.EvalSummaryFile))), `"name": "skill"`) {
			t.Errorf("eval cell %s measured no skill", x)
		}
	}
	rep, err := runIn(t, "report", out)
	if err != nil || !strings.Contains(rep, "12 done") || !strings.Contains(rep, "x-t-mb4-s2") {
		t.Errorf("report: %v\n%s", err, rep)
	}
}

// TestCampaignBudgetAcrossProcesses: one token budget for a campaign
// served by three processes stops all of them once their spend together
// reaches it. The budget is two cells' spend; budgets counted per process
// would let all six cells end (each process spending under two cells').
func TestCampaignBudgetAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes and runs the demo many times")
	}
	t.Parallel()
	cells := sixCells()
	perCell := tokensOf(t, aloneRef(t, cells[0].sets...))
	budget := 2 * perCell
	url := startNatsd(t)
	startFleetWorker(t, url, "12")
	startFleetWorker(t, url, "12")
	spec := writeMemberCampaign(t, "budget", cells, nil, 1, fmt.Sprintf("budget: {max_tokens: %d}\n", budget))
	out := filepath.Join(t.TempDir(), "camp")
	var ps []*proc
	for _, m := range []string{"a", "b", "c"} {
		ps = append(ps, startMember(t, spec, out, url, m))
	}
	for i, p := range ps {
		o, err := waitProc(t, p, 15*time.Minute)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitStopped || !strings.Contains(p.stderr.String()+o, "budget.max_tokens") {
			t.Errorf("member %d: %v, want exit %d naming the budget\n%s\n%s", i, err, exitStopped, o, p.stderr.String())
		}
	}
	f, err := campaign.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	var spent int64
	for _, cs := range f.Cells {
		spent += cs.Tokens
	}
	t.Logf("budget %d tokens (a cell alone spends %d): spent %d; cells %v", budget, perCell, spent, f.Counts())
	if spent < budget || spent >= 2*budget || f.Counts()[campaign.StateDone] == len(cells) {
		t.Errorf("spent %d tokens of a %d-token budget; cells %v", spent, budget, f.Counts())
	}
}

// tokensOf is a run dir's total input + output tokens.
func tokensOf(t *testing.T, dir string) int64 {
	t.Helper()
	var tf struct {
		Total struct {
			Input  int64 `json:"input_tokens"`
			Output int64 `json:"output_tokens"`
		} `json:"total"`
	}
	if err := json.Unmarshal(readFile(t, filepath.Join(dir, "tokens.json")), &tf); err != nil {
		t.Fatal(err)
	}
	return tf.Total.Input + tf.Total.Output
}
