package sleep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/nightly"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// Transfer is `sleep transfer`'s result: a staged night's skill measured
// on another model, its held-out tasks replayed under the skill the night
// started from and under the proposed one.
type Transfer struct {
	Staging string `json:"staging"`
	Model   string `json:"model"`
	Backend string `json:"backend"`
	// Tasks are the night's val and test tasks replayed (fresh samples).
	Tasks  int   `json:"tasks"`
	Before Score `json:"before"`
	After  Score `json:"after"`
	// NightBefore and NightAfter are the night's own val scores (its
	// baseline and fresh final), on its own model.
	NightBefore float64 `json:"night_baseline"`
	NightAfter  float64 `json:"night_final"`
	Spend       Spend   `json:"spend"`
}

// TransferCommand measures the skill a night proposed on the target model
// of the flags (--backend, --model; the night's own may differ): the
// night's val and test tasks, from the state's archive, are replayed as
// fresh samples under the skill the night started from and under its
// proposal, with the live memory file in both, and scored with the
// night's gate metric. staging "" is the latest night. A package
// proposal is measured as a night replays a package: its bundle.
func TransferCommand(ctx context.Context, n Night, staging string, newModel func(*pb.ModelSpec) (llm.Model, error), asJSON bool, stdout io.Writer) error {
	if n.Config.Backend == backends.BackendHandoff {
		return UsageError{errors.New("sleep transfer: --backend handoff answers a night's calls round by round (sleep run, sleep dry-run); measure a transfer on a model backend")}
	}
	if staging == "" {
		var err error
		if staging, err = nightly.Latest(n.StagingRoot); err != nil {
			return err
		}
	}
	m, err := nightly.ReadManifest(staging)
	if err != nil {
		return err
	}
	var entry *nightly.ManifestEntry
	for i, e := range m.Proposals {
		if e.Name == "skill" {
			entry = &m.Proposals[i]
		}
	}
	if !m.Accepted || entry == nil {
		return fmt.Errorf("%s: no skill proposal to transfer (action %s)", staging, m.Action)
	}
	var before, after []byte
	if entry.Kind == nightly.KindPackage {
		before, after, err = packageSides(staging, *entry)
	} else {
		if after, err = os.ReadFile(filepath.Join(staging, entry.ProposedFile)); err == nil {
			before, err = startingSkill(staging, *entry)
		}
	}
	if err != nil {
		return err
	}
	var rep Report
	b, err := os.ReadFile(filepath.Join(staging, "report.json"))
	if err == nil {
		err = json.Unmarshal(b, &rep)
	}
	if err != nil {
		return fmt.Errorf("%s/report.json: %w", staging, err)
	}
	st, err := nightly.LoadState(n.StatePath)
	if err != nil {
		return err
	}
	var ids []string
	for _, t := range rep.TaskList {
		if t.Split == nightly.SplitVal || t.Split == nightly.SplitTest {
			ids = append(ids, t.ID)
		}
	}
	var tasks []nightly.Task
	for _, t := range st.TaskArchive {
		if slices.Contains(ids, t.ID) {
			tasks = append(tasks, t)
		}
	}
	if len(tasks) == 0 {
		return fmt.Errorf("%s: none of the night's %d val and test tasks is in the state's archive (%s)", staging, len(ids), n.StatePath)
	}
	memory, _, err := readDoc(n.MemoryPath)
	if err != nil {
		return err
	}
	target, _, err := Specs(n)
	if err != nil {
		return err
	}
	model, err := newModel(target)
	if err != nil {
		return UsageError{fmt.Errorf("backend %s: %w", target.GetBackend(), err)}
	}
	s := SettingsFromConfig(n.Config)
	metric, weight, err := s.gateMetric()
	if err != nil {
		return err
	}
	rp := &LocalReplayer{Model: model, Name: target.GetModel(), Env: nightly.NewEnv(nightly.EnvConfig{JudgeModel: target.GetModel()})}
	tr := &Transfer{Staging: staging, Model: target.GetModel(), Backend: target.GetBackend(), Tasks: len(tasks), NightBefore: rep.Outcome.Baseline.Value}
	if rep.Outcome.Final != nil {
		tr.NightAfter = rep.Outcome.Final.Value
	}
	for _, side := range []struct {
		doc   string
		score *Score
	}{{string(before), &tr.Before}, {string(after), &tr.After}} {
		rs, err := rp.Replay(ctx, ReplayRequest{Stage: "transfer", Doc: nightly.ComposeDocs(side.doc, memory), Tasks: tasks, Sample: FreshSample})
		if err != nil {
			return err
		}
		*side.score, _ = Measure(rs, metric, weight)
		for _, r := range rs {
			tr.Spend.Tokens += r.Usage.InputTokens + r.Usage.OutputTokens
			tr.Spend.Calls += r.Calls
		}
	}
	if asJSON {
		b, _ := json.MarshalIndent(tr, "", "  ")
		fmt.Fprintln(stdout, string(b))
		return nil
	}
	fmt.Fprintf(stdout, "skillfleet sleep transfer: %s\n", staging)
	fmt.Fprintf(stdout, "on its own model the night went %.3f → %.3f (val, fresh replays)\n", tr.NightBefore, tr.NightAfter)
	fmt.Fprintf(stdout, "on %s/%s, %d val and test tasks: %.3f → %.3f (%+.3f)\n", tr.Backend, tr.Model, tr.Tasks, tr.Before.Value, tr.After.Value, tr.After.Value-tr.Before.Value)
	if tr.Before.Infra+tr.After.Infra > 0 {
		fmt.Fprintf(stdout, "infrastructure failures (left out of the scores): %d before, %d after\n", tr.Before.Infra, tr.After.Infra)
	}
	fmt.Fprintf(stdout, "spent: %d tokens, %d calls\n", tr.Spend.Tokens, tr.Spend.Calls)
	return nil
}

