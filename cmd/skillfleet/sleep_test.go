package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	simmodel "github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/nightly"
	"github.com/skillfleet/skillfleet/pkg/queue/queuetest"
)

// The planted secrets of the researcher persona's transcripts.
var plantedSecrets = []string{"sk-proj-PlantedKey0123456789abcdefXYZ", "PlantedKey0123", "Tr0ub4dor&3x", "Tr0ub4dor"}

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

func personaArgs(state string, extra ...string) []string {
	return append([]string{"sleep", "run", "--persona", "researcher", "--backend", "sim", "--state-dir", state}, extra...)
}

func stagingRoot(state string) string {
	return filepath.Join(state, "persona-researcher", "project", ".skillfleet-sleep", "staging")
}

func TestSleepPersonaProofRunImprovesAndReplays(t *testing.T) {
	state := t.TempDir()
	code, out, errOut := runCLI(t, personaArgs(state, "--assert-improves")...)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "action: accept") || !strings.Contains(out, "rejected skill add \"Write every answer in lower case.\"") {
		t.Fatalf("stdout:\n%s", out)
	}
	dir1, err := nightly.Latest(stagingRoot(state))
	if err != nil {
		t.Fatal(err)
	}
	m, err := nightly.ReadManifest(dir1)
	if err != nil || !m.Accepted || len(m.Proposals) != 1 || m.Proposals[0].Name != "skill" {
		t.Fatalf("manifest %+v, %v", m, err)
	}
	prop1, _ := os.ReadFile(filepath.Join(dir1, "proposed_SKILL.md"))
	if strings.Contains(string(prop1), nightly.HabitHarmful) || !strings.Contains(string(prop1), nightly.HabitArxivID) {
		t.Fatalf("proposal:\n%s", prop1)
	}
	var rep struct {
		Outcome struct {
			Baseline struct{ Score float64 } `json:"baseline"`
			Final    struct{ Score float64 } `json:"final_fresh"`
		} `json:"outcome"`
	}
	b, _ := os.ReadFile(filepath.Join(dir1, "report.json"))
	if err := json.Unmarshal(b, &rep); err != nil || !(rep.Outcome.Final.Score > rep.Outcome.Baseline.Score) {
		t.Fatalf("report scores %+v, %v", rep.Outcome, err)
	}
	t.Logf("val score %.3f → %.3f (fresh replays)", rep.Outcome.Baseline.Score, rep.Outcome.Final.Score)
	// Every final replay was a fresh sample, not a cache hit.
	ev, _ := os.ReadFile(filepath.Join(dir1, "evidence.jsonl"))
	finals := 0
	for _, line := range strings.Split(strings.TrimSpace(string(ev)), "\n") {
		var r struct {
			Stage string `json:"stage"`
			Fresh bool   `json:"fresh"`
		}
		_ = json.Unmarshal([]byte(line), &r)
		if r.Stage == "final_fresh" {
			finals++
			if !r.Fresh {
				t.Fatalf("a final replay was not fresh: %s", line)
			}
		}
	}
	if finals == 0 {
		t.Fatal("no final replays in the evidence")
	}
	// The same night again from its state (none before night 1): the same
	// proposal.
	if err := os.Remove(filepath.Join(state, "state.json")); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCLI(t, personaArgs(state)...); code != exitOK {
		t.Fatalf("re-run exit %d\n%s\n%s", code, out, errOut)
	}
	dir2, _ := nightly.Latest(stagingRoot(state))
	if dir2 == dir1 {
		t.Fatal("the re-run staged nothing new")
	}
	prop2, _ := os.ReadFile(filepath.Join(dir2, "proposed_SKILL.md"))
	if !bytes.Equal(prop1, prop2) {
		t.Fatalf("re-run proposal differs:\n%s\n---\n%s", prop1, prop2)
	}
	// Adopt it, then a second night finds nothing new (cursor) and exits 0.
	if code, out, errOut := runCLI(t, "sleep", "adopt", "--persona", "researcher", "--state-dir", state); code != exitOK {
		t.Fatalf("adopt exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = runCLI(t, personaArgs(state)...)
	if code != exitOK || !strings.Contains(out, "action: no_tasks") {
		t.Fatalf("night 2 exit %d:\n%s", code, out)
	}
	code, out, _ = runCLI(t, "sleep", "status", "--persona", "researcher", "--state-dir", state)
	if code != exitOK || !strings.Contains(out, "night 2") || !strings.Contains(out, "adopted ") {
		t.Fatalf("status exit %d:\n%s", code, out)
	}
}

// recordingServer is an OpenAI-compatible endpoint over the sleep-aware
// sim that keeps every request body.
type recordingServer struct {
	mu     sync.Mutex
	bodies []string
	m      llm.Model
}

func (s *recordingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		Seed *int64 `json:"seed"`
	}
	var raw bytes.Buffer
	if err := json.NewDecoder(ioTee(r, &raw)).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.bodies = append(s.bodies, raw.String())
	s.mu.Unlock()
	lr := &llm.Request{Model: req.Model, Seed: req.Seed}
	for _, m := range req.Messages {
		lr.Messages = append(lr.Messages, llm.Message{Role: m.Role, Content: m.Content})
	}
	resp, err := s.m.Chat(r.Context(), lr)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "x", "object": "chat.completion", "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": resp.Content}}},
		"usage":   map[string]any{"prompt_tokens": resp.Usage.InputTokens, "completion_tokens": resp.Usage.OutputTokens, "total_tokens": resp.Usage.InputTokens + resp.Usage.OutputTokens},
	})
}

type teeReader struct {
	r   *http.Request
	buf *bytes.Buffer
}

func ioTee(r *http.Request, buf *bytes.Buffer) *teeReader { return &teeReader{r, buf} }
func (t *teeReader) Read(p []byte) (int, error) {
	n, err := t.r.Body.Read(p)
	t.buf.Write(p[:n])
	return n, err
}

