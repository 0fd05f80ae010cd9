package sleep

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/pkg/nightly"
)

// stageCell is a sweep cell's night as far as the sweep reads it: a
// staged report whose numbers come from the cell's flags (its persona,
// the setting's --max-edits stand-in and the seed of its config).
func stageCell(args []string) error {
	var persona, dir string
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--persona":
			persona = args[i+1]
		case "--state-dir":
			dir = args[i+1]
		}
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "config.yaml"))
	if err != nil {
		return err
	}
	var seed int
	if _, err := fmt.Sscanf(string(cfg), "seed: %d", &seed); err != nil {
		return err
	}
	tokens := int64(1000*seed + 10*len(args))
	rep := &Report{Night: 1, Outcome: &Outcome{Action: ActionAccept, Baseline: Score{Value: 0.25}, Final: &Score{Value: 0.5 + float64(seed)/10}, Spend: Spend{Tokens: tokens},
		Trials: []Trial{{Accepted: true}}}}
	root := filepath.Join(dir, "persona-"+persona, "project", ".skillfleet-sleep", "staging")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	_, err = nightly.Stage(nightly.StageInput{Root: root, Night: 1, Started: time.Now(), Action: ActionNoEdits, ReportJSON: rep, ReportMD: "#"})
	return err
}

// TestSweepRunsCellsAtOnce: a sweep's cells run up to parallel at once
// (more than one in flight, never more than parallel), cells.json keeps
// the matrix's order and equals the serial sweep's; a failing cell stops
// the sweep, naming it, before the other cells have all run.
func TestSweepRunsCellsAtOnce(t *testing.T) {
	f := &SweepFile{Personas: []string{"researcher", "programmer"}, Seeds: []int64{1, 2, 3}, Backend: "sim",
		Settings: []SweepSetting{{Name: "off"}, {Name: "dream", Args: []string{"--dream-factor", "1"}}}}
	sweep := func(parallel int, fail string) ([]byte, int32, []string, error) {
		out := t.TempDir()
		var (
			inFlight, most atomic.Int32
			mu             sync.Mutex
			started        []string
		)
		run := func(args []string) error {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			name := filepath.Base(args[3])
			mu.Lock()
			started = append(started, name)
			mu.Unlock()
			if name == fail {
				return errors.New("the agent is gone")
			}
			time.Sleep(20 * time.Millisecond)
			return stageCell(args)
		}
		var stdout strings.Builder
		err := SweepCommand(f, out, parallel, run, &stdout)
		b, _ := os.ReadFile(filepath.Join(out, "cells.json"))
		return b, most.Load(), started, err
	}
	serial, most, _, err := sweep(1, "")
	if err != nil || most != 1 {
		t.Fatalf("serial sweep: %v, %d cells at once", err, most)
	}
	parallel, most, _, err := sweep(4, "")
	if err != nil || most < 2 || most > 4 {
		t.Fatalf("sweep at 4: %v, %d cells at once", err, most)
	}
	if string(parallel) != string(serial) {
		t.Fatalf("cells.json at 4 at once differs from the serial one:\n%s\nserial:\n%s", parallel, serial)
	}
	var cells []SweepCell
	if err := json.Unmarshal(serial, &cells); err != nil || len(cells) != 12 {
		t.Fatalf("%d cells, %v", len(cells), err)
	}
	if c := cells[3]; c.Persona != "researcher" || c.Setting != "dream" || c.Seed != 1 || c.Final != 0.6 {
		t.Fatalf("cell 3 %+v, want researcher/dream/seed 1 (the matrix's order)", c)
	}
	_, _, started, err := sweep(2, "researcher-dream-1")
	if err == nil || !strings.Contains(err.Error(), "sweep cell researcher/dream/seed 1: the agent is gone") {
		t.Fatalf("sweep with a failing cell: %v", err)
	}
	if !slices.Contains(started, "researcher-dream-1") || len(started) == 12 {
		t.Fatalf("cells started %v: the sweep went on after the failing cell", started)
	}
}