// startingSkill is the skill text a night's proposal was made against:
// the live file while it still has its pin, else the adoption's backup,
// else the scaffold when the night found no file.
func startingSkill(staging string, e nightly.ManifestEntry) ([]byte, error) {
	if !e.LiveExisted {
		return []byte(nightly.ScaffoldSkill()), nil
	}
	if b, err := os.ReadFile(e.LivePath); err == nil && nightly.SHA256Hex(b) == e.LiveSHA256 {
		return b, nil
	}
	if b, err := os.ReadFile(filepath.Join(staging, "backup", e.Name+".orig")); err == nil && nightly.SHA256Hex(b) == e.LiveSHA256 {
		return b, nil
	}
	return nil, fmt.Errorf("%s changed since the night and no backup holds the text the night started from", e.LivePath)
}

// packageSides are a package proposal's two skills as a night's replays
// carry them (bundles with a learned block): the package the night
// started from (the live directory while its files still have their
// pins, else the adoption's backup, else the scaffold when there was
// none) and the proposed one.
func packageSides(staging string, e nightly.ManifestEntry) ([]byte, []byte, error) {
	after, err := nightly.ReadPackage(filepath.Join(staging, e.ProposedFile), skillpkg.Limits{})
	if err != nil {
		return nil, nil, err
	}
	if !e.LiveExisted {
		before, err := nightly.EnsureSkillBlock(nightly.ScaffoldPackage(e.LivePath))
		if err != nil {
			return nil, nil, err
		}
		return []byte(before), []byte(after.Text), nil
	}
	for _, dir := range []string{e.LivePath, filepath.Join(staging, "backup", e.Name)} {
		if pins, _, err := nightly.TreePins(dir); err != nil || !maps.Equal(pins, e.LiveFiles) {
			continue
		}
		before, err := nightly.ReadPackage(dir, skillpkg.Limits{})
		if err != nil {
			return nil, nil, err
		}
		return []byte(before.Text), []byte(after.Text), nil
	}
	return nil, nil, fmt.Errorf("%s changed since the night and no backup holds the package the night started from", e.LivePath)
}
