package ui

import (
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/skillfleet/skillfleet/internal/inspect"
	"github.com/skillfleet/skillfleet/pkg/rundir"
)

// StepDetail is one step's edits and skill change, for the step panel.
type StepDetail struct {
	Step   int    `json:"step"`
	Action string `json:"action,omitempty"`
	// PayloadKey names the items: "edits", "revise_suggestions" or
	// "skill_candidates", by update mode.
	PayloadKey string            `json:"payload_key,omitempty"`
	Merged     []json.RawMessage `json:"merged"`
	Ranked     []json.RawMessage `json:"ranked"`
	// Apply is edit_apply_report.json: each ranked edit's fate (applied_*
	// or skipped_*).
	Apply []json.RawMessage `json:"apply"`
	// Rejected is true when the gate rejected the step's candidate: its
	// ranked edits went to the rejected-edit buffer.
	Rejected bool `json:"rejected"`
	// Diff is the candidate skill against the skill the step started from.
	DiffFrom string     `json:"diff_from,omitempty"`
	DiffTo   string     `json:"diff_to,omitempty"`
	Diff     []DiffLine `json:"diff"`
	// Failed are the step's training rollouts that did not score full
	// marks, each with the link to its whole trajectory.
	Failed []FailedItem `json:"failed"`
	Notes  []string     `json:"notes,omitempty"`
}

// FailedItem is one failed rollout of a step.
type FailedItem struct {
	ID         string  `json:"id"`
	Outcome    string  `json:"outcome"`
	Hard       float64 `json:"hard"`
	Soft       float64 `json:"soft"`
	Prediction string  `json:"prediction"`
	FailReason string  `json:"fail_reason,omitempty"`
	// Link is the trajectory's URL, relative to the run's page.
	Link string `json:"link"`
}

func (s *Server) stepAPI(w http.ResponseWriter, r *http.Request) {
	t := s.target(w, r, false)
	if t == nil {
		return
	}
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil || n < 1 || n > 1_000_000 {
		http.Error(w, "step: want a step number", http.StatusBadRequest)
		return
	}
	data, err := t.steps.get(t.dir, n)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}

// stepCache keeps the step panels last served, as JSON, with the size and
// modification time of the files each was built from: a panel asked for
// again (another page, a reload, a reconnect) costs a few stats instead of
// reading the files, diffing the skills and marshalling.
type stepCache struct {
	mu      sync.Mutex
	entries map[int]stepEntry
}

type stepEntry struct {
	fp   string
	data []byte
}

// maxCachedSteps bounds the cache; the lowest steps go first.
const maxCachedSteps = 64

// stepFiles are the files LoadStep reads for step n, relative to the run
// dir.
func stepFiles(n int) []string {
	sd := stepDir(n) + "/"
	return []string{sd + "record.json", sd + "merged_patch.json", sd + "ranked_edits.json", sd + "edit_apply_report.json",
		sd + "candidate_skill.md", "skills/" + skillName(n-1), "skills/" + skillName(n), sd + "rollout/" + rundir.PredictionsFile}
}

func (c *stepCache) get(dir string, n int) ([]byte, error) {
	fp := fingerprint(dir, stepFiles(n)...)
	c.mu.Lock()
	e, ok := c.entries[n]
	c.mu.Unlock()
	if ok && e.fp == fp {
		return e.data, nil
	}
	d, err := LoadStep(dir, n)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[int]stepEntry{}
	}
	if _, ok := c.entries[n]; !ok && len(c.entries) >= maxCachedSteps {
		low := n
		for k := range c.entries {
			low = min(low, k)
		}
		if low == n {
			return data, nil // older than everything kept
		}
		delete(c.entries, low)
	}
	c.entries[n] = stepEntry{fp: fp, data: data}
	return data, nil
}

