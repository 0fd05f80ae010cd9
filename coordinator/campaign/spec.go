// Package campaign describes a campaign — a matrix of training runs
// (configs × target models × harnesses × seeds, plus eval-only cells) that
// share one fleet — expands it into cells, runs them (Campaign: at most
// max_active_runs at once, eval-only cells after the cell they measure,
// within the campaign's budget), keeps its state file campaign.json and
// renders its results table. Each cell is an ordinary run directory; the
// caller says how a run is started (Deps).
//
// One process can serve a campaign alone (its state in memory), or
// several processes on one or more hosts can serve it together: they
// lease cells from records on NATS JetStream key-value (NewKVStore),
// rewrite the records they hold while they run, take over the cells of a
// process that stops rewriting them, and count one budget over all.
package campaign

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Spec is a campaign file.
type Spec struct {
	Name string `yaml:"name"`
	// MaxActiveRuns bounds cells running at once (default 4).
	MaxActiveRuns int `yaml:"max_active_runs"`
	// NoSkill measures each training cell's test split with an empty
	// skill too (the paper's no-skill column; default true).
	NoSkill *bool `yaml:"no_skill"`
	// Budget bounds the whole campaign; CellBudget each cell.
	Budget     Budget `yaml:"budget"`
	CellBudget Budget `yaml:"cell_budget"`
	// Defaults apply to every cell before its own settings.
	Defaults Defaults `yaml:"defaults"`
	// HarnessSets maps a harness name to the config keys that select it
	// (e.g. codex: {model.target_backend: exec, ...}). "api" needs none.
	HarnessSets map[string]map[string]any `yaml:"harness_sets"`
	Matrix      *Matrix                   `yaml:"matrix"`
	Cells       []CellSpec                `yaml:"cells"`

	// Dir is the directory of the campaign file (configs are found
	// relative to it first, then to the working directory).
	Dir string `yaml:"-"`
	// File is the campaign file's path.
	File string `yaml:"-"`
}

// Defaults are settings every cell starts from.
type Defaults struct {
	Set    map[string]any `yaml:"set"`
	Weight float64        `yaml:"weight"`
}

// Budget bounds spend; zero fields are unbounded.
type Budget struct {
	MaxTokens int64    `yaml:"max_tokens"`
	MaxUSD    float64  `yaml:"max_usd"`
	MaxWall   Duration `yaml:"max_wall"`
}

// Duration is a time.Duration written as "90m" in YAML.
type Duration time.Duration

// UnmarshalYAML reads a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (e.g. 90m, 2h)", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// Matrix is the cross product of its non-empty axes.
type Matrix struct {
	Configs   []string `yaml:"configs"`
	Targets   []string `yaml:"targets"`
	Harnesses []string `yaml:"harnesses"`
	Seeds     []int    `yaml:"seeds"`
	// Exclude drops cells matching every key given (config, target,
	// harness, seed).
	Exclude []map[string]string `yaml:"exclude"`
	// Overrides add settings to the cells they match.
	Overrides []Override `yaml:"overrides"`
}

// Override adds settings to matching cells.
type Override struct {
	Match  map[string]string `yaml:"match"`
	Set    map[string]any    `yaml:"set"`
	Weight float64           `yaml:"weight"`
}

// CellSpec is one explicitly listed cell.
type CellSpec struct {
	Name    string         `yaml:"name"`
	Config  string         `yaml:"config"`
	Target  string         `yaml:"target"`
	Harness string         `yaml:"harness"`
	Seed    *int           `yaml:"seed"`
	Set     map[string]any `yaml:"set"`
	Weight  float64        `yaml:"weight"`
	// Eval makes this an eval-only cell: it measures another cell's best
	// skill (under this cell's target and harness) instead of training.
	Eval *EvalSpec `yaml:"eval"`
}

// EvalSpec is what an eval-only cell measures.
type EvalSpec struct {
	// From names the cell whose best skill is measured.
	From string `yaml:"from"`
	// Split is the split measured (default test).
	Split string `yaml:"split"`
}

