package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/coordinator/campaign"
	"github.com/skillfleet/skillfleet/pkg/bench/envserver/textgame"
	"github.com/skillfleet/skillfleet/pkg/bench/synth"
)

// synthWorlds are the benchmarks with a synthetic world and a config in
// configs/synth/.
var synthWorlds = []string{"searchqa", "jsonl", "livemath", "docvqa", "officeqa", "textgame", "alfworld"}

// testRow reads a skill's test score from train's summary table.
func testRow(out, skill string) (float64, bool) {
	m := regexp.MustCompile(`(?m)^` + skill + `\s+\S+\s+([0-9.]+)\s*$`).FindStringSubmatch(out)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	return v, err == nil
}

// trainSynth writes bench's small world, checks it with `data check`,
// trains on it with configs/synth/<bench>.yaml and --assert-improves, and
// returns the baseline's and the best skill's test scores.
func trainSynth(t *testing.T, name string) (baseline, best float64) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "world")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"data", "synth", "--bench", name, "--out", dir, "--seed", "1"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("data synth --bench %s: exit %d\n%s%s", name, code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	if code := run([]string{"data", "check", "--bench", name, dir}, &stdout, &stderr); code != exitOK {
		t.Fatalf("data check --bench %s: exit %d\n%s%s", name, code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "counts match the manifest") {
		t.Fatalf("data check did not check the manifest's counts:\n%s", stdout.String())
	}
	stdout.Reset()
	var sets []string
	if name == "textgame" || name == "alfworld" {
		sets = append(sets, "--set", "env.env_server="+serveGames(t, filepath.Join(dir, synth.LayoutFile)))
	}
	args := []string{"train", "--config", filepath.Join(repoRoot(t), "configs", "synth", name+".yaml"),
		"--out", filepath.Join(t.TempDir(), "run"), "--assert-improves", "--no-fsync",
		"--set", "env.split_dir=" + dir, "--set", "env.skill_init=" + filepath.Join(dir, "seed_skill.md")}
	args = append(args, sets...)
	start := time.Now()
	code := run(args, &stdout, &stderr)
	out := stdout.String()
	if code != exitOK {
		t.Fatalf("train %s: exit %d\n%s%s", name, code, out, stderr.String())
	}
	baseline, ok1 := testRow(out, "baseline")
	best, ok2 := testRow(out, "best")
	if !ok1 || !ok2 {
		t.Fatalf("train %s: no test scores in the summary:\n%s", name, out)
	}
	t.Logf("%s: test %.3f -> %.3f (gain %.3f) in %s", name, baseline, best, best-baseline, time.Since(start).Round(time.Millisecond))
	return baseline, best
}

// TestSynthWorldsTrainAndImprove trains every synthetic world one after
// another, through the real loader, prompts, tool runtime and scorer, and
// asks each for a test-score gain of at least 0.3; all of them together
// must take under two minutes.
func TestSynthWorldsTrainAndImprove(t *testing.T) {
	start := time.Now()
	for _, name := range synthWorlds {
		t.Run(name, func(t *testing.T) {
			baseline, best := trainSynth(t, name)
			if gain := best - baseline; gain < 0.3 {
				t.Errorf("%s: test score %.3f -> %.3f, gain %.3f < 0.3", name, baseline, best, gain)
			}
		})
	}
	if d := time.Since(start); d > 2*time.Minute {
		t.Errorf("all synthetic worlds took %s, want under 2 minutes", d)
	}
}

func TestDataSynthErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"data", "synth", "--out", t.TempDir()}, "--bench is required"},
		{[]string{"data", "synth", "--bench", "searchqa"}, "--out is required"},
		{[]string{"data", "synth", "--bench", "nosuch", "--out", t.TempDir()}, `no synthetic world for benchmark "nosuch"`},
		{[]string{"data", "synth", "--bench", "searchqa", "--out", t.TempDir(), "--preset", "huge"}, `unknown preset "huge"`},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, stderr.String(), exitUsage, tc.want)
		}
	}
}

