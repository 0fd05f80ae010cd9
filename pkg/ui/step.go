package ui

import (
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
	Notes    []string   `json:"notes,omitempty"`
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
	d, err := LoadStep(t.dir, n)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	writeJSON(w, d)
}

// LoadStep reads step n's files from a run dir.
func LoadStep(dir string, n int) (*StepDetail, error) {
	sd := filepath.Join(dir, stepDir(n))
	if _, err := os.Stat(sd); err != nil {
		return nil, err
	}
	d := &StepDetail{Step: n, Merged: []json.RawMessage{}, Ranked: []json.RawMessage{}, Apply: []json.RawMessage{}, Diff: []DiffLine{}}
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
	return d, nil
}

func skillName(g int) string { return "skill_v" + pad4(g) + ".md" }

func pad4(n int) string {
	s := strconv.Itoa(n)
	for len(s) < 4 {
		s = "0" + s
	}
	return s
}