// LoadStep reads step n's files from a run dir.
func LoadStep(dir string, n int) (*StepDetail, error) {
	sd := filepath.Join(dir, stepDir(n))
	if _, err := os.Stat(sd); err != nil {
		return nil, err
	}
	d := &StepDetail{Step: n, Merged: []json.RawMessage{}, Ranked: []json.RawMessage{}, Apply: []json.RawMessage{}, Diff: []DiffLine{}, Failed: []FailedItem{}}
	var rec struct {
		Action string `json:"action"`
	}
	if err := readJSON(filepath.Join(sd, "record.json"), &rec); err == nil {
		d.Action = rec.Action
		d.Rejected = strings.Contains(rec.Action, "reject")
	}
	note := func(err error) {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			d.Notes = append(d.Notes, err.Error())
		}
	}
	var err error
	var key string
	if d.Merged, key, err = readItems(filepath.Join(sd, "merged_patch.json")); err != nil {
		note(err)
		d.Merged = []json.RawMessage{}
	}
	d.PayloadKey = key
	if d.Ranked, key, err = readItems(filepath.Join(sd, "ranked_edits.json")); err != nil {
		note(err)
		d.Ranked = []json.RawMessage{}
	} else if d.PayloadKey == "" {
		d.PayloadKey = key
	}
	if err := readJSON(filepath.Join(sd, "edit_apply_report.json"), &d.Apply); err != nil {
		note(err)
		d.Apply = []json.RawMessage{}
	}
	before, err := os.ReadFile(filepath.Join(dir, "skills", skillName(n-1)))
	note(err)
	to := stepDir(n) + "/candidate_skill.md"
	after, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(to)))
	if errors.Is(err, fs.ErrNotExist) {
		to = "skills/" + skillName(n)
		after, err = os.ReadFile(filepath.Join(dir, "skills", skillName(n)))
	}
	note(err)
	if before != nil || after != nil {
		d.DiffFrom, d.DiffTo = "skills/"+skillName(n-1), to
		d.Diff = Diff(string(before), string(after))
	}
	fails, err := failedRollouts(dir, n)
	note(err)
	d.Failed = append(d.Failed, fails...)
	return d, nil
}

// failedRollouts are the failed training rollouts of step n, from its
// per-item predictions.
func failedRollouts(dir string, n int) ([]FailedItem, error) {
	run, err := inspect.LoadFile(filepath.Join(dir, stepDir(n), "rollout", rundir.PredictionsFile))
	if err != nil {
		return nil, err
	}
	var out []FailedItem
	for _, p := range run {
		if !(inspect.Filter{Failed: true}).Match(p) {
			continue
		}
		q := url.Values{"step": {strconv.Itoa(p.Step)}, "stage": {p.Stage}, "item": {p.ID}}
		out = append(out, FailedItem{ID: p.ID, Outcome: p.Outcome, Hard: p.Hard, Soft: p.Soft, Prediction: p.Prediction, FailReason: p.FailReason,
			Link: "trajectory?" + q.Encode()})
	}
	return out, nil
}

// trajectory serves one result whole, as text: the page a failed item of
// the step panel links to.
func (s *Server) trajectory(w http.ResponseWriter, r *http.Request) {
	t := s.target(w, r, false)
	if t == nil {
		return
	}
	q := r.URL.Query()
	step, err := strconv.Atoi(q.Get("step"))
	if err != nil || q.Get("stage") == "" || q.Get("item") == "" {
		http.Error(w, "trajectory: want step, stage and item", http.StatusBadRequest)
		return
	}
	preds, err := inspect.LoadFile(filepath.Join(t.dir, rundir.PredictionsDir(q.Get("stage"), step), rundir.PredictionsFile))
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	var sel []rundir.Prediction
	for _, p := range preds {
		if p.ID == q.Get("item") {
			sel = append(sel, p)
		}
	}
	if len(sel) == 0 {
		http.Error(w, "trajectory: no result of item "+q.Get("item")+" in that stage", http.StatusNotFound)
		return
	}
	rd, err := inspect.NewReader(t.dir, sel)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	for _, p := range sel {
		_ = inspect.WriteTrajectory(w, rd.Trajectory(p))
	}
}

func skillName(g int) string { return "skill_v" + pad4(g) + ".md" }

func pad4(n int) string {
	s := strconv.Itoa(n)
	for len(s) < 4 {
		s = "0" + s
	}
	return s
}
