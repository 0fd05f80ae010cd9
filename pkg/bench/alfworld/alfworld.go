// Package alfworld is the ALFWorld benchmark: household text games played
// over the environment-server protocol (see package envserver and
// scripts/alfworld_bridge.py). Items name a game file relative to
// $ALFWORLD_DATA on the server's side; this package reads and checks them
// and builds the shared multi-turn loop under the name "alfworld".
package alfworld

import (
	"fmt"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/envserver"
)

// Name is the benchmark's registry key.
const Name = "alfworld"

// Normalize checks one raw item object ({id, gamefile, task_type?}) and
// fills task_type from the game file path when it is absent, so splits
// report per task type.
func Normalize(item map[string]any) (map[string]any, error) {
	id := bench.FirstString(item, "id")
	gf, ok := item["gamefile"].(string)
	if !ok || strings.TrimSpace(gf) == "" {
		return nil, fmt.Errorf("alfworld item %q: field gamefile: want a non-empty string (a game file path relative to $ALFWORLD_DATA), got %v", id, item["gamefile"])
	}
	if tt, present := item["task_type"]; present && tt != nil {
		if s, ok := tt.(string); !ok {
			return nil, fmt.Errorf("alfworld item %q: field task_type: want a string, got %v", id, tt)
		} else if strings.TrimSpace(s) != "" {
			return item, nil
		}
	}
	if tt := envserver.TaskTypeOf(gf); tt != "" {
		item["task_type"] = tt
	}
	return item, nil
}

// New returns the ALFWorld benchmark on the server cfg.EnvServer.
func New(cfg envserver.Config) (bench.Env, error) {
	return envserver.New(Name, cfg, envserver.Notes)
}
