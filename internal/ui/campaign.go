package ui

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// CampaignFile is the campaign's index in a campaign dir: its cells, each an
// ordinary run dir. It is optional: without it every run dir directly
// inside the campaign dir is a cell.
const CampaignFile = "campaign.json"

// CampaignIndex is campaign.json as the dashboard reads it: only these
// fields, and unknown ones are ignored.
type CampaignIndex struct {
	Name  string         `json:"name,omitempty"`
	Cells []CampaignCell `json:"cells"`
	// Err is why campaign.json could not be read ("" when it could).
	Err string `json:"-"`
}

// CampaignCell is one cell: a name, its state as the campaign records it
// ("pending", "running", "done", "failed", ...) and its run dir (relative
// to the campaign dir, or absolute).
type CampaignCell struct {
	Name  string `json:"name"`
	State string `json:"state,omitempty"`
	Dir   string `json:"dir"`
	Error string `json:"error,omitempty"`
	// Results the campaign records (all optional): test scores (hard) of
	// no skill, the seed skill and the best skill; selection scores;
	// spend. The cell's run dir is preferred where it has the same.
	NoSkill          *float64 `json:"no_skill,omitempty"`
	SeedSkill        *float64 `json:"seed_skill,omitempty"`
	BestSkill        *float64 `json:"best_skill,omitempty"`
	SelectionCurrent *float64 `json:"selection_current,omitempty"`
	SelectionBest    *float64 `json:"selection_best,omitempty"`
	Tokens           int64    `json:"tokens,omitempty"`
	USD              *float64 `json:"usd,omitempty"`
}

// readCampaign lists a campaign's cells, with their dirs made absolute. A
// broken campaign.json is reported in Err and the run dirs found in the
// directory are listed instead.
func readCampaign(dir string) CampaignIndex {
	var idx CampaignIndex
	data, err := os.ReadFile(filepath.Join(dir, CampaignFile))
	if err == nil {
		if err := json.Unmarshal(data, &idx); err != nil {
			idx = CampaignIndex{Err: CampaignFile + ": " + err.Error()}
		}
	}
	if len(idx.Cells) == 0 {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if e.IsDir() && isRunDir(filepath.Join(dir, e.Name())) {
				idx.Cells = append(idx.Cells, CampaignCell{Name: e.Name(), Dir: e.Name()})
			}
		}
	}
	seen := map[string]bool{}
	out := idx.Cells[:0]
	for i, c := range idx.Cells {
		if c.Dir == "" {
			c.Dir = c.Name
		}
		if !filepath.IsAbs(c.Dir) {
			c.Dir = filepath.Join(dir, filepath.FromSlash(c.Dir))
		}
		if c.Name == "" {
			c.Name = filepath.Base(c.Dir)
		}
		c.Name = strings.NewReplacer("/", "_", "~", "_").Replace(c.Name)
		if seen[c.Name] {
			c.Name += "-" + itoa(i)
		}
		seen[c.Name] = true
		out = append(out, c)
	}
	idx.Cells = out
	if idx.Name == "" {
		idx.Name = filepath.Base(dir)
	}
	return idx
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// CampaignView is what the Campaign page shows.
type CampaignView struct {
	Name  string     `json:"name"`
	Dir   string     `json:"dir"`
	Cells []CellView `json:"cells"`
	// TotalTokens and TotalUSD add the cells' spend (USD nil if any cell's
	// spend is unpriced).
	TotalTokens int64    `json:"total_tokens"`
	TotalUSD    *float64 `json:"total_usd,omitempty"`
	Notes       []string `json:"notes,omitempty"`
}

