package sleep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/skillfleet/skillfleet/pkg/nightly"
)

// SweepFile is `sleep sweep`'s matrix: every persona × setting × seed is
// one night in a sandbox of its own.
type SweepFile struct {
	// Personas are built-in personas (their sessions, their skill).
	Personas []string `yaml:"personas"`
	// Seeds are the split seeds (the config's seed).
	Seeds []int64 `yaml:"seeds"`
	// Backend and Model are the nights' (default sim).
	Backend string `yaml:"backend"`
	Model   string `yaml:"model"`
	// Settings are named sets of `sleep run` flags.
	Settings []SweepSetting `yaml:"settings"`
}

// SweepSetting is one named set of night flags.
type SweepSetting struct {
	Name string   `yaml:"name"`
	Args []string `yaml:"args"`
}

// SweepCell is one night of a sweep.
type SweepCell struct {
	Persona  string  `json:"persona"`
	Setting  string  `json:"setting"`
	Seed     int64   `json:"seed"`
	Action   string  `json:"action"`
	Baseline float64 `json:"baseline"`
	Final    float64 `json:"final_fresh"`
	Tokens   int64   `json:"tokens"`
	Edits    int     `json:"edits_accepted"`
}

// LoadSweepFile reads and checks a sweep file; errors name the file and
// field.
func LoadSweepFile(path string) (*SweepFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f SweepFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if f.Backend == "" {
		f.Backend = "sim"
	}
	switch {
	case len(f.Personas) == 0 || len(f.Seeds) == 0 || len(f.Settings) == 0:
		return nil, fmt.Errorf("%s: personas, seeds and settings: each needs at least one entry", path)
	}
	for _, p := range f.Personas {
		if !slices.Contains(nightly.Personas(), p) {
			return nil, fmt.Errorf("%s: personas: %q: want one of %s", path, p, strings.Join(nightly.Personas(), ", "))
		}
	}
	seen := map[string]bool{}
	for i, s := range f.Settings {
		if s.Name == "" || strings.ContainsAny(s.Name, "/\\ ") || seen[s.Name] {
			return nil, fmt.Errorf("%s: settings[%d]: name %q: want a unique name without spaces or slashes", path, i, s.Name)
		}
		seen[s.Name] = true
		for _, a := range s.Args {
			if slices.Contains([]string{"--persona", "--state-dir", "--config", "--backend", "--model", "--auto-adopt"}, strings.SplitN(a, "=", 2)[0]) {
				return nil, fmt.Errorf("%s: settings[%d] (%s): %s is the sweep's to set", path, i, s.Name, a)
			}
		}
	}
	return &f, nil
}

// SweepCommand runs a sweep's nights, at most parallel at once (below 1:
// one), each with run (a `sleep run` of the given arguments) in its own
// state dir under out, and writes out/scorecard.md, out/scorecard.html
// and out/cells.json, the cells in the matrix's order whatever order they
// finished in. A night is a function of its sandbox, flags and seed alone,
// so the results do not depend on parallel. A cell that fails stops the
// sweep: no other starts, those running end, and the first failure in the
// matrix's order is returned.
func SweepCommand(f *SweepFile, out string, parallel int, run func(args []string) error, stdout io.Writer) error {
	type job struct {
		persona, setting string
		seed             int64
		dir              string
		args             []string
		cell             SweepCell
		err              error
	}
	var jobs []*job
	for _, p := range f.Personas {
		for _, s := range f.Settings {
			for _, seed := range f.Seeds {
				dir := filepath.Join(out, "cells", fmt.Sprintf("%s-%s-%d", p, s.Name, seed))
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("seed: "+strconv.FormatInt(seed, 10)+"\n"), 0o600); err != nil {
					return err
				}
				args := []string{"--persona", p, "--state-dir", dir, "--backend", f.Backend}
				if f.Model != "" {
					args = append(args, "--model", f.Model)
				}
				jobs = append(jobs, &job{persona: p, setting: s.Name, seed: seed, dir: dir, args: append(args, s.Args...)})
			}
		}
	}
	var (
		mu     sync.Mutex
		failed bool
		wg     sync.WaitGroup
		next   = make(chan *job)
	)
	for range max(1, min(parallel, len(jobs))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				mu.Lock()
				stop := failed
				mu.Unlock()
				if stop {
					continue
				}
				j.err = run(j.args)
				if j.err == nil || errors.Is(j.err, ErrNoImprovement) {
					j.cell, j.err = readCell(j.dir, j.persona)
				}
				mu.Lock()
				if j.err != nil {
					j.err = fmt.Errorf("sweep cell %s/%s/seed %d: %w", j.persona, j.setting, j.seed, j.err)
					failed = true
				} else {
					c := j.cell
					fmt.Fprintf(stdout, "%s %s seed %d: %s, %.3f → %.3f, %d tokens\n", j.persona, j.setting, j.seed, c.Action, c.Baseline, c.Final, c.Tokens)
				}
				mu.Unlock()
			}
		}()
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
	// Jobs start in the matrix's order, so one not started because a cell
	// failed comes after that cell.
	var cells []SweepCell
	for _, j := range jobs {
		if j.err != nil {
			return j.err
		}
		c := j.cell
		c.Setting, c.Seed = j.setting, j.seed
		cells = append(cells, c)
	}
	b, _ := json.MarshalIndent(cells, "", "  ")
	if err := os.WriteFile(filepath.Join(out, "cells.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	rows := scorecard(f, cells)
	if err := os.WriteFile(filepath.Join(out, "scorecard.md"), []byte(scorecardMarkdown(rows)), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "scorecard.html"), []byte(scorecardHTML(rows)), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "scorecard: %s\n", filepath.Join(out, "scorecard.md"))
	return nil
}