// Cell is one run of the campaign, fully resolved.
type Cell struct {
	Name    string   `json:"name"`
	Config  string   `json:"config"`
	Target  string   `json:"target,omitempty"`
	Harness string   `json:"harness,omitempty"`
	Seed    *int     `json:"seed,omitempty"`
	Sets    []string `json:"sets,omitempty"`
	Weight  float64  `json:"weight"`
	// EvalFrom / EvalSplit: set for an eval-only cell.
	EvalFrom  string `json:"eval_from,omitempty"`
	EvalSplit string `json:"eval_split,omitempty"`
}

// Load reads and checks a campaign file.
func Load(path string) (*Spec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("campaign: %w", err)
	}
	var s Spec
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return nil, yamlError(path, err)
	}
	s.File = path
	s.Dir = filepath.Dir(path)
	if s.MaxActiveRuns == 0 {
		s.MaxActiveRuns = 4
	}
	if s.MaxActiveRuns < 0 {
		return nil, fmt.Errorf("campaign: %s: max_active_runs: must be positive", path)
	}
	if _, err := s.Expand(); err != nil {
		return nil, fmt.Errorf("campaign: %s: %w", path, err)
	}
	return &s, nil
}

// MeasureNoSkill reports whether training cells also measure the empty skill.
func (s *Spec) MeasureNoSkill() bool { return s.NoSkill == nil || *s.NoSkill }

var nameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Expand returns the campaign's cells in a stable order: matrix cells
// first (configs, then targets, harnesses, seeds), then listed cells.
func (s *Spec) Expand() ([]Cell, error) {
	var cells []Cell
	if m := s.Matrix; m != nil {
		if len(m.Configs) == 0 {
			return nil, errors.New("matrix.configs: at least one config is needed")
		}
		targets := orBlank(m.Targets)
		harnesses := orBlank(m.Harnesses)
		seeds := []*int{nil}
		if len(m.Seeds) > 0 {
			seeds = seeds[:0]
			for i := range m.Seeds {
				seeds = append(seeds, &m.Seeds[i])
			}
		}
		for _, cfg := range m.Configs {
			for _, tg := range targets {
				for _, h := range harnesses {
					for _, sd := range seeds {
						keys := axisKeys(cfg, tg, h, sd)
						if matchesAny(m.Exclude, keys) {
							continue
						}
						c := CellSpec{Config: cfg, Target: tg, Harness: h, Seed: sd}
						for _, o := range m.Overrides {
							if matches(o.Match, keys) {
								c.Set = merge(c.Set, o.Set)
								if o.Weight > 0 {
									c.Weight = o.Weight
								}
							}
						}
						cell, err := s.resolve(c)
						if err != nil {
							return nil, err
						}
						cells = append(cells, cell)
					}
				}
			}
		}
	}
	for i, cs := range s.Cells {
		if cs.Config == "" && cs.Eval == nil {
			return nil, fmt.Errorf("cells[%d]: config: required", i)
		}
		cell, err := s.resolve(cs)
		if err != nil {
			return nil, fmt.Errorf("cells[%d]: %w", i, err)
		}
		cells = append(cells, cell)
	}
	if len(cells) == 0 {
		return nil, errors.New("no cells: give a matrix or a cells list")
	}
	seen := map[string]int{}
	for i, c := range cells {
		if j, dup := seen[c.Name]; dup {
			return nil, fmt.Errorf("cells %d and %d are both named %q: give them names", j, i, c.Name)
		}
		seen[c.Name] = i
	}
	byName := map[string]Cell{}
	for _, c := range cells {
		byName[c.Name] = c
	}
	for _, c := range cells {
		if c.EvalFrom == "" {
			continue
		}
		src, ok := byName[c.EvalFrom]
		if !ok {
			return nil, fmt.Errorf("cell %s: eval.from: no cell named %q", c.Name, c.EvalFrom)
		}
		if src.EvalFrom != "" {
			return nil, fmt.Errorf("cell %s: eval.from: %q is itself an eval-only cell", c.Name, c.EvalFrom)
		}
	}
	return cells, nil
}

