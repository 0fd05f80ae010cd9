// Command ideal reads a run directory's waves.jsonl, tokens.json and
// summary.json and prints the bench table: wall time, calls and tokens per
// stage, and the ideal wall time of the run's own call graph at a given
// latency and concurrency.
//
// The ideal: waves whose time intervals overlapped in the run were
// independent of each other, so they form one group; a group's ideal time
// is, per class (target, optimizer), its tasks packed into that class's
// concurrency at the fixed latency, the two classes running side by side.
// The run's ideal is the sum over groups, i.e. the groups are taken as a
// chain. Waves that ran no task (all results replayed or cached) cost 0.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
)

type wave struct {
	Stage   string `json:"stage"`
	Class   string `json:"class"`
	Tasks   int    `json:"tasks"`
	Ran     int    `json:"ran"`
	StartMS int64  `json:"start_ms"`
	EndMS   int64  `json:"end_ms"`
}

type totals struct {
	Tasks  int64 `json:"tasks"`
	Calls  int64 `json:"calls"`
	Input  int64 `json:"input_tokens"`
	Output int64 `json:"output_tokens"`
}

func main() {
	latency := flag.Float64("latency", 0.5, "seconds per model call")
	tconc := flag.Int("target-concurrency", 24, "target calls in flight in total")
	oconc := flag.Int("optimizer-concurrency", 16, "optimizer calls in flight in total")
	wall := flag.Float64("wall", 0, "measured wall time in seconds (default: summary.json)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: ideal [flags] RUN_DIR")
		os.Exit(2)
	}
	dir := flag.Arg(0)
	waves, err := readWaves(filepath.Join(dir, "waves.jsonl"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "ideal:", err)
		os.Exit(1)
	}
	sort.Slice(waves, func(i, j int) bool { return waves[i].StartMS < waves[j].StartMS })
	ideal := 0.0
	groups := 0
	for i := 0; i < len(waves); {
		end := waves[i].EndMS
		var nt, no int
		j := i
		for ; j < len(waves) && waves[j].StartMS < end; j++ {
			end = max(end, waves[j].EndMS)
			if waves[j].Class == "target" {
				nt += waves[j].Ran
			} else {
				no += waves[j].Ran
			}
		}
		if j == i {
			j++
			if waves[i].Class == "target" {
				nt = waves[i].Ran
			} else {
				no = waves[i].Ran
			}
		}
		g := math.Max(math.Ceil(float64(nt)/float64(*tconc)), math.Ceil(float64(no)/float64(*oconc))) * *latency
		ideal += g
		groups++
		i = j
	}
	var sum struct {
		WallTime float64 `json:"wall_time_s"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "summary.json")); err == nil {
		_ = json.Unmarshal(b, &sum)
	}
	if *wall == 0 {
		*wall = sum.WallTime
	}
	var tok struct {
		ByStage map[string]totals `json:"by_stage"`
		Total   totals            `json:"total"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "tokens.json")); err == nil {
		_ = json.Unmarshal(b, &tok)
	}
	fmt.Printf("%-22s %8s %8s %12s\n", "stage", "tasks", "calls", "tokens")
	var ks []string
	for k := range tok.ByStage {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		t := tok.ByStage[k]
		fmt.Printf("%-22s %8d %8d %12d\n", k, t.Tasks, t.Calls, t.Input+t.Output)
	}
	fmt.Printf("%-22s %8d %8d %12d\n", "total", tok.Total.Tasks, tok.Total.Calls, tok.Total.Input+tok.Total.Output)
	fmt.Printf("\nwaves %d in %d dependency groups\n", len(waves), groups)
	fmt.Printf("wall %.1fs  ideal %.1fs  ratio %.3f  (latency %.2fs, target concurrency %d, optimizer concurrency %d)\n",
		*wall, ideal, *wall/math.Max(ideal, 1e-9), *latency, *tconc, *oconc)
}

func readWaves(path string) ([]wave, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []wave
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var w wave
		if err := json.Unmarshal(sc.Bytes(), &w); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, w)
	}
	return out, sc.Err()
}
