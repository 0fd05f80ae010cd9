package campaign

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/skillfleet/skillfleet/internal/atomicfile"
)

// Cell states.
const (
	StateQueued  = "queued"
	StateRunning = "running"
	StateDone    = "done"
	StateFailed  = "failed"
	// StateStopped: stopped by a budget or on request; re-running the
	// campaign resumes it.
	StateStopped = "stopped"
)

// File is campaign.json: the campaign's cells, their state and results.
// It is rewritten atomically whenever a cell changes.
type File struct {
	Version  int          `json:"version"`
	Name     string       `json:"name"`
	Spec     string       `json:"spec"`
	Started  time.Time    `json:"started"`
	Updated  time.Time    `json:"updated"`
	Finished *time.Time   `json:"finished,omitempty"`
	Cells    []CellStatus `json:"cells"`
}

// CellStatus is one cell's state and, once done, its results.
type CellStatus struct {
	Cell
	State string `json:"state"`
	// Dir is the cell's run directory, relative to the campaign dir.
	Dir   string `json:"dir"`
	Error string `json:"error,omitempty"`
	// Owner is the process that runs the cell now, in a campaign served
	// by several processes (the cell's lease); empty when no one does.
	Owner string `json:"owner,omitempty"`
	// Member is the process that ran the cell to its end, in a campaign
	// served by several processes.
	Member string `json:"member,omitempty"`
	// Test scores (hard metric) of the empty skill, the seed skill and
	// the best skill; for an eval-only cell, Best is the measured skill.
	NoSkill   *float64 `json:"no_skill,omitempty"`
	SeedSkill *float64 `json:"seed_skill,omitempty"`
	Best      *float64 `json:"best_skill,omitempty"`
	// Selection scores: current and best while training.
	SelectionCurrent *float64   `json:"selection_current,omitempty"`
	SelectionBest    *float64   `json:"selection_best,omitempty"`
	Accepted         int        `json:"accepted_edits"`
	Calls            int64      `json:"calls"`
	Tokens           int64      `json:"tokens"`
	USD              *float64   `json:"usd,omitempty"`
	WallS            float64    `json:"wall_s"`
	Started          *time.Time `json:"started,omitempty"`
	Ended            *time.Time `json:"ended,omitempty"`
}

// DeltaBest is best − seed skill, when both are known.
func (c CellStatus) DeltaBest() *float64 {
	if c.Best == nil || c.SeedSkill == nil {
		return nil
	}
	d := *c.Best - *c.SeedSkill
	return &d
}

// DeltaNoSkill is best − no skill, when both are known.
func (c CellStatus) DeltaNoSkill() *float64 {
	if c.Best == nil || c.NoSkill == nil {
		return nil
	}
	d := *c.Best - *c.NoSkill
	return &d
}

// FileName is the state file's name in the campaign dir.
const FileName = "campaign.json"

// FileVersion is the campaign.json schema this build writes and reads.
const FileVersion = 1

// Read loads a campaign dir's campaign.json.
func Read(dir string) (*File, error) {
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		return nil, err
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, FileName), err)
	}
	if f.Version > FileVersion {
		return nil, fmt.Errorf("%s has campaign format %d, newer than this skillfleet's %d: read or resume it with a skillfleet whose campaign format is %d (see docs/upgrades.md)",
			filepath.Join(dir, FileName), f.Version, FileVersion, f.Version)
	}
	return &f, nil
}

// Write stores f in dir atomically.
func Write(dir string, f *File) error {
	f.Version = FileVersion
	f.Updated = time.Now().UTC()
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, FileName), append(b, '\n'))
}

// Counts tallies the cells by state.
func (f *File) Counts() map[string]int {
	out := map[string]int{}
	for _, c := range f.Cells {
		out[c.State]++
	}
	return out
}

func f3(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', 3, 64)
}

func signed(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%+.3f", *v)
}

func usd(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("$%.2f", *v)
}

func tokens(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	case n >= 1000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return strconv.FormatInt(n, 10)
}