func (s *Spec) resolve(cs CellSpec) (Cell, error) {
	c := Cell{Name: cs.Name, Config: cs.Config, Target: cs.Target, Harness: cs.Harness, Seed: cs.Seed, Weight: s.Defaults.Weight}
	if cs.Weight > 0 {
		c.Weight = cs.Weight
	}
	if c.Weight <= 0 {
		c.Weight = 1
	}
	if cs.Eval != nil {
		if cs.Eval.From == "" {
			return c, errors.New("eval.from: required (the cell whose best skill is measured)")
		}
		c.EvalFrom = cs.Eval.From
		c.EvalSplit = cs.Eval.Split
		if c.EvalSplit == "" {
			c.EvalSplit = "test"
		}
	}
	if c.Name == "" {
		c.Name = defaultName(cs)
	}
	if !nameRe.MatchString(c.Name) {
		return c, fmt.Errorf("cell name %q: use letters, digits, '.', '-' and '_'", c.Name)
	}
	var sets []string
	add := func(m map[string]any) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			sets = append(sets, k+"="+scalar(m[k]))
		}
	}
	add(s.Defaults.Set)
	if c.Harness != "" && c.Harness != "api" {
		hs, ok := s.HarnessSets[c.Harness]
		if !ok {
			return c, fmt.Errorf("harness %q: not in harness_sets (known: %s)", c.Harness, strings.Join(keysOf(s.HarnessSets), ", "))
		}
		add(hs)
	}
	if c.Target != "" {
		sets = append(sets, "model.target="+c.Target)
	}
	if c.Seed != nil {
		sets = append(sets, "train.seed="+strconv.Itoa(*c.Seed))
	}
	add(cs.Set)
	if b := s.CellBudget; b.MaxTokens > 0 {
		sets = append(sets, "budget.max_tokens="+strconv.FormatInt(b.MaxTokens, 10))
	}
	if b := s.CellBudget; b.MaxUSD > 0 {
		sets = append(sets, "budget.max_usd="+strconv.FormatFloat(b.MaxUSD, 'f', -1, 64))
	}
	if b := s.CellBudget; b.MaxWall > 0 {
		sets = append(sets, "budget.max_wall="+time.Duration(b.MaxWall).String())
	}
	c.Sets = sets
	return c, nil
}

// ConfigPath finds a cell's config: relative to the campaign file first,
// then to the working directory.
func (s *Spec) ConfigPath(cfg string) string {
	if filepath.IsAbs(cfg) {
		return cfg
	}
	if p := filepath.Join(s.Dir, cfg); fileExists(p) {
		return p
	}
	return cfg
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

func defaultName(cs CellSpec) string {
	base := strings.TrimSuffix(filepath.Base(cs.Config), filepath.Ext(cs.Config))
	if cs.Eval != nil && cs.Config == "" {
		base = "eval-" + cs.Eval.From
	}
	parts := []string{base}
	if cs.Target != "" {
		parts = append(parts, cs.Target)
	}
	if cs.Harness != "" {
		parts = append(parts, cs.Harness)
	}
	if cs.Seed != nil {
		parts = append(parts, "s"+strconv.Itoa(*cs.Seed))
	}
	n := strings.Join(parts, "-")
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, n)
}

func axisKeys(cfg, target, harness string, seed *int) map[string]string {
	k := map[string]string{"config": cfg, "target": target, "harness": harness}
	if seed != nil {
		k["seed"] = strconv.Itoa(*seed)
	}
	return k
}

func matches(m map[string]string, keys map[string]string) bool {
	for k, v := range m {
		if keys[k] != v {
			return false
		}
	}
	return true
}

func matchesAny(ms []map[string]string, keys map[string]string) bool {
	for _, m := range ms {
		if matches(m, keys) {
			return true
		}
	}
	return false
}

func merge(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func orBlank(xs []string) []string {
	if len(xs) == 0 {
		return []string{""}
	}
	return xs
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// scalar renders a YAML value for a --set override.
func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	case []any, map[string]any:
		b, _ := json.Marshal(x) // flow style, which a --set value parses as YAML
		return string(b)
	default:
		return fmt.Sprint(x)
	}
}