// TestDataSynthIsDeterministic writes a world twice with one seed and once
// with another.
func TestDataSynthIsDeterministic(t *testing.T) {
	for _, name := range synthWorlds {
		var dirs []string
		for _, seed := range []string{"5", "5", "6"} {
			dir := t.TempDir()
			var stdout, stderr bytes.Buffer
			if code := run([]string{"data", "synth", "--bench", name, "--out", dir, "--seed", seed}, &stdout, &stderr); code != exitOK {
				t.Fatalf("%s: exit %d: %s", name, code, stderr.String())
			}
			dirs = append(dirs, dir)
		}
		a, b, c := treeDigest(t, dirs[0]), treeDigest(t, dirs[1]), treeDigest(t, dirs[2])
		if a != b {
			t.Errorf("%s: the same seed wrote different worlds", name)
		}
		if a == c {
			t.Errorf("%s: seeds 5 and 6 wrote the same world", name)
		}
	}
}

// treeDigest lists every file of dir with its content.
func treeDigest(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(&b, "%s\n%s\n", rel, readFile(t, p))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// serveGames serves a household world's game layout over the environment-
// server protocol on a loopback port until the test ends, and returns its
// address.
func serveGames(t *testing.T, layout string) string {
	t.Helper()
	games, err := textgame.LoadLayout(layout)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- textgame.Serve(ctx, ln, textgame.NewLayoutServer(games)) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return ln.Addr().String()
}

func TestEnvServerGamesFlagChecksTheLayout(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "games.json")
	if err := os.WriteFile(bad, []byte(`{"games": [{"id": "g", "goal": "x", "want": "sofa 1", "kind": "mug", "count": 1}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"envserver", "--games", bad, "--listen", "127.0.0.1:0"}, &stdout, &stderr); code != exitUsage ||
		!strings.Contains(stderr.String(), bad) || !strings.Contains(stderr.String(), `want: "sofa 1" is not a receptacle`) {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	if code := run([]string{"envserver", "--games", bad, "--bridge", "--", "true"}, &stdout, &stderr); code != exitUsage {
		t.Fatalf("--games with --bridge: exit %d", code)
	}
}

// TestSynthCampaignListsEveryWorld checks configs/synth/campaign.yaml: it
// loads as a campaign, and its cells are the worlds' configs, one each.
func TestSynthCampaignListsEveryWorld(t *testing.T) {
	spec, err := campaign.Load(filepath.Join(repoRoot(t), "configs", "synth", "campaign.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cells, err := spec.Expand()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cells {
		path := spec.ConfigPath(c.Config)
		if _, err := os.Stat(path); err != nil {
			t.Errorf("cell %s: config %s: %v", c.Name, c.Config, err)
		}
		got = append(got, strings.TrimSuffix(filepath.Base(path), ".yaml"))
	}
	if want := append(slices.Clone(synthWorlds), "spreadsheet"); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("campaign cells %v, want one per world %v", got, want)
	}
}

// TestSynthSpreadsheetTrainsInTheSandbox trains the SpreadsheetBench world:
// the simulated model's programs run in the benchmark's sandbox. It is
// slower than the other worlds (a Python process per episode), so it runs
// on its own, outside their two-minute budget; without bubblewrap or
// openpyxl it skips, except under CI.
func TestSynthSpreadsheetTrainsInTheSandbox(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Python in the sandbox for every episode")
	}
	if err := exec.Command("/usr/bin/python3", "-c", "import openpyxl").Run(); err != nil && os.Getenv("CI") == "" {
		t.Skip("no /usr/bin/python3 with openpyxl")
	}
	if _, err := exec.LookPath("bwrap"); err != nil && os.Getenv("CI") == "" {
		t.Skip("no bubblewrap")
	}
	baseline, best := trainSynth(t, "spreadsheet")
	if gain := best - baseline; gain < 0.3 {
		t.Errorf("spreadsheet: test score %.3f -> %.3f, gain %.3f < 0.3", baseline, best, gain)
	}
}