func TestSleepSecretsNeverLeaveTheHarvester(t *testing.T) {
	rs := &recordingServer{m: simmodel.NewSleepAware(simmodel.New(simmodel.Options{}))}
	srv := httptest.NewServer(rs)
	defer srv.Close()
	t.Setenv("SLEEP_TEST_KEY", "not-a-real-key")
	state := t.TempDir()
	code, out, errOut := runCLI(t, "sleep", "run", "--persona", "researcher", "--state-dir", state, "--backend", "openai_compatible",
		"--base-url", srv.URL+"/v1", "--model", "sim", "--api-key-env", "SLEEP_TEST_KEY", "--log-level", "debug", "--assert-improves")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	rs.mu.Lock()
	prompts := strings.Join(rs.bodies, "\n")
	n := len(rs.bodies)
	rs.mu.Unlock()
	if n < 20 || !strings.Contains(prompts, "[REDACTED:api_key]") {
		t.Fatalf("%d requests; the persona's redacted session never reached the miner", n)
	}
	check := func(where, text string) {
		t.Helper()
		for _, s := range plantedSecrets {
			if strings.Contains(text, s) {
				t.Errorf("%s holds the planted secret %q", where, s)
			}
		}
	}
	check("a prompt", prompts)
	check("stdout", out)
	check("the logs", errOut)
	box := filepath.Join(state, "persona-researcher")
	err := filepath.WalkDir(state, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(p, filepath.Join(box, "claude")) {
			return err // the transcripts themselves hold the secrets
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		check(p, string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(state, "state.json")); err != nil {
		t.Fatal("no state file was written")
	}
	t.Logf("%d model requests checked, staging dir, state file, stdout and debug logs clean", n)
}

func TestSleepTokenBudgetStopsCleanly(t *testing.T) {
	state := t.TempDir()
	code, out, errOut := runCLI(t, personaArgs(state, "--max-tokens", "8000")...)
	if code != exitBudget {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, exitBudget, out, errOut)
	}
	if !strings.Contains(errOut, "max_tokens_per_night") || !strings.Contains(errOut, "nothing was accepted") || !strings.Contains(out, "action: stopped_budget") {
		t.Fatalf("the night does not say why it stopped:\nstdout:\n%s\nstderr:\n%s", out, errOut)
	}
	dir, err := nightly.Latest(stagingRoot(state))
	if err != nil {
		t.Fatal(err)
	}
	m, err := nightly.ReadManifest(dir)
	if err != nil || m.Accepted || m.Action != "stopped_budget" || len(m.Proposals) != 0 {
		t.Fatalf("manifest %+v, %v", m, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "proposed_SKILL.md")); err == nil {
		t.Fatal("a proposal was staged")
	}
	var rep struct {
		Outcome struct {
			Spend struct{ Tokens int64 } `json:"spend"`
		} `json:"outcome"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, "report.json"))
	_ = json.Unmarshal(b, &rep)
	if rep.Outcome.Spend.Tokens == 0 || rep.Outcome.Spend.Tokens > 8000 {
		t.Fatalf("spent %d tokens with a budget of 8000", rep.Outcome.Spend.Tokens)
	}
	if code, _, errOut := runCLI(t, "sleep", "adopt", "--persona", "researcher", "--state-dir", state); code == exitOK || !strings.Contains(errOut, "not accepted") {
		t.Fatalf("adopt of a stopped night: exit %d, %s", code, errOut)
	}
	st, _ := nightly.LoadState(filepath.Join(state, "state.json"))
	if len(st.LastHarvest) != 0 || st.Night != 1 || st.History[0].Action != "stopped_budget" {
		t.Fatalf("state after a stopped night %+v: the cursor must not advance", st)
	}
	t.Logf("stopped after %d tokens: %s", rep.Outcome.Spend.Tokens, strings.TrimSpace(errOut))
}

func TestSleepRefusesUnknownBackendAndBadInput(t *testing.T) {
	state := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sleep", "run", "--backend", "mock", "--state-dir", state}, `"mock" is not a known backend`},
		{[]string{"sleep", "run", "--state-dir", state}, "--backend is required"},
		{[]string{"sleep", "run", "--backend", "sim", "--source", "vscode", "--state-dir", state}, `"vscode"`},
		{[]string{"sleep", "frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"sleep", "harvest", "--state-dir", state}, "--output is required"},
	} {
		code, _, errOut := runCLI(t, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d naming %s", tc.args, code, errOut, exitUsage, tc.want)
		}
	}
	cfg := filepath.Join(state, "bad.yaml")
	if err := os.WriteFile(cfg, []byte("backend: sim\nmax_tokens_per_nite: 5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI(t, "sleep", "run", "--config", cfg, "--state-dir", state); code != exitUsage || !strings.Contains(errOut, cfg) || !strings.Contains(errOut, "max_tokens_per_nite") {
		t.Errorf("bad config: exit %d, %q", code, errOut)
	}
	// The backend is checked against the backends' table, naming the file.
	if err := os.WriteFile(cfg, []byte("backend: mock\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI(t, "sleep", "run", "--config", cfg, "--state-dir", state); code != exitUsage || !strings.Contains(errOut, cfg) || !strings.Contains(errOut, `"mock" is not a known backend`) {
		t.Errorf("config naming an unknown backend: exit %d, %q", code, errOut)
	}
}

func TestSleepScheduleUsesTheGivenCrontab(t *testing.T) {
	dir := t.TempDir()
	table := filepath.Join(dir, "table")
	prog := filepath.Join(dir, "crontab")
	script := "#!/bin/sh\nT=" + table + "\nif [ \"$1\" = -l ]; then [ -f \"$T\" ] || { echo 'no crontab for tester' >&2; exit 1; }; cat \"$T\"; exit 0; fi\nif [ \"$1\" = - ]; then cat > \"$T\"; exit 0; fi\nexit 2\n"
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(dir, "proj")
	code, out, errOut := runCLI(t, "sleep", "schedule", "--crontab", prog, "--at", "02:30", "--backend", "sim", "--project", proj, "--state-dir", dir)
	if code != exitOK {
		t.Fatalf("schedule exit %d: %s %s", code, out, errOut)
	}
	b, _ := os.ReadFile(table)
	if !strings.HasPrefix(string(b), "30 2 * * * ") || !strings.Contains(string(b), "sleep run --project "+proj) || !strings.Contains(string(b), "# skillfleet-sleep:skillfleet-sleep") {
		t.Fatalf("crontab:\n%s", b)
	}
	if code, _, _ := runCLI(t, "sleep", "unschedule", "--crontab", prog, "--state-dir", dir); code != exitOK {
		t.Fatal("unschedule failed")
	}
	if b, _ := os.ReadFile(table); strings.TrimSpace(string(b)) != "" {
		t.Fatalf("crontab after unschedule: %q", b)
	}
}

func TestSleepDryRunWritesNothing(t *testing.T) {
	state := t.TempDir()
	code, out, errOut := runCLI(t, "sleep", "dry-run", "--persona", "researcher", "--backend", "sim", "--state-dir", state)
	if code != exitOK || !strings.Contains(out, "dry run of night 1") || !strings.Contains(out, "action: accept") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(state, "state.json")); err == nil {
		t.Error("dry-run wrote the state file")
	}
	if _, err := os.Stat(stagingRoot(state)); err == nil {
		t.Error("dry-run staged a night")
	}
	if ents, _ := os.ReadDir(filepath.Join(state, "runs")); len(ents) != 0 {
		t.Errorf("dry-run left run dirs %v", ents)
	}
}

func TestSleepNightOnAnExternalNATS(t *testing.T) {
	ns := queuetest.Start(t)
	state := t.TempDir()
	code, out, errOut := runCLI(t, personaArgs(state, "--nats", ns.URL(), "--workers", "1", "--assert-improves")...)
	if code != exitOK || !strings.Contains(out, "action: accept") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}

func TestSleepTokenBudgetStopsWhileMining(t *testing.T) {
	state := t.TempDir()
	code, out, errOut := runCLI(t, personaArgs(state, "--max-tokens", "1500")...)
	if code != exitBudget || !strings.Contains(errOut, "tokens spent mining") || !strings.Contains(out, "action: stopped_budget") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	dir, err := nightly.Latest(stagingRoot(state))
	if err != nil {
		t.Fatal(err)
	}
	if m, err := nightly.ReadManifest(dir); err != nil || m.Accepted || len(m.Proposals) != 0 {
		t.Fatalf("manifest %+v, %v", m, err)
	}
}

func TestSleepReviewedTasksFile(t *testing.T) {
	state := t.TempDir()
	file := filepath.Join(state, "tasks.json")
	code, out, errOut := runCLI(t, "sleep", "harvest", "--persona", "researcher", "--backend", "sim", "--state-dir", state, "--output", file)
	if code != exitOK || !strings.Contains(out, "wrote 12 tasks") {
		t.Fatalf("harvest exit %d\n%s\n%s", code, out, errOut)
	}
	tf, err := nightly.LoadTasksFile(file)
	if err != nil || tf.Reviewed || len(tf.Tasks) != 12 {
		t.Fatalf("tasks file reviewed=%v, %d tasks, %v", tf != nil && tf.Reviewed, len(tf.Tasks), err)
	}
	b, _ := os.ReadFile(file)
	for _, s := range plantedSecrets {
		if strings.Contains(string(b), s) {
			t.Fatalf("the tasks file holds %q", s)
		}
	}
	t.Setenv("SLEEP_TEST_KEY", "x")
	code, _, errOut = runCLI(t, "sleep", "run", "--persona", "researcher", "--state-dir", state, "--backend", "openai_compatible",
		"--base-url", "http://127.0.0.1:1/v1", "--model", "m", "--api-key-env", "SLEEP_TEST_KEY", "--tasks-file", file)
	if code != exitUsage || !strings.Contains(errOut, `"reviewed" is false`) {
		t.Fatalf("unreviewed tasks file on a real backend: exit %d, %s", code, errOut)
	}
	tf.Reviewed = true
	tf.Tasks = tf.Tasks[:10]
	if err := nightly.WriteTasksFile(file, *tf); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI(t, "sleep", "run", "--persona", "researcher", "--backend", "sim", "--state-dir", state, "--tasks-file", file, "--assert-improves")
	if code != exitOK || !strings.Contains(out, "tasks 10") {
		t.Fatalf("run --tasks-file exit %d\n%s\n%s", code, out, errOut)
	}
}

func TestSleepAutoAdoptIsOptIn(t *testing.T) {
	state := t.TempDir()
	skill := filepath.Join(state, "persona-researcher", "skills", nightly.ManagedSkillName, "SKILL.md")
	if code, out, errOut := runCLI(t, personaArgs(state)...); code != exitOK || strings.Contains(out, "adopted:") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat(skill); err == nil {
		t.Fatal("a night without --auto-adopt wrote the live skill")
	}
	if err := os.Remove(filepath.Join(state, "state.json")); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, personaArgs(state, "--auto-adopt")...)
	if code != exitOK || !strings.Contains(out, "adopted: 1 file(s)") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	b, err := os.ReadFile(skill)
	if err != nil || !strings.Contains(string(b), nightly.HabitWrap) {
		t.Fatalf("live skill after --auto-adopt: %v\n%s", err, b)
	}
	if rs, _ := nightly.Receipts(stagingRoot(state)); len(rs) != 1 {
		t.Fatalf("%d receipts, want 1", len(rs))
	}
}

func packageBox(state string) string { return filepath.Join(state, "persona-researcher-package") }

// treeOf reads every file below dir (path → text).
func treeOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTree(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestSleepPackagePersonaImprovesAdoptsAndUndoes: a night on a skill
// package (the researcher-package persona, whose SKILL.md points at
// references/) improves the fresh val score with an accepted edit that
// creates references/arxiv.md, stages the whole proposed directory with
// every live file pinned, and adopt swaps the package in while undo puts
// the old one back; a user's edit to the package after staging makes
// adopt refuse.
func TestSleepPackagePersonaImprovesAdoptsAndUndoes(t *testing.T) {
	state := t.TempDir()
	args := []string{"sleep", "run", "--persona", "researcher-package", "--backend", "sim", "--state-dir", state}
	code, out, errOut := runCLI(t, append(args, "--assert-improves")...)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{"action: accept", `accepted skill references/arxiv.md create_file`, `rejected skill add "Write every answer in lower case."`,
		"files changed: SKILL.md, references/arxiv.md"} {
		if !strings.Contains(out, want) {
			t.Fatalf("stdout lacks %q:\n%s", want, out)
		}
	}
	live := filepath.Join(packageBox(state), "skills", "papers")
	seed := treeOf(t, live)
	if len(seed) != 2 || !strings.Contains(seed["SKILL.md"], "lives in references/") {
		t.Fatalf("the persona's seed package: %v", seed)
	}
	root := filepath.Join(packageBox(state), "project", ".skillfleet-sleep", "staging")
	dir, err := nightly.Latest(root)
	if err != nil {
		t.Fatal(err)
	}
	m, err := nightly.ReadManifest(dir)
	if err != nil || !m.Accepted || m.Schema != nightly.ManifestSchemaPackage || len(m.Proposals) != 1 {
		t.Fatalf("manifest %+v, %v", m, err)
	}
	e := m.Proposals[0]
	if e.Kind != nightly.KindPackage || e.LivePath != live || len(e.LiveFiles) != 2 || strings.Join(e.MustNotExist, ",") != "references/arxiv.md" {
		t.Fatalf("package entry %+v", e)
	}
	for name, text := range seed {
		if e.LiveFiles[name] != nightly.SHA256Hex([]byte(text)) {
			t.Fatalf("live pin of %s does not match the file", name)
		}
	}
	proposed := treeOf(t, filepath.Join(dir, nightly.ProposedPackageDir))
	if !strings.Contains(proposed["references/arxiv.md"], nightly.HabitArxivID) || proposed["references/doi.md"] != seed["references/doi.md"] ||
		strings.Contains(proposed["SKILL.md"], nightly.HabitHarmful) || nightly.OutsideBlock(proposed["SKILL.md"]) != nightly.OutsideBlock(seed["SKILL.md"]) {
		t.Fatalf("proposed package: %v", proposed)
	}
	var rep struct {
		SkillDir string `json:"skill_dir"`
		Outcome  struct {
			Baseline     struct{ Score float64 } `json:"baseline"`
			Final        struct{ Score float64 } `json:"final_fresh"`
			FilesChanged []string                `json:"files_changed"`
			Trials       []struct {
				Edit     nightly.Edit `json:"edit"`
				Accepted bool         `json:"accepted"`
			} `json:"trials"`
		} `json:"outcome"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, "report.json"))
	if err := json.Unmarshal(b, &rep); err != nil || !(rep.Outcome.Final.Score > rep.Outcome.Baseline.Score) || rep.SkillDir != live {
		t.Fatalf("report %+v, %v", rep, err)
	}
	refKept := false
	for _, tr := range rep.Outcome.Trials {
		refKept = refKept || (tr.Accepted && tr.Edit.File == "references/arxiv.md")
	}
	if !refKept {
		t.Fatalf("no accepted edit in a reference file: %+v", rep.Outcome.Trials)
	}
	t.Logf("val score %.3f → %.3f (fresh replays), files changed %v", rep.Outcome.Baseline.Score, rep.Outcome.Final.Score, rep.Outcome.FilesChanged)
	if !sameTree(treeOf(t, live), seed) {
		t.Fatal("the night changed the live package before adopt")
	}
	// The user edits the package after staging: adopt refuses, naming
	// the file, and leaves it alone.
	doi := filepath.Join(live, "references", "doi.md")
	if err := os.WriteFile(doi, []byte("my own notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	adopt := []string{"sleep", "adopt", "--persona", "researcher-package", "--state-dir", state}
	if code, _, errOut := runCLI(t, adopt...); code == exitOK || !strings.Contains(errOut, "references/doi.md changed") {
		t.Fatalf("adopt over a changed package: exit %d, %s", code, errOut)
	}
	if got, _ := os.ReadFile(doi); string(got) != "my own notes\n" {
		t.Fatal("a refused adopt touched the package")
	}
	if err := os.WriteFile(doi, []byte(seed["references/doi.md"]), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI(t, adopt...)
	if code != exitOK || !strings.Contains(out, "(skill package, 3 files)") {
		t.Fatalf("adopt exit %d\n%s\n%s", code, out, errOut)
	}
	if !sameTree(treeOf(t, live), proposed) {
		t.Fatalf("live package after adopt: %v", treeOf(t, live))
	}
	if ents, _ := os.ReadDir(filepath.Dir(live)); len(ents) != 1 {
		t.Fatalf("adopt left siblings beside the package: %v", ents)
	}
	code, out, errOut = runCLI(t, append(adopt, "--undo")...)
	if code != exitOK || !strings.Contains(out, "restored "+live) {
		t.Fatalf("undo exit %d\n%s\n%s", code, out, errOut)
	}
	if !sameTree(treeOf(t, live), seed) {
		t.Fatalf("live package after undo: %v", treeOf(t, live))
	}
}

func TestSleepSkillDirAndSkillPath(t *testing.T) {
	state := t.TempDir()
	cfg := filepath.Join(state, "both.yaml")
	if err := os.WriteFile(cfg, []byte("backend: sim\nskill_path: /a/SKILL.md\nskill_dir: /b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"sleep", "run", "--backend", "sim", "--state-dir", state, "--skill-path", "/a/SKILL.md", "--skill-dir", "/b"}, []string{"skill_path", "skill_dir", "set one"}},
		{[]string{"sleep", "run", "--config", cfg, "--state-dir", state}, []string{cfg, "skill_path", "skill_dir"}},
	} {
		code, _, errOut := runCLI(t, tc.args...)
		for _, w := range tc.want {
			if code != exitUsage || !strings.Contains(errOut, w) {
				t.Errorf("%v: exit %d, stderr %q; want %d naming %s", tc.args, code, errOut, exitUsage, w)
			}
		}
	}
	// A flag naming the skill overrides the config's other key, and
	// --skill-path naming a directory trains that package.
	box := filepath.Join(state, "pkg")
	if err := os.MkdirAll(filepath.Join(box, "references"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, files, _ := nightly.PersonaPackage(nightly.PersonaResearcherPackage)
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(box, filepath.FromSlash(name)), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dirCfg := filepath.Join(state, "dir.yaml")
	if err := os.WriteFile(dirCfg, []byte("backend: sim\nskill_dir: /nonexistent/papers\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "sleep", "dry-run", "--config", dirCfg, "--persona", "researcher", "--state-dir", state, "--skill-path", box)
	if code != exitOK || !strings.Contains(out, "package: "+box) || !strings.Contains(out, "accepted skill references/arxiv.md") {
		t.Fatalf("--skill-path DIR: exit %d\n%s\n%s", code, out, errOut)
	}
	// A --skill-path SKILL.md in a package directory is that one file,
	// as before, with a hint on stderr.
	code, out, errOut = runCLI(t, "sleep", "dry-run", "--backend", "sim", "--persona", "researcher", "--state-dir", state, "--skill-path", filepath.Join(box, "SKILL.md"))
	if code != exitOK || strings.Contains(out, "package:") || !strings.Contains(errOut, "--skill-dir") {
		t.Fatalf("--skill-path FILE: exit %d\n%s\n%s", code, out, errOut)
	}
}

func TestSleepScheduleKeepsTheSkillDir(t *testing.T) {
	dir := t.TempDir()
	table := filepath.Join(dir, "table")
	prog := filepath.Join(dir, "crontab")
	script := "#!/bin/sh\nT=" + table + "\nif [ \"$1\" = -l ]; then [ -f \"$T\" ] || { echo 'no crontab for tester' >&2; exit 1; }; cat \"$T\"; exit 0; fi\nif [ \"$1\" = - ]; then cat > \"$T\"; exit 0; fi\nexit 2\n"
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	pkg := filepath.Join(dir, "skills", "papers")
	code, out, errOut := runCLI(t, "sleep", "schedule", "--crontab", prog, "--backend", "sim", "--project", dir, "--state-dir", dir, "--skill-dir", pkg)
	if code != exitOK {
		t.Fatalf("schedule exit %d: %s %s", code, out, errOut)
	}
	if b, _ := os.ReadFile(table); !strings.Contains(string(b), "--skill-dir "+pkg) {
		t.Fatalf("crontab:\n%s", b)
	}
}

// TestSleepHelpListsEveryCommand: `sleep --help` names every command the
// dispatcher runs, install and uninstall included.
func TestSleepHelpListsEveryCommand(t *testing.T) {
	code, out, _ := runCLI(t, "sleep", "--help")
	if code != exitOK {
		t.Fatalf("sleep --help: exit %d", code)
	}
	for _, c := range []string{"run", "dry-run", "status", "harvest", "adopt", "transfer", "sweep", "schedule", "unschedule", "install", "uninstall"} {
		if !regexp.MustCompile(`(?m)^  ` + c + ` `).MatchString(out) {
			t.Errorf("sleep --help does not list %s:\n%s", c, out)
		}
	}
}

// TestSleepRecallBringsBackAnArchivedTaskOnALaterNight runs two nights
// from reviewed tasks files: the first archives its tasks, the second,
// with --recall-k and --dream-factor, brings archived ones back as train
// tasks (with their similarity in the report), adds dream tasks, and
// neither kind is ever replayed outside the train waves or archived.
func TestSleepRecallBringsBackAnArchivedTaskOnALaterNight(t *testing.T) {
	state := t.TempDir()
	file := filepath.Join(state, "tasks.json")
	if code, out, errOut := runCLI(t, "sleep", "harvest", "--persona", "researcher", "--backend", "sim", "--state-dir", state, "--output", file); code != exitOK {
		t.Fatalf("harvest exit %d\n%s\n%s", code, out, errOut)
	}
	tf, err := nightly.LoadTasksFile(file)
	if err != nil || len(tf.Tasks) != 12 {
		t.Fatalf("tasks file: %v", err)
	}
	all := tf.Tasks
	night := func(tasks []nightly.Task, extra ...string) (string, map[string]any) {
		t.Helper()
		if err := nightly.WriteTasksFile(file, nightly.TasksFile{Reviewed: true, Tasks: tasks}); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := runCLI(t, append([]string{"sleep", "run", "--persona", "researcher", "--backend", "sim", "--state-dir", state, "--tasks-file", file}, extra...)...)
		if code != exitOK {
			t.Fatalf("night exit %d\n%s\n%s", code, out, errOut)
		}
		dir, err := nightly.Latest(stagingRoot(state))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(filepath.Join(dir, "report.json"))
		var rep map[string]any
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Fatal(err)
		}
		return dir, rep
	}
	night(all[:6])
	dir, rep := night(all[6:], "--recall-k", "3", "--dream-factor", "1", "--dream-rollouts", "2")
	first := map[string]bool{}
	for _, tk := range all[:6] {
		first[tk.ID] = true
	}
	recalled, _ := rep["recalled"].([]any)
	if len(recalled) != 3 {
		t.Fatalf("recalled %v", rep["recalled"])
	}
	for _, r := range recalled {
		r := r.(map[string]any)
		if !first[r["archived"].(string)] || !(r["similarity"].(float64) > 0) || r["id"] != "recall:"+r["archived"].(string) {
			t.Fatalf("recalled %v: want a task of the first night, with its similarity", r)
		}
	}
	origins := rep["origins"].(map[string]any)
	if origins["real"] != 6.0 || origins["recall"] != 3.0 || !(origins["dream"].(float64) >= 3) {
		t.Fatalf("origins %v", origins)
	}
	extra := rep["outcome"].(map[string]any)["extra_spend"].(map[string]any)
	for _, k := range []string{"rollouts", "dream", "recall"} {
		if sp, _ := extra[k].(map[string]any); sp == nil || !(sp["tokens"].(float64) > 0) {
			t.Fatalf("extra spend %v lacks %s", extra, k)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	if !strings.Contains(string(md), "## Recalled tasks") || !strings.Contains(string(md), "3 recalled tasks") {
		t.Fatalf("report.md:\n%s", md)
	}
	ev, _ := os.ReadFile(filepath.Join(dir, "evidence.jsonl"))
	trainReplays := 0
	for line := range strings.SplitSeq(strings.TrimSpace(string(ev)), "\n") {
		var r struct {
			TaskID string `json:"task_id"`
			Stage  string `json:"stage"`
		}
		if json.Unmarshal([]byte(line), &r) != nil || r.TaskID == "" {
			continue
		}
		if strings.HasPrefix(r.TaskID, "recall:") || strings.Contains(r.TaskID, "~dream") {
			if !strings.HasPrefix(r.Stage, "train_") {
				t.Fatalf("task %s replayed in stage %s", r.TaskID, r.Stage)
			}
			trainReplays++
		}
	}
	if trainReplays == 0 {
		t.Fatal("no replay of a recalled or dream task in evidence.jsonl")
	}
	st, err := nightly.LoadState(filepath.Join(state, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(st.TaskArchive) != 12 {
		t.Fatalf("archive holds %d tasks, want the 12 real ones", len(st.TaskArchive))
	}
	for _, tk := range st.TaskArchive {
		if tk.Origin != nightly.OriginReal {
			t.Fatalf("archived a task of origin %q: %s", tk.Origin, tk.ID)
		}
	}
}

// TestSleepScopeAllAndSlowMemory: a night of scope project reads its own
// project's sessions and leaves its gate decisions in the state's slow
// memory; a later night with --scope all reads another project's too,
// does not evolve the (one project's) memory file, and its reflector,
// shown the lessons, does not propose the lure the first gate rejected.
func TestSleepScopeAllAndSlowMemory(t *testing.T) {
	state := t.TempDir()
	box := filepath.Join(state, "persona-researcher")
	now := time.Now()
	other := "/elsewhere/other-project"
	for _, p := range []string{filepath.Join(box, "project"), other} {
		if err := nightly.WritePersonaTranscripts("researcher", filepath.Join(box, "claude"), p, now); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := runCLI(t, personaArgs(state, "--preferences", "British spelling")...)
	if code != exitOK || !strings.Contains(out, "sessions 12,") || !strings.Contains(out, `rejected skill add "Write every answer in lower case."`) {
		t.Fatalf("night 1 exit %d\n%s\n%s", code, out, errOut)
	}
	st, err := nightly.LoadState(filepath.Join(state, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var lure *nightly.Lesson
	for i, l := range st.Lessons {
		if l.Content == nightly.HabitHarmful {
			lure = &st.Lessons[i]
		}
	}
	if lure == nil || lure.Kept || lure.Night != 1 || !strings.Contains(lure.Why, "does not beat") {
		t.Fatalf("slow memory %+v: want the rejected lure", st.Lessons)
	}
	code, out, errOut = runCLI(t, personaArgs(state, "--scope", "all")...)
	if code != exitOK || !strings.Contains(out, "sessions 12,") || strings.Contains(out, "lower case") {
		t.Fatalf("night 2 (scope all) exit %d\n%s\n%s", code, out, errOut)
	}
	dir, err := nightly.Latest(stagingRoot(state))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Projects []string `json:"projects"`
		Outcome  struct {
			Action        string `json:"action"`
			MemoryChanged bool   `json:"memory_changed"`
			Trials        []struct {
				Document string `json:"document"`
			} `json:"trials"`
		} `json:"outcome"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, "report.json"))
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Projects) != 1 || rep.Projects[0] != other || rep.Outcome.Action != "accept" || rep.Outcome.MemoryChanged {
		t.Fatalf("night 2 report: %s", b)
	}
	for _, tr := range rep.Outcome.Trials {
		if tr.Document == "memory" {
			t.Fatal("scope all evolved the memory file")
		}
	}
	st, _ = nightly.LoadState(filepath.Join(state, "state.json"))
	if _, ok := st.LastHarvest[other]; !ok {
		t.Fatalf("no cursor for %s: %v", other, st.LastHarvest)
	}
}

// TestSleepProgrammerPersonaImproves: the programmer persona's proof run
// learns the wrap and Conventional Commits habits, its gate keeps out the
// full-stop lure (which breaks "no trailing period"), and the planted
// token never leaves the transcripts.
func TestSleepProgrammerPersonaImproves(t *testing.T) {
	state := t.TempDir()
	code, out, errOut := runCLI(t, "sleep", "run", "--persona", "programmer", "--backend", "sim", "--state-dir", state, "--assert-improves")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"sessions 12,", "action: accept", `accepted skill add "Write commit messages as Conventional Commits`, `rejected skill add "End every answer with a full stop."`} {
		if !strings.Contains(out, want) {
			t.Fatalf("stdout lacks %q:\n%s", want, out)
		}
	}
	box := filepath.Join(state, "persona-programmer")
	dir, err := nightly.Latest(filepath.Join(box, "project", ".skillfleet-sleep", "staging"))
	if err != nil {
		t.Fatal(err)
	}
	prop, _ := os.ReadFile(filepath.Join(dir, "proposed_SKILL.md"))
	if !strings.Contains(string(prop), nightly.HabitConventional) || strings.Contains(string(prop), nightly.HabitFullStop) {
		t.Fatalf("proposal:\n%s", prop)
	}
	err = filepath.WalkDir(state, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(p, filepath.Join(box, "claude")) {
			return err
		}
		if b, _ := os.ReadFile(p); strings.Contains(string(b), "PlantedToken") {
			t.Errorf("%s holds the planted token", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// nightSplit is the split a night gives a task of a tasks file: it
// splits them again, from a hash of each id under its seed.
func nightSplit(tk nightly.Task) string {
	c := nightly.DefaultConfig()
	one := []nightly.Task{tk}
	nightly.AssignSplits(one, c.Seed, c.ValFraction, c.TestFraction)
	return one[0].Split
}

// atLeastVal renames train tasks (as a user editing the file may) until
// at least want of tasks fall in the night's val split, and checks that
// want of them are still in train.
func atLeastVal(t *testing.T, tasks []nightly.Task, want int) {
	t.Helper()
	count := func(split string) int {
		n := 0
		for _, tk := range tasks {
			if nightSplit(tk) == split {
				n++
			}
		}
		return n
	}
	val := count(nightly.SplitVal)
	for i := range tasks {
		if val >= want {
			break
		}
		if !nightly.IsHeldOutOrigin(tasks[i].Origin) || nightSplit(tasks[i]) != nightly.SplitTrain {
			continue
		}
		id := tasks[i].ID
		for k := 1; k <= 200; k++ {
			tasks[i].ID = fmt.Sprintf("%s-v%d", id, k)
			if nightSplit(tasks[i]) == nightly.SplitVal {
				t.Logf("task %s renamed %s: the night's val split had %d tasks", id, tasks[i].ID, val)
				val++
				break
			}
		}
	}
	if val < want || count(nightly.SplitTrain) < want {
		t.Fatalf("%d tasks in the night's val split and %d in train, want %d of each", val, count(nightly.SplitTrain), want)
	}
}

// TestSleepMultiSkillNight: a home with three skills, one of them a
// skill package, and tasks whose sessions loaded one of them each: the
// night gates and stages three proposals, the package's as a package;
// adopt --skill changes that skill alone; --all-skills then --undo
// --all-skills puts the home back byte for byte.
func TestSleepMultiSkillNight(t *testing.T) {
	work := t.TempDir()
	var tasks []nightly.Task
	for _, p := range []string{"researcher", "programmer"} {
		file := filepath.Join(work, p+".json")
		if code, out, errOut := runCLI(t, "sleep", "harvest", "--persona", p, "--backend", "sim", "--state-dir", filepath.Join(work, "h-"+p), "--output", file); code != exitOK {
			t.Fatalf("harvest %s: exit %d\n%s\n%s", p, code, out, errOut)
		}
		tf, err := nightly.LoadTasksFile(file)
		if err != nil {
			t.Fatal(err)
		}
		// The researcher's tasks go to papers and citations in turn within
		// each of the night's splits, so that each skill has train and val
		// tasks. Those splits hash task ids, which differ from run to run:
		// with one val task among the researcher's, citations would have
		// none, and with none among the programmer's, commits would not;
		// that skill's night would then stay unverified.
		want := 1
		if p == "researcher" {
			want = 2
		}
		atLeastVal(t, tf.Tasks, want)
		bySplit := map[string]int{}
		for _, tk := range tf.Tasks {
			tk.Split = nightSplit(tk)
			switch {
			case p == "programmer":
				tk.SkillHint = "commits"
			case bySplit[tk.Split]%2 == 0:
				tk.SkillHint = "papers"
			default:
				tk.SkillHint = "citations"
			}
			bySplit[tk.Split]++
			tasks = append(tasks, tk)
		}
	}
	file := filepath.Join(work, "tasks.json")
	if err := nightly.WriteTasksFile(file, nightly.TasksFile{Reviewed: true, Tasks: tasks}); err != nil {
		t.Fatal(err)
	}
	// papers is a skill package (researcher-package's: its SKILL.md sends
	// the agent to references/ for identifier formats); the other two are
	// a SKILL.md each.
	home := filepath.Join(work, "home")
	_, pkgFiles, _ := nightly.PersonaPackage(nightly.PersonaResearcherPackage)
	for _, s := range []string{"papers", "citations", "commits"} {
		files := map[string]string{"SKILL.md": "---\nname: " + s + "\ndescription: the " + s + " skill\n---\n\n# " + s + "\n\nHand-written text the night must keep.\n"}
		if s == "papers" {
			files = pkgFiles
		}
		for name, text := range files {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(home, s, name)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(home, s, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := treeOf(t, home)
	args := []string{"--backend", "sim", "--state-dir", filepath.Join(work, "state"), "--project", filepath.Join(work, "proj"), "--skill-root", home}
	if err := os.MkdirAll(filepath.Join(work, "proj"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, append(append([]string{"sleep", "run"}, args...), "--tasks-file", file)...)
	if code != exitOK || !strings.Contains(out, "action: multi_skill (3 skills consolidated, 3 accepted)") {
		t.Fatalf("night exit %d\n%s\n%s", code, out, errOut)
	}
	for _, s := range []string{"papers", "citations", "commits"} {
		dir, err := nightly.Latest(filepath.Join(work, "proj", ".skillfleet-sleep", "staging", "skill-"+s))
		if err != nil {
			t.Fatal(err)
		}
		m, err := nightly.ReadManifest(dir)
		live, kind := filepath.Join(home, s, "SKILL.md"), ""
		if s == "papers" {
			live, kind = filepath.Join(home, s), nightly.KindPackage
		}
		if err != nil || !m.Accepted || len(m.Proposals) != 1 || m.Proposals[0].LivePath != live || m.Proposals[0].Kind != kind {
			t.Fatalf("skill %s manifest %+v, %v", s, m, err)
		}
	}
	if !strings.Contains(out, "package: files changed: SKILL.md, references/arxiv.md") {
		t.Fatalf("the night's report does not show the papers package's changed files:\n%s", out)
	}
	if !maps.Equal(treeOf(t, home), before) {
		t.Fatal("the night changed the home")
	}
	adopt := func(extra ...string) string {
		t.Helper()
		code, out, errOut := runCLI(t, append(append([]string{"sleep", "adopt"}, args...), extra...)...)
		if code != exitOK {
			t.Fatalf("adopt %v: exit %d\n%s\n%s", extra, code, out, errOut)
		}
		return out
	}
	adopt("--skill", "papers")
	after := treeOf(t, home)
	// The package's arXiv rule lives in a new reference file; its other
	// files are kept as they were, SKILL.md outside its learned block too.
	if after["papers/SKILL.md"] == before["papers/SKILL.md"] || nightly.OutsideBlock(after["papers/SKILL.md"]) != nightly.OutsideBlock(before["papers/SKILL.md"]) ||
		!strings.Contains(after["papers/references/arxiv.md"], nightly.HabitArxivID) || after["papers/references/doi.md"] != before["papers/references/doi.md"] {
		t.Fatalf("papers after adopt --skill papers: %v", after)
	}
	if after["citations/SKILL.md"] != before["citations/SKILL.md"] || after["commits/SKILL.md"] != before["commits/SKILL.md"] {
		t.Fatal("adopt --skill papers touched another skill")
	}
	if out := adopt("--all-skills"); !strings.Contains(out, "skill papers: already adopted") {
		t.Fatalf("adopt --all-skills:\n%s", out)
	}
	all := treeOf(t, home)
	if !strings.Contains(all["commits/SKILL.md"], nightly.HabitConventional) || all["citations/SKILL.md"] == before["citations/SKILL.md"] {
		t.Fatalf("after --all-skills: %v", all)
	}
	adopt("--all-skills", "--undo")
	if !maps.Equal(treeOf(t, home), before) {
		t.Fatalf("after --undo --all-skills the home differs:\n%v\nwant\n%v", treeOf(t, home), before)
	}
	if code, out, _ := runCLI(t, append([]string{"sleep", "status"}, args[2:]...)...); code != exitOK || !strings.Contains(out, "multi_skill, ") || strings.Contains(out, "val 0.000") {
		t.Fatalf("status of a multi-skill night: exit %d\n%s", code, out)
	}
	// Without a skill choice a multi-skill adopt is a usage error.
	if code, _, errOut := runCLI(t, append([]string{"sleep", "adopt"}, args...)...); code != exitUsage || !strings.Contains(errOut, "--skill NAME") {
		t.Fatalf("adopt without --skill: exit %d, %s", code, errOut)
	}
}

// TestSleepTransfer measures a night's proposal on a second sim model,
// before and after the proposal is adopted (the starting skill then comes
// from the adoption's backup), and refuses a night with no proposal.
func TestSleepTransfer(t *testing.T) {
	state := t.TempDir()
	if code, out, errOut := runCLI(t, personaArgs(state, "--assert-improves")...); code != exitOK {
		t.Fatalf("night exit %d\n%s\n%s", code, out, errOut)
	}
	transfer := func() map[string]any {
		t.Helper()
		code, out, errOut := runCLI(t, "sleep", "transfer", "--persona", "researcher", "--backend", "sim", "--model", "sim-large", "--state-dir", state, "--json")
		if code != exitOK {
			t.Fatalf("transfer exit %d\n%s\n%s", code, out, errOut)
		}
		var tr map[string]any
		if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &tr); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		before, after := tr["before"].(map[string]any)["score"].(float64), tr["after"].(map[string]any)["score"].(float64)
		if tr["model"] != "sim-large" || !(tr["tasks"].(float64) >= 1) || !(after > before) || after != 1 {
			t.Fatalf("transfer %v", tr)
		}
		return tr
	}
	first := transfer()
	if code, out, errOut := runCLI(t, "sleep", "adopt", "--persona", "researcher", "--state-dir", state); code != exitOK {
		t.Fatalf("adopt exit %d\n%s\n%s", code, out, errOut)
	}
	if second := transfer(); second["before"].(map[string]any)["score"] != first["before"].(map[string]any)["score"] {
		t.Fatalf("after adopt the starting skill differs: %v vs %v", second, first)
	}
	// A second night has no new sessions: nothing to transfer.
	if code, out, errOut := runCLI(t, personaArgs(state)...); code != exitOK {
		t.Fatalf("night 2 exit %d\n%s\n%s", code, out, errOut)
	}
	code, _, errOut := runCLI(t, "sleep", "transfer", "--persona", "researcher", "--backend", "sim", "--model", "sim-large", "--state-dir", state)
	if code == exitOK || !strings.Contains(errOut, "no skill proposal to transfer") {
		t.Fatalf("transfer of a night without a proposal: exit %d, %s", code, errOut)
	}
}

// TestSleepTransferPackage measures a package night's proposal (the
// researcher-package persona: its arXiv rule lands in references/) on a
// second sim model, before and after the package is adopted (the
// starting package then comes from the adoption's backup).
func TestSleepTransferPackage(t *testing.T) {
	state := t.TempDir()
	if code, out, errOut := runCLI(t, "sleep", "run", "--persona", "researcher-package", "--backend", "sim", "--state-dir", state, "--assert-improves"); code != exitOK {
		t.Fatalf("night exit %d\n%s\n%s", code, out, errOut)
	}
	transfer := func() (float64, float64) {
		t.Helper()
		code, out, errOut := runCLI(t, "sleep", "transfer", "--persona", "researcher-package", "--backend", "sim", "--model", "sim-large", "--state-dir", state, "--json")
		if code != exitOK {
			t.Fatalf("transfer exit %d\n%s\n%s", code, out, errOut)
		}
		var tr map[string]any
		if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &tr); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		before, after := tr["before"].(map[string]any)["score"].(float64), tr["after"].(map[string]any)["score"].(float64)
		if tr["model"] != "sim-large" || !(after > before) || after != 1 {
			t.Fatalf("transfer %v", tr)
		}
		return before, after
	}
	b1, _ := transfer()
	if code, out, errOut := runCLI(t, "sleep", "adopt", "--persona", "researcher-package", "--state-dir", state); code != exitOK {
		t.Fatalf("adopt exit %d\n%s\n%s", code, out, errOut)
	}
	if b2, _ := transfer(); b2 != b1 {
		t.Fatalf("after adopt the starting package scores %v, before it %v", b2, b1)
	}
}

// TestSleepSweep runs the shipped sweep (2 personas × 2 settings × 3
// seeds, 12 nights, 4 at once on one fleet by default) and reads its
// scorecard, then runs it one night at a time and gets the same numbers; a sweep file that sets what
// the sweep sets, or names an unknown persona, is refused naming it.
func TestSleepSweep(t *testing.T) {
	out := t.TempDir()
	code, stdout, errOut := runCLI(t, "sleep", "sweep", "--file", "../../configs/sleep/sweep.yaml", "--output", out)
	if code != exitOK {
		t.Fatalf("sweep exit %d\n%s\n%s", code, stdout, errOut)
	}
	var cells []map[string]any
	b, _ := os.ReadFile(filepath.Join(out, "cells.json"))
	if err := json.Unmarshal(b, &cells); err != nil || len(cells) != 12 {
		t.Fatalf("cells.json: %d cells, %v", len(cells), err)
	}
	md, _ := os.ReadFile(filepath.Join(out, "scorecard.md"))
	for _, want := range []string{"| researcher | off | 3 | 3 | 0.167 | 1.000 | +0.833 |", "| researcher | dream | 3 | 3 |", "| programmer | off | 3 | 3 |", "| programmer | dream | 3 | 3 |"} {
		if !strings.Contains(string(md), want) {
			t.Fatalf("scorecard.md lacks %q:\n%s", want, md)
		}
	}
	// The dream setting costs more tokens than off, cell by cell.
	tokens := map[string]float64{}
	for _, c := range cells {
		tokens[fmt.Sprint(c["persona"], c["setting"], c["seed"])] = c["tokens"].(float64)
	}
	for _, c := range cells {
		if c["setting"] == "dream" && !(c["tokens"].(float64) > tokens[fmt.Sprint(c["persona"], "off", c["seed"])]) {
			t.Fatalf("dream cell %v spent no more than off", c)
		}
	}
	if h, _ := os.ReadFile(filepath.Join(out, "scorecard.html")); !strings.Contains(string(h), "<td>researcher</td><td>dream</td>") {
		t.Fatalf("scorecard.html:\n%s", h)
	}
	// The same sweep one night at a time, in the same output dir (a
	// task's id, and so its split, depends on its sandbox's path), gives
	// the same cells and scorecard byte for byte: the nights that ran at
	// once on the one fleet did not disturb each other.
	if len(strings.Split(strings.TrimSpace(stdout), "\n")) != 13 {
		t.Fatalf("sweep stdout: want a line per cell and the scorecard's:\n%s", stdout)
	}
	if err := os.RemoveAll(out); err != nil {
		t.Fatal(err)
	}
	if code, stdout, errOut := runCLI(t, "sleep", "sweep", "--file", "../../configs/sleep/sweep.yaml", "--output", out, "--parallel", "1"); code != exitOK {
		t.Fatalf("serial sweep exit %d\n%s\n%s", code, stdout, errOut)
	}
	for _, name := range []string{"cells.json", "scorecard.md"} {
		if serial, _ := os.ReadFile(filepath.Join(out, name)); string(serial) != string(map[string][]byte{"cells.json": b, "scorecard.md": md}[name]) {
			t.Fatalf("%s of the serial sweep differs from the parallel one's:\n%s", name, serial)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "fleet")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the sweep's fleet dir is left behind: %v", err)
	}
	for body, want := range map[string]string{
		"personas: [researcher]\nseeds: [1]\nsettings: [{name: x, args: [--backend, openai]}]\n": "--backend is the sweep's to set",
		"personas: [astronaut]\nseeds: [1]\nsettings: [{name: x}]\n":                             `"astronaut"`,
	} {
		f := filepath.Join(t.TempDir(), "sweep.yaml")
		if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if code, _, errOut := runCLI(t, "sleep", "sweep", "--file", f, "--output", t.TempDir()); code != exitUsage || !strings.Contains(errOut, want) {
			t.Errorf("sweep of %q: exit %d, %s", body, code, errOut)
		}
	}
}

// TestAtLeastTwoValRenamesTrainTasks: tasks whose ids all fall in the
// night's train split get two of them renamed into val, ids still unique.
func TestAtLeastValRenamesTrainTasks(t *testing.T) {
	var tasks []nightly.Task
	for k := 0; len(tasks) < 6; k++ {
		tk := nightly.Task{ID: fmt.Sprintf("x%d", k), Origin: nightly.OriginReal}
		if nightSplit(tk) == nightly.SplitTrain {
			tasks = append(tasks, tk)
		}
	}
	atLeastVal(t, tasks, 2)
	ids, val := map[string]bool{}, 0
	for _, tk := range tasks {
		ids[tk.ID] = true
		if nightSplit(tk) == nightly.SplitVal {
			val++
		}
	}
	if val != 2 || len(ids) != len(tasks) {
		t.Fatalf("%d tasks in val, %d distinct ids of %d; want 2 and all distinct: %+v", val, len(ids), len(tasks), tasks)
	}
}
