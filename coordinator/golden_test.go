package coordinator_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/skillfleet/skillfleet/internal/fleettest"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite coordinator/testdata/golden from this run")

// TestGoldenDecisions pins the decisions: events.jsonl and best_skill.md
// of the demo and of the paper preset (sim model in-process, zero
// latency) must equal the recorded goldens byte for byte, both with the
// in-memory dispatcher and the production path (NATS, hub, worker). A
// change that is meant to change decisions regenerates them with
//
//	go test ./coordinator -run TestGoldenDecisions -update-golden
func TestGoldenDecisions(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the demo and the paper preset")
	}
	t.Parallel()
	for _, path := range []string{"memory", "nats"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			r := new(fleettest.Runner)
			if path == "nats" {
				r.NATS = fleettest.NATS(t)
			}
			for _, c := range []struct {
				name string
				p    fleettest.Preset
			}{{"demo", fleettest.Demo}, {"sim_paper", fleettest.Paper}} {
				t.Run(c.name, func(t *testing.T) {
					dir := t.TempDir()
					if _, err := r.Run(t, dir, c.p, nil); err != nil {
						t.Fatal(err)
					}
					checkGolden(t, dir, c.name, path == "memory" && *updateGolden)
				})
			}
		})
	}
}

// checkGolden compares a run dir's decisions with the goldens of name
// (or records them when update is set).
func checkGolden(t *testing.T, dir, name string, update bool) {
	t.Helper()
	for _, file := range []string{"events.jsonl", "best_skill.md"} {
		got, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join("testdata", "golden", name+"."+file)
		if update {
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (record it with -update-golden)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s:\n got: %s\nwant: %s", file, golden, firstDiff(got, want), firstDiff(want, got))
		}
	}
}

// firstDiff is the line of a where a and b first differ.
func firstDiff(a, b []byte) string {
	al, bl := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range al {
		if i >= len(bl) || !bytes.Equal(al[i], bl[i]) {
			return string(al[i])
		}
	}
	return "(prefix of the other)"
}