// readCell reads a cell's night from its latest staged report.
func readCell(stateDir, persona string) (SweepCell, error) {
	c := SweepCell{Persona: persona}
	dir, err := nightly.Latest(filepath.Join(stateDir, "persona-"+persona, "project", ".skillfleet-sleep", "staging"))
	if err != nil {
		return c, err
	}
	var rep Report
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err == nil {
		err = json.Unmarshal(b, &rep)
	}
	if err != nil || rep.Outcome == nil {
		return c, fmt.Errorf("%s/report.json: %v", dir, err)
	}
	o := rep.Outcome
	c.Action, c.Baseline, c.Final, c.Tokens = o.Action, o.Baseline.Value, o.Baseline.Value, o.Spend.Tokens
	if o.Final != nil {
		c.Final = o.Final.Value
	}
	for _, tr := range o.Trials {
		if tr.Accepted {
			c.Edits++
		}
	}
	return c, nil
}

// scoreRow is one persona × setting of the scorecard: means over seeds.
type scoreRow struct {
	Persona, Setting                     string
	Nights, Accepted                     int
	Baseline, Final, Gain, Tokens, Edits float64
}

func scorecard(f *SweepFile, cells []SweepCell) []scoreRow {
	var rows []scoreRow
	for _, p := range f.Personas {
		for _, s := range f.Settings {
			r := scoreRow{Persona: p, Setting: s.Name}
			for _, c := range cells {
				if c.Persona != p || c.Setting != s.Name {
					continue
				}
				r.Nights++
				if c.Action == ActionAccept {
					r.Accepted++
				}
				r.Baseline += c.Baseline
				r.Final += c.Final
				r.Tokens += float64(c.Tokens)
				r.Edits += float64(c.Edits)
			}
			if r.Nights > 0 {
				n := float64(r.Nights)
				r.Baseline, r.Final, r.Tokens, r.Edits = r.Baseline/n, r.Final/n, r.Tokens/n, r.Edits/n
				r.Gain = r.Final - r.Baseline
			}
			rows = append(rows, r)
		}
	}
	return rows
}

var scorecardHeader = []string{"persona", "setting", "nights", "accepted", "baseline", "fresh final", "gain", "tokens", "edits adopted"}

func (r scoreRow) cells() []string {
	return []string{r.Persona, r.Setting, strconv.Itoa(r.Nights), strconv.Itoa(r.Accepted), fmt.Sprintf("%.3f", r.Baseline),
		fmt.Sprintf("%.3f", r.Final), fmt.Sprintf("%+.3f", r.Gain), fmt.Sprintf("%.0f", r.Tokens), fmt.Sprintf("%.1f", r.Edits)}
}

func scorecardMarkdown(rows []scoreRow) string {
	var b strings.Builder
	b.WriteString("# skillfleet sleep sweep\n\nMeans over seeds of each persona × setting: the val score of the baseline and of the fresh final replays, the tokens a night spent, the edits its gate kept (adopted into the proposal).\n\n")
	b.WriteString("| " + strings.Join(scorecardHeader, " | ") + " |\n|" + strings.Repeat("---|", len(scorecardHeader)) + "\n")
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r.cells(), " | ") + " |\n")
	}
	return b.String()
}

func scorecardHTML(rows []scoreRow) string {
	var b strings.Builder
	b.WriteString("<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>skillfleet sleep sweep</title>\n<style>table{border-collapse:collapse}td,th{border:1px solid #999;padding:2px 8px;text-align:right}</style></head><body>\n<h1>skillfleet sleep sweep</h1>\n<table>\n<tr>")
	for _, h := range scorecardHeader {
		b.WriteString("<th>" + html.EscapeString(h) + "</th>")
	}
	b.WriteString("</tr>\n")
	for _, r := range rows {
		b.WriteString("<tr>")
		for _, c := range r.cells() {
			b.WriteString("<td>" + html.EscapeString(c) + "</td>")
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n</body></html>\n")
	return b.String()
}