// WriteText renders the paper-style results table.
func (f *File) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "campaign %s: %d cells", f.Name, len(f.Cells))
	counts := f.Counts()
	var parts []string
	for _, st := range []string{StateDone, StateRunning, StateQueued, StateStopped, StateFailed} {
		if counts[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[st], st))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, " (%s)", join(parts))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "\n%-28s %-8s %8s %8s %8s %8s %8s %5s %7s %9s %9s %8s\n",
		"cell", "state", "no-skill", "seed", "best", "Δseed", "Δnone", "edits", "calls", "tokens", "$", "wall")
	var calls, toks int64
	var cost float64
	var priced bool
	for _, c := range f.Cells {
		fmt.Fprintf(w, "%-28s %-8s %8s %8s %8s %8s %8s %5d %7d %9s %9s %7.1fs\n",
			c.Name, c.State, f3(c.NoSkill), f3(c.SeedSkill), f3(c.Best), signed(c.DeltaBest()), signed(c.DeltaNoSkill()),
			c.Accepted, c.Calls, tokens(c.Tokens), usd(c.USD), c.WallS)
		calls += c.Calls
		toks += c.Tokens
		if c.USD != nil {
			cost += *c.USD
			priced = true
		}
	}
	total := "-"
	if priced {
		total = fmt.Sprintf("$%.2f", cost)
	}
	fmt.Fprintf(w, "\ntotal: %d calls, %s tokens, %s\n", calls, tokens(toks), total)
	for _, c := range f.Cells {
		if c.Error != "" {
			fmt.Fprintf(w, "%s: %s\n", c.Name, c.Error)
		}
	}
	return nil
}

func join(xs []string) string {
	out := ""
	for i, x := range xs {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}

// WriteCSV renders the table as CSV (one row per cell).
func (f *File) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"cell", "config", "target", "harness", "seed", "eval_from", "state", "no_skill", "seed_skill", "best_skill",
		"delta_best_vs_seed", "delta_best_vs_no_skill", "accepted_edits", "calls", "tokens", "usd", "wall_s", "dir", "error"})
	num := func(v *float64) string {
		if v == nil {
			return ""
		}
		return strconv.FormatFloat(*v, 'f', 6, 64)
	}
	for _, c := range f.Cells {
		seed := ""
		if c.Seed != nil {
			seed = strconv.Itoa(*c.Seed)
		}
		_ = cw.Write([]string{c.Name, c.Config, c.Target, c.Harness, seed, c.EvalFrom, c.State, num(c.NoSkill), num(c.SeedSkill), num(c.Best),
			num(c.DeltaBest()), num(c.DeltaNoSkill()), strconv.Itoa(c.Accepted), strconv.FormatInt(c.Calls, 10), strconv.FormatInt(c.Tokens, 10),
			num(c.USD), strconv.FormatFloat(c.WallS, 'f', 1, 64), c.Dir, c.Error})
	}
	cw.Flush()
	return cw.Error()
}

var htmlPage = template.Must(template.New("campaign").Funcs(template.FuncMap{
	"f3": f3, "signed": signed, "usd": usd, "tokens": tokens,
	"deltaClass": func(v *float64) string {
		switch {
		case v == nil:
			return ""
		case *v > 0:
			return "up"
		case *v < 0:
			return "down"
		}
		return ""
	},
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>campaign {{.F.Name}}</title>
<style>
body{font:14px system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse}th,td{padding:4px 10px;border-bottom:1px solid #ddd;text-align:right}
th:first-child,td:first-child,td.l{text-align:left}
.up{color:#176c2c}.down{color:#a21}.failed{color:#a21}.running{color:#1a55a0}
</style></head><body>
<h1>campaign {{.F.Name}}</h1>
<p>{{len .F.Cells}} cells; spec {{.F.Spec}}</p>
<table><thead><tr><th>cell</th><th>state</th><th>no skill</th><th>seed skill</th><th>best skill</th><th>Δ seed</th><th>Δ no skill</th><th>edits</th><th>calls</th><th>tokens</th><th>$</th><th>wall</th></tr></thead><tbody>
{{range .F.Cells}}<tr><td>{{if index $.Links .Name}}<a href="{{index $.Links .Name}}">{{.Name}}</a>{{else}}{{.Name}}{{end}}</td><td class="l {{.State}}">{{.State}}</td>
<td>{{f3 .NoSkill}}</td><td>{{f3 .SeedSkill}}</td><td>{{f3 .Best}}</td><td class="{{deltaClass .DeltaBest}}">{{signed .DeltaBest}}</td><td class="{{deltaClass .DeltaNoSkill}}">{{signed .DeltaNoSkill}}</td>
<td>{{.Accepted}}</td><td>{{.Calls}}</td><td>{{tokens .Tokens}}</td><td>{{usd .USD}}</td><td>{{printf "%.1f" .WallS}}s</td></tr>
{{end}}</tbody></table>
{{range .F.Cells}}{{if .Error}}<p class="failed">{{.Name}}: {{.Error}}</p>{{end}}{{end}}
</body></html>
`))

// WriteHTML renders the matrix as a page; links maps a cell name to its
// run report (relative URL), when there is one.
func (f *File) WriteHTML(w io.Writer, links map[string]string) error {
	return htmlPage.Execute(w, struct {
		F     *File
		Links map[string]string
	}{f, links})
}
