package sleep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/nightly"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// StatusCommand is `sleep status`: the state and the latest proposal, as
// text or JSON.
func StatusCommand(n Night, asJSON bool, stdout io.Writer) error {
	s, err := ReadStatus(n)
	if err != nil {
		return err
	}
	if asJSON {
		b, _ := json.MarshalIndent(s, "", "  ")
		fmt.Fprintln(stdout, string(b))
		return nil
	}
	fmt.Fprint(stdout, s.Text())
	return nil
}

// HarvestCommand is `sleep harvest`: the night's harvest and mining,
// written to output as an unreviewed tasks file. newModel builds the
// optimizer when the config mines with the model.
func HarvestCommand(ctx context.Context, n Night, output string, newModel func(*pb.ModelSpec) (llm.Model, error), stdout io.Writer) error {
	if output == "" {
		return UsageError{errors.New("sleep harvest: --output is required")}
	}
	if n.Config.Backend == backends.BackendHandoff && *n.Config.LLMMine {
		return UsageError{errors.New("sleep harvest: --backend handoff answers a night's calls round by round (sleep run, sleep dry-run); harvest with --heuristic-mine, or with another backend")}
	}
	var optimizer llm.Model
	if n.Config.Backend != "" && *n.Config.LLMMine {
		_, spec, err := Specs(n)
		if err != nil {
			return err
		}
		if optimizer, err = newModel(spec); err != nil {
			return UsageError{fmt.Errorf("backend %s: %w", spec.GetBackend(), err)}
		}
		n.OptimizerModel = spec.GetModel()
	}
	h, err := Harvest(ctx, n, optimizer)
	if err != nil {
		return err
	}
	if err := nightly.WriteTasksFile(output, nightly.TasksFile{Reviewed: false, Tasks: h.Tasks}); err != nil {
		return err
	}
	sk := h.Skipped
	fmt.Fprintf(stdout, "harvested %d sessions (skipped: %d malformed lines, %d huge lines, %d headless, %d sub-agent, %d older than the cursor)\n",
		h.Sessions, sk.MalformedLines, sk.HugeLines, sk.Headless, sk.SubAgent, sk.Old)
	for _, d := range h.Dropped {
		fmt.Fprintln(stdout, "dropped:", d)
	}
	fmt.Fprintf(stdout, "wrote %d tasks to %s; review them, set \"reviewed\": true, then: skillfleet sleep run --tasks-file %s\n", len(h.Tasks), output, output)
	return nil
}

// AdoptCommand is `sleep adopt`: install the latest (or staging's)
// accepted proposal, or with undo put the files the adoption replaced
// back. extraRoots are further directories adopt may write under.
func AdoptCommand(n Night, staging string, undo bool, extraRoots []string, stdout io.Writer) error {
	return AdoptSkills(n, staging, undo, extraRoots, "", false, stdout)
}

// AdoptSkills is `sleep adopt` with the choice of a multi-skill night's
// skills (skill_root): skill names one, all takes every skill with a
// staged night, each adopted (or undone, with undo) on its own from its
// own staging root and receipts. Without skill_root both must be unset.
func AdoptSkills(n Night, staging string, undo bool, extraRoots []string, skill string, all bool, stdout io.Writer) error {
	if n.SkillRoot == "" {
		if skill != "" || all {
			return UsageError{errors.New("--skill and --all-skills choose among a multi-skill night's proposals: pass --skill-root DIR (skill_root)")}
		}
		return adoptOne(n, staging, undo, extraRoots, stdout)
	}
	switch {
	case skill != "" && all:
		return UsageError{errors.New("--skill NAME or --all-skills, not both")}
	case skill == "" && !all:
		return UsageError{fmt.Errorf("a multi-skill night (skill_root %s) stages one proposal per skill: name one with --skill NAME or take them all with --all-skills", n.SkillRoot)}
	case staging != "":
		return UsageError{errors.New("--staging with --skill-root: choose the skill with --skill NAME (its latest night is taken)")}
	}
	names := []string{skill}
	if all {
		names = nil
		ents, _ := os.ReadDir(n.StagingRoot)
		for _, e := range ents {
			if name, ok := strings.CutPrefix(e.Name(), "skill-"); ok && e.IsDir() {
				names = append(names, name)
			}
		}
		if len(names) == 0 {
			return fmt.Errorf("no multi-skill night staged under %s", n.StagingRoot)
		}
	}
	for _, name := range names {
		sub := n
		sub.StagingRoot = n.SkillStagingRoot(name)
		sub.AdoptCmd = strings.Replace(n.AdoptCmd, "--all-skills", "--skill "+name, 1)
		if _, err := os.Stat(sub.StagingRoot); err != nil {
			return fmt.Errorf("skill %s: no night staged a proposal for it (%s)", name, sub.StagingRoot)
		}
		if !undo {
			dir, err := nightly.Latest(sub.StagingRoot)
			if err != nil {
				return fmt.Errorf("skill %s: %w", name, err)
			}
			if m, err := nightly.ReadManifest(dir); err == nil && !m.Accepted && all {
				fmt.Fprintf(stdout, "skill %s: nothing to adopt (%s)\n", name, m.Action)
				continue
			}
			if rs, _ := nightly.Receipts(sub.StagingRoot); all && adoptedNow(rs, dir) {
				fmt.Fprintf(stdout, "skill %s: already adopted\n", name)
				continue
			}
		}
		if undo && all {
			if rs, _ := nightly.Receipts(sub.StagingRoot); !hasOpenReceipt(rs) {
				continue
			}
		}
		fmt.Fprintf(stdout, "skill %s:\n", name)
		if err := adoptOne(sub, "", undo, extraRoots, stdout); err != nil {
			return fmt.Errorf("skill %s: %w", name, err)
		}
	}
	return nil
}

