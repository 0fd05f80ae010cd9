package campaign

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func load(t *testing.T, yaml string) (*Spec, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return Load(p)
}

func TestExpandMatrix(t *testing.T) {
	s, err := load(t, `
name: m
matrix:
  configs: [a.yaml, b.yaml]
  targets: [m1, m2]
  seeds: [1, 2]
  exclude: [{config: b.yaml, target: m2}]
  overrides: [{match: {config: a.yaml, seed: "2"}, set: {train.num_epochs: 4}, weight: 2}]
cells:
  - name: transfer
    target: m2
    eval: {from: a-m1-s1}
`)
	if err != nil {
		t.Fatal(err)
	}
	cells, err := s.Expand()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cells {
		names = append(names, c.Name)
	}
	want := "a-m1-s1 a-m1-s2 a-m2-s1 a-m2-s2 b-m1-s1 b-m1-s2 transfer"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("cells %s, want %s", got, want)
	}
	if c := cells[1]; c.Weight != 2 || strings.Join(c.Sets, " ") != "model.target=m1 train.seed=2 train.num_epochs=4" {
		t.Errorf("override: weight %v sets %v", c.Weight, c.Sets)
	}
	if c := cells[6]; c.EvalFrom != "a-m1-s1" || c.EvalSplit != "test" || c.Weight != 1 {
		t.Errorf("eval cell: %+v", c)
	}
}

func TestExpandRefusesBadSpecs(t *testing.T) {
	for name, y := range map[string]string{
		"no cells":          "name: x\n",
		"unknown key":       "name: x\nmatrix: {configs: [a.yaml]}\nbogus: 1\n",
		"duplicate name":    "cells: [{name: a, config: a.yaml}, {name: a, config: b.yaml}]\n",
		"unknown eval from": "cells: [{name: a, config: a.yaml}, {name: e, eval: {from: zz}}]\n",
		"unknown harness":   "matrix: {configs: [a.yaml], harnesses: [codex]}\n",
		"bad wall":          "budget: {max_wall: soon}\ncells: [{config: a.yaml}]\n",
	} {
		if _, err := load(t, y); err == nil {
			t.Errorf("%s: loaded without error", name)
		}
	}
}

// TestHarnessAxis: harness is an axis of the matrix. Each harness cell
// carries its harness_sets keys (after the defaults, before the cell's
// own), "api" needs none, exclusions and overrides match on harness, and
// an eval-only cell measures another harness's best skill under its own
// harness (the transfer table). The repository's harness campaign
// (configs/harness/campaign.yaml) expands to its three cells.
func TestHarnessAxis(t *testing.T) {
	s, err := load(t, `
defaults: {set: {runtime.idle_fill: false}}
harness_sets:
  codex: {model.target_backend: codex_exec, model.codex_exec_path: /opt/codex}
  claude: {model.target_backend: claude_code_exec}
matrix:
  configs: [w.yaml]
  harnesses: [api, codex, claude]
  seeds: [1, 2]
  exclude: [{harness: api, seed: "2"}]
  overrides: [{match: {harness: claude}, set: {model.timeout: 20m}}]
cells:
  - name: codex-to-claude
    harness: claude
    eval: {from: w-codex-s1}
`)
	if err != nil {
		t.Fatal(err)
	}
	cells, err := s.Expand()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Cell{}
	var names []string
	for _, c := range cells {
		got[c.Name] = c
		names = append(names, c.Name)
	}
	if want := "w-api-s1 w-codex-s1 w-codex-s2 w-claude-s1 w-claude-s2 codex-to-claude"; strings.Join(names, " ") != want {
		t.Fatalf("cells %s, want %s", strings.Join(names, " "), want)
	}
	for name, want := range map[string]string{
		"w-api-s1":        "runtime.idle_fill=false train.seed=1",
		"w-codex-s2":      "runtime.idle_fill=false model.codex_exec_path=/opt/codex model.target_backend=codex_exec train.seed=2",
		"w-claude-s1":     "runtime.idle_fill=false model.target_backend=claude_code_exec train.seed=1 model.timeout=20m",
		"codex-to-claude": "runtime.idle_fill=false model.target_backend=claude_code_exec",
	} {
		if c := got[name]; strings.Join(c.Sets, " ") != want {
			t.Errorf("%s: sets %q, want %q", name, strings.Join(c.Sets, " "), want)
		}
	}
	if c := got["codex-to-claude"]; c.Harness != "claude" || c.EvalFrom != "w-codex-s1" || c.EvalSplit != "test" {
		t.Errorf("transfer cell %+v: want harness claude measuring w-codex-s1's test split", c)
	}
	if c := got["w-codex-s1"]; c.Harness != "codex" || c.EvalFrom != "" {
		t.Errorf("codex cell %+v", c)
	}

	// The repository's harness campaign.
	s, err = Load(filepath.Join("..", "..", "configs", "harness", "campaign.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cells, err = s.Expand()
	if err != nil {
		t.Fatal(err)
	}
	names = names[:0]
	for _, c := range cells {
		names = append(names, c.Name+"/"+c.Harness+"/"+c.EvalFrom)
		if !fileExists(s.ConfigPath(c.Config)) && c.EvalFrom == "" {
			t.Errorf("%s: config %s not found", c.Name, c.Config)
		}
	}
	if want := "codex-sim-codex/codex/ codex-sim-claude/claude/ codex-skill-under-claude/claude/codex-sim-codex"; strings.Join(names, " ") != want {
		t.Fatalf("configs/harness/campaign.yaml: cells %s, want %s", strings.Join(names, " "), want)
	}
	for _, c := range cells {
		joined := strings.Join(c.Sets, " ")
		if c.Harness == "claude" && (!strings.Contains(joined, "model.target_backend=claude_code_exec") || strings.Contains(joined, "codex_exec")) {
			t.Errorf("%s: sets %q do not pick Claude Code alone", c.Name, joined)
		}
	}
}
