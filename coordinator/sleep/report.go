package sleep

import (
	"cmp"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/pkg/nightly"
)

// Report is a night's report: report.json, report.md and the summary
// the command prints.
type Report struct {
	Night       int             `json:"night"`
	Project     string          `json:"project"`
	Started     time.Time       `json:"started"`
	Backend     string          `json:"backend"`
	Model       string          `json:"model"`
	DryRun      bool            `json:"dry_run,omitempty"`
	Sessions    int             `json:"sessions"`
	Skipped     nightly.Skipped `json:"skipped"`
	Tasks       int             `json:"tasks"`
	Splits      map[string]int  `json:"splits"`
	MineDropped []string        `json:"mine_dropped,omitempty"`
	Outcome     *Outcome        `json:"outcome"`
	SkillPath   string          `json:"skill_path"`
	SkillDir    string          `json:"skill_dir,omitempty"`
	MemoryPath  string          `json:"memory_path"`
	Staging     string          `json:"staging,omitempty"`
	AdoptCmd    string          `json:"adopt_command,omitempty"`
	TaskList    []TaskSummary   `json:"task_list"`
	// Origins counts tonight's tasks by origin (real, recall, dream);
	// Recalled lists the archived tasks recall_k brought back.
	Origins  map[string]int  `json:"origins,omitempty"`
	Recalled []RecallSummary `json:"recalled,omitempty"`
	// Projects are the projects whose sessions were harvested (several
	// with scope all); OffTarget the mined tasks target_task_filter left
	// out, as not exercising the skill.
	Projects  []string      `json:"projects,omitempty"`
	OffTarget []TaskSummary `json:"off_target,omitempty"`
	// Skills are a multi-skill night's parts, one per skill of skill_root
	// with tasks; Unresolved the tasks no skill took.
	Skills     []SkillNight  `json:"skills,omitempty"`
	Unresolved []TaskSummary `json:"unresolved,omitempty"`
	lives      []nightly.Proposal
	// UsageEstimated says how the night's tokens were counted when no
	// backend reported them (a handoff night's answers).
	UsageEstimated string `json:"usage_estimated,omitempty"`
	// Adopted counts the files an auto-adopt installed.
	Adopted int `json:"-"`
}

// TaskSummary is one task in the report.
type TaskSummary struct {
	ID     string `json:"id"`
	Split  string `json:"split"`
	Judge  string `json:"judge"`
	Origin string `json:"origin"`
	Intent string `json:"intent"`
}

// RecallSummary is one recalled task in the report: its id tonight, the
// archived task it copies, tonight's train task it is most like and the
// similarity of the two ([nightly.Similarity]).
type RecallSummary struct {
	ID         string  `json:"id"`
	Archived   string  `json:"archived"`
	Like       string  `json:"like"`
	Similarity float64 `json:"similarity"`
	Intent     string  `json:"intent"`
}

func clipRunes(s string, n int) string {
	rs := []rune(s)
	if len(rs) <= n {
		return s
	}
	return string(rs[:n]) + "…"
}

