package sleep

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/skillfleet/skillfleet/pkg/nightly"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

// liveDocs are the live skill and memory as the night read them, with the
// pins staging checks adopt against.
type liveDocs struct {
	skill, skillPin   string
	memory, memoryPin string
	// pkg is the live skill package when the night trains one.
	pkg *nightly.LivePackage
}

// readDocs reads the live documents, giving each a learned block (a
// scaffold when it is missing or empty).
func (n Night) readDocs(log *slog.Logger) (liveDocs, error) {
	var d liveDocs
	var err error
	if n.SkillDir != "" {
		if d.pkg, err = nightly.ReadPackage(n.SkillDir, skillpkg.Limits{}); err != nil {
			return d, err
		}
		d.skill = d.pkg.Text
	} else {
		if d.skill, d.skillPin, err = readDoc(n.SkillPath); err != nil {
			return d, err
		}
		if d.skill, err = nightly.EnsureBlock(d.skill, nightly.ScaffoldSkill); err != nil {
			return d, fmt.Errorf("%s: %w", n.SkillPath, err)
		}
		if hasPackageFiles(filepath.Dir(n.SkillPath)) {
			log.Warn("the skill's directory holds references/ or scripts/; this night trains SKILL.md alone (pass --skill-dir to train the whole package)", "skill_path", n.SkillPath)
		}
	}
	if d.memory, d.memoryPin, err = readDoc(n.MemoryPath); err != nil {
		return d, err
	}
	if d.memory, err = nightly.EnsureBlock(d.memory, nightly.ScaffoldMemory); err != nil {
		return d, fmt.Errorf("%s: %w", n.MemoryPath, err)
	}
	return d, nil
}

// readDoc returns a file's text and its pin; a missing file is empty.
func readDoc(path string) (string, string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	return string(b), nightly.SHA256Hex(b), nil
}

// hasPackageFiles reports whether dir holds references/ or scripts/.
func hasPackageFiles(dir string) bool {
	for _, sub := range []string{"references", "scripts"} {
		if st, err := os.Stat(filepath.Join(dir, sub)); err == nil && st.IsDir() {
			return true
		}
	}
	return false
}

// proposals are what an accepted night stages: each changed document
// against the live file (or package) it replaces.
func (d liveDocs) proposals(n Night, out *Outcome) []nightly.Proposal {
	if out == nil || !out.Accepted {
		return nil
	}
	var props []nightly.Proposal
	switch {
	case out.SkillChanged && d.pkg != nil:
		props = append(props, nightly.Proposal{Name: "skill", Package: true, LivePath: d.pkg.Dir, LiveExisted: d.pkg.Existed, LiveFiles: d.pkg.Pins, Text: out.ProposedSkill})
	case out.SkillChanged:
		props = append(props, nightly.Proposal{Name: "skill", LivePath: n.SkillPath, LiveSHA256: d.skillPin, Text: out.ProposedSkill})
	}
	if out.MemoryChanged {
		props = append(props, nightly.Proposal{Name: "memory", LivePath: n.MemoryPath, LiveSHA256: d.memoryPin, Text: out.ProposedMemory})
	}
	return props
}

// finish is the night's last phase: unless a dry run, it stages the
// outcome (its proposals when accepted), moves the project's cursor and
// archives the tasks (not for a night the budget stopped: its sessions are
// left for the next one), records the night and saves the state, then
// adopts an accepted night when auto_adopt is on. cause is the night's
// budget error, returned as is (nothing is adopted then).
func (n Night) finish(st *nightly.State, rep *Report, out *Outcome, props []nightly.Proposal, archived []nightly.Task, cause error) error {
	rep.Outcome = out
	if n.DryRun {
		return cause
	}
	if err := os.MkdirAll(filepath.Dir(n.StagingRoot), 0o755); err != nil {
		return err
	}
	var ev []any
	for _, rp := range out.Replays {
		ev = append(ev, rp)
	}
	for _, tr := range out.Trials {
		ev = append(ev, map[string]any{"trial": tr})
	}
	for _, d := range rep.MineDropped {
		ev = append(ev, map[string]any{"mine_dropped": d})
	}
	dir, err := nightly.Stage(nightly.StageInput{Root: n.StagingRoot, Night: rep.Night, Started: rep.Started, Accepted: out.Accepted && len(props) > 0,
		Action: out.Action, Reason: out.Reason, Proposals: props, ReportJSON: rep, ReportMD: rep.Markdown(), Evidence: ev})
	if err != nil {
		return err
	}
	rep.Staging = dir
	st.Night = rep.Night
	if out.Action != ActionStoppedBudget {
		st.LastHarvest[n.Project] = rep.Started
		for _, p := range rep.Projects {
			st.LastHarvest[p] = rep.Started
		}
		st.Archive(realTasks(archived))
	}
	st.Learn(lessons(rep.Night, out))
	st.History = append(st.History, nightly.NightRecord{Night: rep.Night, Started: rep.Started, Sessions: rep.Sessions, Tasks: rep.Tasks,
		Action: out.Action, Reason: out.Reason, Baseline: out.Baseline.Value, Final: finalValue(out), Tokens: out.Spend.Tokens, Staging: dir})
	if len(st.History) > 100 {
		st.History = st.History[len(st.History)-100:]
	}
	st.LastModelKey = n.modelKey()
	if err := st.Save(n.StatePath); err != nil {
		return err
	}
	if cause != nil || !n.Config.AutoAdopt || !out.Accepted {
		return cause
	}
	rec, err := nightly.Adopt(nightly.AdoptOptions{StagingDir: dir, AllowedRoots: n.AllowedRoots})
	if err != nil {
		return fmt.Errorf("auto-adopt: %w", err)
	}
	rep.Adopted = len(rec.Files)
	return nil
}

// lessons are the slow memory's entries of a night: each trial and
// what its gate decided (a trial rolled back by the final check is not
// kept).
func lessons(night int, out *Outcome) []nightly.Lesson {
	var ls []nightly.Lesson
	for _, tr := range out.Trials {
		ls = append(ls, nightly.NewLesson(night, tr.Document, tr.Edit, tr.Accepted, tr.Why))
	}
	return ls
}

// realTasks are the tasks of origin real: recalled and dream tasks are
// copies, never archived themselves.
func realTasks(tasks []nightly.Task) []nightly.Task {
	var out []nightly.Task
	for _, t := range tasks {
		if nightly.IsHeldOutOrigin(t.Origin) {
			out = append(out, t)
		}
	}
	return out
}

func finalValue(out *Outcome) float64 {
	if out.Final != nil {
		return out.Final.Value
	}
	return out.Baseline.Value
}