// adoptedNow reports whether staging dir is adopted and not undone.
func adoptedNow(rs []nightly.Receipt, dir string) bool {
	abs, _ := filepath.Abs(dir)
	for _, r := range rs {
		if r.Staging == abs && r.UndoneAt == nil {
			return true
		}
	}
	return false
}

// hasOpenReceipt reports whether an adoption on record is not undone.
func hasOpenReceipt(rs []nightly.Receipt) bool {
	for _, r := range rs {
		if r.UndoneAt == nil {
			return true
		}
	}
	return false
}

func adoptOne(n Night, staging string, undo bool, extraRoots []string, stdout io.Writer) error {
	ao := nightly.AdoptOptions{StagingDir: staging, AllowedRoots: append(n.AllowedRoots, extraRoots...), Receipts: filepath.Join(n.StagingRoot, "adopted.json")}
	if undo {
		rec, err := nightly.Undo(ao)
		if err != nil {
			return err
		}
		for _, f := range rec.Files {
			switch {
			case f.Package && !f.Existed:
				fmt.Fprintf(stdout, "removed %s (the skill package the adoption created)\n", f.LivePath)
			case f.Package:
				fmt.Fprintf(stdout, "restored %s (skill package, %d files)\n", f.LivePath, len(f.OldFiles))
			default:
				fmt.Fprintf(stdout, "restored %s\n", f.LivePath)
			}
		}
		return nil
	}
	if ao.StagingDir == "" {
		var err error
		if ao.StagingDir, err = nightly.Latest(n.StagingRoot); err != nil {
			return err
		}
	}
	rec, err := nightly.Adopt(ao)
	if err != nil {
		return err
	}
	for _, f := range rec.Files {
		b := "(new file)"
		if f.Existed {
			b = "backup " + f.Backup
		}
		if f.Package {
			b = fmt.Sprintf("(skill package, %d files) ", len(f.NewFiles)) + strings.Replace(b, "new file", "new directory", 1)
		}
		fmt.Fprintf(stdout, "adopted %s %s\n", f.LivePath, b)
	}
	fmt.Fprintf(stdout, "undo with: %s --undo\n", n.AdoptCmd)
	return nil
}

// ScheduleCommand is `sleep schedule`, a daily `sleep run` with the
// night's settings, or with unschedule `sleep unschedule`.
func (o *Options) ScheduleCommand(n Night, unschedule, autoAdopt bool, so nightly.ScheduleOptions, stdout io.Writer) error {
	so.Log = filepath.Join(o.StateDir, "sleep.log")
	if unschedule {
		msg, err := nightly.Unschedule(so)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, msg)
		return nil
	}
	if n.Config.Backend == "" {
		return UsageError{errors.New("sleep schedule: --backend is required (or backend: in the config)")}
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	argv := []string{exe, "sleep", "run", "--project", n.Project, "--state-dir", o.StateDir, "--backend", n.Config.Backend}
	if n.Config.Model != "" {
		argv = append(argv, "--model", n.Config.Model)
	}
	if o.ConfigPath != "" {
		abs, _ := filepath.Abs(o.ConfigPath)
		argv = append(argv, "--config", abs)
	}
	if o.set["skill-dir"] {
		argv = append(argv, "--skill-dir", n.SkillDir)
	}
	if autoAdopt {
		argv = append(argv, "--auto-adopt")
	}
	// The replay target's flags (an agent CLI), as given.
	target, err := o.targetArgs(o.set)
	if err != nil {
		return err
	}
	argv = append(argv, target...)
	so.Command = argv
	msg, err := nightly.Schedule(so)
	if err != nil {
		return UsageError{err}
	}
	fmt.Fprintln(stdout, msg)
	return nil
}
