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
