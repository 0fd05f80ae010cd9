package sleep

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/pkg/nightly"
)

// Status is `sleep status`: the nights so far, the project's latest staged
// proposal, the adoptions and whether one was interrupted.
type Status struct {
	State       string                `json:"state"`
	Nights      int                   `json:"nights"`
	Cursors     map[string]string     `json:"cursors"`
	Recent      []nightly.NightRecord `json:"recent"`
	Latest      string                `json:"latest_staging,omitempty"`
	LatestState string                `json:"latest_action,omitempty"`
	Adoptions   []nightly.Receipt     `json:"adoptions,omitempty"`
	Interrupted bool                  `json:"interrupted_adopt,omitempty"`
	Archive     int                   `json:"archived_tasks"`
}

// ReadStatus reads the state file and the staging root of a night's setup.
func ReadStatus(n Night) (*Status, error) {
	st, err := nightly.LoadState(n.StatePath)
	if err != nil {
		return nil, err
	}
	s := &Status{State: n.StatePath, Nights: st.Night, Cursors: map[string]string{}, Archive: len(st.TaskArchive)}
	for p, t := range st.LastHarvest {
		s.Cursors[p] = t.Format(time.RFC3339)
	}
	if k := len(st.History); k > 0 {
		s.Recent = st.History[max(0, k-5):]
	}
	if dir, err := nightly.Latest(n.StagingRoot); err == nil {
		s.Latest = dir
		if m, err := nightly.ReadManifest(dir); err == nil {
			s.LatestState = fmt.Sprintf("%s (accepted: %t) %s", m.Action, m.Accepted, m.Reason)
		} else {
			s.LatestState = err.Error()
		}
	}
	s.Adoptions, _ = nightly.Receipts(n.StagingRoot)
	s.Interrupted = nightly.PendingTransaction(n.StagingRoot)
	return s, nil
}

// Text is the status as the command prints it.
func (s *Status) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "state: %s (%d nights, %d archived tasks)\n", s.State, s.Nights, s.Archive)
	ps := make([]string, 0, len(s.Cursors))
	for p := range s.Cursors {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	for _, p := range ps {
		fmt.Fprintf(&b, "cursor: %s harvested up to %s\n", p, s.Cursors[p])
	}
	for _, h := range s.Recent {
		if h.Action == ActionMultiSkill {
			// A multi-skill night has one score per skill, in each skill's report.
			fmt.Fprintf(&b, "night %d %s: %s, %d tokens (%s)\n", h.Night, h.Started.Format(time.RFC3339), h.Action, h.Tokens, h.Reason)
			continue
		}
		fmt.Fprintf(&b, "night %d %s: %s, val %.3f → %.3f, %d tokens (%s)\n", h.Night, h.Started.Format(time.RFC3339), h.Action, h.Baseline, h.Final, h.Tokens, h.Reason)
	}
	if s.Latest != "" {
		fmt.Fprintf(&b, "latest staging: %s: %s\n", s.Latest, s.LatestState)
	}
	for _, a := range s.Adoptions {
		undone := ""
		if a.UndoneAt != nil {
			undone = ", undone " + a.UndoneAt.Format(time.RFC3339)
		}
		fmt.Fprintf(&b, "adopted %s at %s (%d files%s)\n", a.Staging, a.AdoptedAt.Format(time.RFC3339), len(a.Files), undone)
	}
	if s.Interrupted {
		b.WriteString("an adopt was interrupted; the next adopt or undo rolls it back\n")
	}
	return b.String()
}