// CellView is one row of the campaign matrix.
type CellView struct {
	Name string `json:"name"`
	// Link is the run page of the cell ("" when its dir holds no run yet).
	Link       string   `json:"link,omitempty"`
	State      string   `json:"state"`
	Step       int      `json:"step"`
	TotalSteps int      `json:"total_steps"`
	Current    *float64 `json:"current,omitempty"`
	Best       *float64 `json:"best,omitempty"`
	// TestDeltaBest/Final: test score (hard) of best/final minus baseline.
	TestDeltaBest  *float64 `json:"test_delta_best,omitempty"`
	TestDeltaFinal *float64 `json:"test_delta_final,omitempty"`
	// TestDeltaNoSkill is the best skill's test score minus no skill's,
	// from campaign.json.
	TestDeltaNoSkill *float64 `json:"test_delta_no_skill,omitempty"`
	Tokens           int64    `json:"tokens"`
	USD              *float64 `json:"usd,omitempty"`
	ETASeconds       *float64 `json:"eta_s,omitempty"`
	Error            string   `json:"error,omitempty"`
}

func campaignFingerprint(dir string) string {
	var b strings.Builder
	b.WriteString(fingerprint(dir, CampaignFile))
	for _, c := range readCampaign(dir).Cells {
		b.WriteString(c.Name + "=" + c.State + ":" + fingerprint(c.Dir, runFiles...))
	}
	return b.String()
}

func (s *Server) campaignView(t *target) (any, error) {
	idx := readCampaign(t.dir)
	v := &CampaignView{Name: idx.Name, Dir: t.dir, Cells: []CellView{}}
	if idx.Err != "" {
		v.Notes = append(v.Notes, idx.Err)
	}
	var usd float64
	priced := true
	for _, c := range idx.Cells {
		cv := CellView{Name: c.Name, State: c.State, Error: c.Error, Current: c.SelectionCurrent, Best: c.SelectionBest, Tokens: c.Tokens, USD: c.USD}
		if c.BestSkill != nil && c.SeedSkill != nil {
			cv.TestDeltaBest = fptr(*c.BestSkill - *c.SeedSkill)
		}
		if c.BestSkill != nil && c.NoSkill != nil {
			cv.TestDeltaNoSkill = fptr(*c.BestSkill - *c.NoSkill)
		}
		if !isRunDir(c.Dir) {
			if cv.State == "" {
				cv.State = "pending"
			}
			v.Cells = append(v.Cells, cv)
			continue
		}
		cv.Link = "/run/" + pathEscape(t.name+"~"+c.Name) + "/"
		rv, err := LoadRun(c.Dir, s.o.Prices)
		if err != nil {
			cv.Error = err.Error()
			if cv.State == "" {
				cv.State = "unreadable"
			}
			v.Cells = append(v.Cells, cv)
			v.TotalTokens += cv.Tokens
			if cv.USD != nil {
				usd += *cv.USD
			} else if cv.Tokens > 0 {
				priced = false
			}
			continue
		}
		if cv.State == "" {
			switch {
			case rv.Finished:
				cv.State = "done"
			case rv.Live:
				cv.State = "running"
			default:
				cv.State = "stopped"
			}
		}
		cv.Step, cv.TotalSteps = rv.LastStep, rv.TotalSteps
		if len(rv.Selection.X) > 0 {
			cv.Current, cv.Best = fptr(rv.Current), fptr(rv.Best)
		}
		if b, ok := rv.Test["baseline"]; ok {
			if x, ok := rv.Test["best"]; ok {
				cv.TestDeltaBest = fptr(x.Hard - b.Hard)
			}
			if x, ok := rv.Test["final"]; ok {
				cv.TestDeltaFinal = fptr(x.Hard - b.Hard)
			}
		}
		if rv.Spend.TotalTokens > 0 || cv.Tokens == 0 {
			cv.Tokens, cv.USD = rv.Spend.TotalTokens, rv.Spend.TotalUSD
		}
		cv.ETASeconds = rv.ETASeconds
		v.TotalTokens += cv.Tokens
		if cv.USD != nil {
			usd += *cv.USD
		} else if cv.Tokens > 0 {
			priced = false
		}
		v.Cells = append(v.Cells, cv)
	}
	if priced {
		v.TotalUSD = fptr(usd)
	}
	return v, nil
}

func pathEscape(s string) string { return url.PathEscape(s) }
