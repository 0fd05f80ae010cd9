package campaign

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/pkg/config"
)

// ValidateCells loads every cell's config as its run will (the cell's
// settings, then sets), before any cell starts: one typo in one cell's
// config is an error at once, naming the cell, the file and the key,
// instead of a failed cell found after the others have spent their
// calls. Every bad cell is reported.
func (s *Spec) ValidateCells(sets []string) error {
	_, err := s.CellConfigs(sets)
	return err
}

// CellConfigs loads every cell's config as its run will, by cell name,
// reporting every bad cell as [Spec.ValidateCells] does. The campaign
// command checks the models these configs call before any cell starts.
func (s *Spec) CellConfigs(sets []string) (map[string]*config.Config, error) {
	cells, err := s.Expand()
	if err != nil {
		return nil, err
	}
	cfgs := make(map[string]*config.Config, len(cells))
	byName := make(map[string]Cell, len(cells))
	for _, c := range cells {
		byName[c.Name] = c
	}
	var errs []error
	for _, c := range cells {
		if c.Config == "" && c.EvalFrom != "" {
			// An eval-only cell without a config of its own runs under
			// the config of the cell it measures (as evalCell does).
			c.Config = byName[c.EvalFrom].Config
		}
		cfg, err := coordinator.LoadConfig(s.ConfigPath(c.Config), append(append([]string(nil), c.Sets...), sets...))
		if err != nil {
			errs = append(errs, fmt.Errorf("campaign %s: cell %s: %w", s.File, c.Name, err))
			continue
		}
		cfgs[c.Name] = cfg
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return cfgs, nil
}

// yamlField matches the decoder's words for a key a type does not have.
var yamlField = regexp.MustCompile(`^line (\d+): field (\S+) not found in type \S+$`)

// yamlError rewrites a campaign file's YAML decoding error in this
// project's words: one line per problem, "campaign: FILE: line N: ...".
func yamlError(path string, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return fmt.Errorf("campaign: %s: %s", path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	lines := make([]string, len(te.Errors))
	for i, e := range te.Errors {
		if m := yamlField.FindStringSubmatch(e); m != nil {
			e = "line " + m[1] + ": unknown key " + m[2]
		}
		lines[i] = "campaign: " + path + ": " + e
	}
	return errors.New(strings.Join(lines, "\n"))
}