// Summary is the text the command prints after a night.
func (rep *Report) Summary() string {
	out := rep.Outcome
	var b strings.Builder
	mode := "night"
	if rep.DryRun {
		mode = "dry run of night"
	}
	fmt.Fprintf(&b, "skillfleet sleep: %s %d of %s (%s/%s)\n", mode, rep.Night, rep.Project, rep.Backend, rep.Model)
	fmt.Fprintf(&b, "sessions %d, tasks %d (train %d, val %d, test %d)\n", rep.Sessions, rep.Tasks, rep.Splits["train"], rep.Splits["val"], rep.Splits["test"])
	if line := rep.dreamLine(); line != "" {
		fmt.Fprintln(&b, line)
	}
	if len(rep.Projects) > 1 {
		fmt.Fprintf(&b, "projects: %s\n", strings.Join(rep.Projects, ", "))
	}
	if len(rep.OffTarget) > 0 {
		fmt.Fprintf(&b, "target_task_filter: %d mined tasks left out (they do not exercise the skill)\n", len(rep.OffTarget))
	}
	if out.GateOff {
		fmt.Fprintln(&b, gateOffWarning)
	}
	if len(rep.Skills) > 0 || out.Action == ActionMultiSkill {
		for _, sn := range rep.Skills {
			o := sn.Outcome
			fmt.Fprintf(&b, "skill %s: %d tasks, val %.3f", sn.Name, sn.Tasks, o.Baseline.Value)
			if o.Final != nil {
				fmt.Fprintf(&b, " → %.3f fresh", o.Final.Value)
			}
			fmt.Fprintf(&b, ", %s (%s)\n", o.Action, o.Reason)
			switch {
			case sn.Package && len(o.FilesChanged) > 0:
				fmt.Fprintf(&b, "  package: files changed: %s\n", strings.Join(o.FilesChanged, ", "))
			case sn.PackageRefused != "":
				fmt.Fprintf(&b, "  trained as SKILL.md alone: %s\n", sn.PackageRefused)
			}
			if sn.Staging != "" {
				fmt.Fprintf(&b, "  staged: %s\n", sn.Staging)
			}
		}
		if len(rep.Unresolved) > 0 {
			fmt.Fprintf(&b, "%d tasks exercise no skill of the root (left out)\n", len(rep.Unresolved))
		}
		fmt.Fprintf(&b, "action: %s (%s)\nspent: %d tokens%s, %d calls\n", out.Action, out.Reason, out.Spend.Tokens, rep.estimatedMark(), out.Spend.Calls)
		if out.Accepted {
			fmt.Fprintf(&b, "adopt with: %s (or --skill NAME)\n", rep.AdoptCmd)
		}
		return b.String()
	}
	fmt.Fprintf(&b, "val score: baseline %.3f", out.Baseline.Value)
	if out.Final != nil {
		fmt.Fprintf(&b, " → %.3f on fresh replays", out.Final.Value)
	}
	fmt.Fprintln(&b)
	for _, tr := range out.Trials {
		mark := "rejected"
		if tr.Accepted {
			mark = "accepted"
		}
		fmt.Fprintf(&b, "  %-8s %s %s %q: %s\n", mark, editDoc(tr.Document, tr.Edit), tr.Edit.Op, clipRunes(cmp.Or(tr.Edit.Content, tr.Edit.Anchor), 80), tr.Why)
	}
	if len(out.Refused) > 0 {
		fmt.Fprintf(&b, "refused: %d edits (%s)\n", len(out.Refused), reasonCounts(out.RefusedByReason))
	}
	fmt.Fprintf(&b, "action: %s (%s)\n", out.Action, out.Reason)
	if out.Package {
		fmt.Fprintf(&b, "package: %s", rep.SkillDir)
		if len(out.FilesChanged) > 0 {
			fmt.Fprintf(&b, " (files changed: %s)", strings.Join(out.FilesChanged, ", "))
		}
		fmt.Fprintln(&b)
	}
	fmt.Fprintf(&b, "spent: %d tokens%s, %d calls", out.Spend.Tokens, rep.estimatedMark(), out.Spend.Calls)
	if out.Spend.USD > 0 {
		fmt.Fprintf(&b, ", $%.4f", out.Spend.USD)
	}
	fmt.Fprintln(&b)
	if rep.Staging != "" {
		fmt.Fprintf(&b, "staged: %s\n", rep.Staging)
		if out.Accepted {
			fmt.Fprintf(&b, "adopt with: %s\n", rep.AdoptCmd)
		}
	}
	return b.String()
}

// Markdown is report.md.
func (rep *Report) Markdown() string {
	out := rep.Outcome
	var b strings.Builder
	fmt.Fprintf(&b, "# skillfleet sleep — night %d\n\n", rep.Night)
	fmt.Fprintf(&b, "- project: `%s`\n- started: %s\n- backend: %s, model %s\n- sessions: %d; tasks: %d (train %d, val %d, test %d)\n",
		rep.Project, rep.Started.Format(time.RFC3339), rep.Backend, rep.Model, rep.Sessions, rep.Tasks, rep.Splits["train"], rep.Splits["val"], rep.Splits["test"])
	fmt.Fprintf(&b, "- skipped: %d malformed lines, %d huge lines, %d headless and %d sub-agent sessions\n",
		rep.Skipped.MalformedLines, rep.Skipped.HugeLines, rep.Skipped.Headless, rep.Skipped.SubAgent)
	if line := rep.dreamLine(); line != "" {
		fmt.Fprintf(&b, "- %s\n", line)
	}
	if out.GateOff {
		fmt.Fprintf(&b, "\n> **%s**\n", gateOffWarning)
	}
	if len(rep.Projects) > 1 {
		fmt.Fprintf(&b, "- projects (scope all): %s\n", strings.Join(rep.Projects, ", "))
	}
	if len(rep.OffTarget) > 0 {
		fmt.Fprintf(&b, "\n## Tasks left out by target_task_filter\n\nThey do not exercise the skill (no shared word with its name or headings, fewer than two with its description, or a session that loaded another skill).\n\n")
		for _, t := range rep.OffTarget {
			fmt.Fprintf(&b, "- %s: %s\n", t.ID, mdCell(t.Intent))
		}
	}
	if len(rep.Recalled) > 0 {
		b.WriteString("\n## Recalled tasks\n\nArchived tasks of earlier nights most like tonight's train tasks (Jaccard similarity of the intents' words), replayed as train tasks.\n\n| task | archived | most like | similarity | intent |\n|---|---|---|---|---|\n")
		for _, r := range rep.Recalled {
			fmt.Fprintf(&b, "| %s | %s | %s | %.3f | %s |\n", r.ID, r.Archived, r.Like, r.Similarity, mdCell(r.Intent))
		}
	}
	fmt.Fprintf(&b, "\n## Decision: %s\n\n%s\n\n", out.Action, out.Reason)
	fmt.Fprintf(&b, "| | score | hard | soft | tasks |\n|---|---|---|---|---|\n| baseline | %.3f | %.3f | %.3f | %d |\n", out.Baseline.Value, out.Baseline.Hard, out.Baseline.Soft, out.Baseline.N)
	if out.Final != nil {
		fmt.Fprintf(&b, "| final (fresh replays) | %.3f | %.3f | %.3f | %d |\n", out.Final.Value, out.Final.Hard, out.Final.Soft, out.Final.N)
	}
	if len(out.Trials) > 0 {
		b.WriteString("\n## Edits tried\n\n| document | op | text | before | after | kept | why |\n|---|---|---|---|---|---|---|\n")
		for _, tr := range out.Trials {
			fmt.Fprintf(&b, "| %s | %s | %s | %.3f | %.3f | %t | %s |\n", editDoc(tr.Document, tr.Edit), tr.Edit.Op, mdCell(cmp.Or(tr.Edit.Content, tr.Edit.Anchor)), tr.Before, tr.After, tr.Accepted, tr.Why)
		}
	}
	if out.Package {
		fmt.Fprintf(&b, "\n## Skill package\n\n`%s`; files the proposal changes: %s\n", rep.SkillDir, cmp.Or(strings.Join(out.FilesChanged, ", "), "none"))
	}
	if len(out.Refused) > 0 {
		fmt.Fprintf(&b, "\n## Edits refused (%s)\n\n| document | file | op | reason | detail |\n|---|---|---|---|---|\n", reasonCounts(out.RefusedByReason))
		for _, r := range out.Refused {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.Document, mdCell(r.Edit.File), mdCell(r.Edit.Op), r.Reason, mdCell(r.Detail))
		}
	}
	if len(out.Unmatched) > 0 {
		b.WriteString("\n## Edits that matched nothing\n\n")
		for _, u := range out.Unmatched {
			fmt.Fprintf(&b, "- %s %q: %s\n", u.Edit.Op, cmp.Or(u.Edit.Content, u.Edit.Anchor), u.Reason)
		}
	}
	fmt.Fprintf(&b, "\n## Spend\n\n%d tokens%s in %d calls", out.Spend.Tokens, rep.estimatedMark(), out.Spend.Calls)
	if out.Spend.USD > 0 {
		fmt.Fprintf(&b, ", $%.4f", out.Spend.USD)
	}
	b.WriteString("\n")
	if rep.UsageEstimated != "" {
		fmt.Fprintf(&b, "\nTokens estimated: %s\n", rep.UsageEstimated)
	}
	if out.Accepted {
		fmt.Fprintf(&b, "\nAdopt: `%s`\n", rep.AdoptCmd)
	}
	return b.String()
}

// gateOffWarning heads the report of a night run with gate_mode off.
const gateOffWarning = "WARNING: gate_mode off: every proposed edit was kept without the val gate; this proposal is not verified: read it before you adopt it"

// dreamLine says what dream and recall added to the night: its tasks by
// origin and the tokens each part cost; "" when neither was on.
func (rep *Report) dreamLine() string {
	var parts []string
	if n := rep.Origins[nightly.OriginRecall]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d recalled tasks", n))
	}
	if n := rep.Origins[nightly.OriginDream]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d dream tasks", n))
	}
	var extra []string
	if out := rep.Outcome; out != nil {
		for _, k := range []string{"rollouts", nightly.OriginDream, nightly.OriginRecall} {
			if sp, ok := out.Extra[k]; ok {
				extra = append(extra, fmt.Sprintf("%s %d tokens", k, sp.Tokens))
			}
		}
	}
	if len(parts) == 0 && len(extra) == 0 {
		return ""
	}
	line := "dream and recall: " + cmp.Or(strings.Join(parts, ", "), "no added tasks")
	if len(extra) > 0 {
		line += "; spent on them: " + strings.Join(extra, ", ")
	}
	return line
}

// editDoc names the document an edit touches: "skill", or "skill FILE"
// for a package file.
func editDoc(doc string, e nightly.Edit) string {
	if nightly.IsFileEdit(e) {
		return doc + " " + e.File
	}
	return doc
}

// mdCell is text for one cell of a Markdown table.
func mdCell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", "\\|"), "\n", " ")
}

// reasonCounts renders refusal counts as "reason n, ...", by reason.
func reasonCounts(m map[string]int) string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// Improved reports whether the night was accepted with a higher fresh val
// score than its baseline and, for a persona's night, without the
// persona's harmful rule (`--assert-improves`).
func (rep *Report) Improved(persona string) bool {
	out := rep.Outcome
	ok := out != nil && out.Accepted && out.Final != nil && out.Final.Value > out.Baseline.Value
	if ok && persona != "" && strings.Contains(out.ProposedSkill+out.ProposedMemory, nightly.PersonaHarmful(persona)) {
		return false
	}
	return ok
}

// estimatedMark marks a token count that was estimated.
func (rep *Report) estimatedMark() string {
	if rep.UsageEstimated != "" {
		return " (estimated)"
	}
	return ""
}
