package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/backends/handoff"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/nightly"
)

// handoffRun runs the real binary's `sleep run` of the researcher persona
// on the handoff backend and returns its exit code and output.
func handoffRun(t *testing.T, state string, extra ...string) (int, string, string) {
	t.Helper()
	args := append([]string{"sleep", "run", "--persona", "researcher", "--backend", "handoff", "--model", "sim", "--state-dir", state}, extra...)
	return runBinaryIn(t, filepath.Join(state, "home"), args...)
}

// runBinaryIn runs the real binary with HOME set to home and returns its
// exit code and output.
func runBinaryIn(t *testing.T, home string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "HOME="+home)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, o.String(), e.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), o.String(), e.String()
	}
	t.Fatalf("run %v: %v", args, err)
	return 0, "", ""
}

// readBatch reads pending.json and checks its format.
func readBatch(t *testing.T, path string) (handoff.Batch, []byte) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var b handoff.Batch
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if b.Format != "skillfleet.handoff.v1" || b.AnswersDir != filepath.Join(filepath.Dir(path), "answers") || len(b.Pending) == 0 {
		t.Fatalf("%s: format %q, answers_dir %q, %d pending", path, b.Format, b.AnswersDir, len(b.Pending))
	}
	hexID := regexp.MustCompile(`^[0-9a-f]{32}$`)
	for _, c := range b.Pending {
		if !hexID.MatchString(c.ID) || c.AnswerFile != filepath.Join(b.AnswersDir, c.ID+".md") ||
			!slices.Contains([]string{"miner", "target", "judge", "optimizer"}, c.Role) || !strings.Contains(c.Prompt, "=== USER ===") {
			t.Fatalf("%s: malformed call %+v", path, c)
		}
	}
	return b, raw
}

// simAnswer answers a pending call as the simulated model answers the
// same request.
func simAnswer(t *testing.T, sim llm.Model, c handoff.Call) string {
	t.Helper()
	w := c.Request
	req := &llm.Request{Model: w.Model, Temperature: w.Temperature, MaxTokens: w.MaxTokens, Seed: w.Seed, Stop: w.Stop,
		JSONMode: w.ResponseFormat["type"] == "json_object"}
	for _, m := range w.Messages {
		req.Messages = append(req.Messages, llm.Message{Role: m.Role, Content: m.Content})
	}
	resp, err := sim.Chat(context.Background(), req)
	if err != nil {
		t.Fatalf("sim answering %s: %v", c.ID, err)
	}
	return resp.Content
}

// fileSums are the sha256 of every file under dir but those under skip.
func fileSums(t *testing.T, dir string, skip ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		for _, s := range skip {
			if p == s {
				return filepath.SkipDir
			}
		}
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out[p] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSleepHandoffNightEqualsTheSimNight drives a researcher night on the
// handoff backend through its rounds with the real binary, a test
// "session" answering every pending prompt as the simulated model would;
// it must end with the decisions, evidence and proposal of the same night
// run on the sim backend directly. On the way: exit 3 and pending.json's
// format, a first batch of mining calls alone, no batch holding a call
// that depends on one still pending, a rerun without answers writing the
// same batch, a session appearing between rounds changing nothing, and
// the project, the skill and the state untouched until the last round.
func TestSleepHandoffNightEqualsTheSimNight(t *testing.T) {
	t.Parallel()
	handoffAgainstSim(t)
}

// TestSleepHandoffDreamRolloutsEqualTheSimNight: with three attempts of
// each train task, the attempts' identical prompts are three calls (their
// samples differ), answered independently, and the night still ends as
// the sim night does.
func TestSleepHandoffDreamRolloutsEqualTheSimNight(t *testing.T) {
	t.Parallel()
	batches := handoffAgainstSim(t, "--dream-rollouts", "3")
	for _, b := range batches {
		byPrompt := map[string][]int64{}
		for _, c := range b.Pending {
			if c.Role == "target" && c.Sample != nil {
				byPrompt[c.Prompt] = append(byPrompt[c.Prompt], *c.Sample)
			}
		}
		for _, samples := range byPrompt {
			if slices.Sort(samples); len(samples) == 3 && slices.Equal(samples, []int64{0, 1, 2}) {
				return
			}
		}
	}
	t.Fatal("no batch asked one train prompt three times with samples 0, 1 and 2")
}

// handoffAgainstSim runs the researcher night on the handoff backend
// with extra flags through every round, checking each round, then the
// same night on the sim backend, and compares the two; it returns the
// batches the rounds wrote.
func handoffAgainstSim(t *testing.T, extra ...string) []handoff.Batch {
	root := t.TempDir()
	state := filepath.Join(root, "state")
	sim, err := backends.New(context.Background(), backends.Spec{Backend: backends.BackendSim, Model: "sim"}, backends.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	box := filepath.Join(state, "persona-researcher")
	pendingLine := regexp.MustCompile(`(?m)^handoff: (\d+) prompts pending: (\S+pending\.json)\n\z`)

	code, out, errOut := handoffRun(t, state, extra...)
	m := pendingLine.FindStringSubmatch(out)
	if code != exitHandoffPending || m == nil {
		t.Fatalf("round 1: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	pendingPath := m[2]
	if _, err := os.Stat(filepath.Join(filepath.Dir(pendingPath), "PROMPTS.md")); err != nil {
		t.Fatal(err)
	}
	first, firstRaw := readBatch(t, pendingPath)
	if fmt.Sprint(len(first.Pending)) != m[1] {
		t.Fatalf("stdout says %s prompts, pending.json holds %d", m[1], len(first.Pending))
	}
	for _, c := range first.Pending {
		if c.Role != "miner" {
			t.Fatalf("round 1 asks a %s call before the sessions are mined: %s", c.Role, c.ID)
		}
	}
	// The project and skill as the night found them; the state file.
	before := fileSums(t, box, filepath.Join(box, "claude"))
	if _, err := os.Stat(filepath.Join(state, "state.json")); err == nil {
		t.Fatal("a state file after a pending round")
	}

	// The session answering is itself a session of the project: it
	// appears between rounds, and the night's batch must not change.
	proj, _ := filepath.Glob(filepath.Join(box, "claude", "projects", "*"))
	if len(proj) != 1 {
		t.Fatalf("persona projects: %v", proj)
	}
	line, _ := json.Marshal(map[string]any{"cwd": filepath.Join(box, "project"), "sessionId": "answering", "type": "user",
		"timestamp": time.Now().UTC().Format(time.RFC3339), "message": map[string]any{"role": "user", "content": "answer the night's prompts in pending.json"}})
	if err := os.WriteFile(filepath.Join(proj[0], "answering.jsonl"), append(line, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := handoffRun(t, state, extra...); code != exitHandoffPending || !pendingLine.MatchString(out) {
		t.Fatalf("rerun without answers: exit %d, %q", code, out)
	}
	if _, again := readBatch(t, pendingPath); !bytes.Equal(again, firstRaw) {
		t.Fatal("a rerun without new answers wrote another batch")
	}

	answered := map[string]bool{}
	batch := first
	batches := []handoff.Batch{first}
	rounds := 1
	for {
		roles := map[string]int{}
		for _, c := range batch.Pending {
			if answered[c.ID] {
				t.Fatalf("round %d asks again for %s, answered before", rounds, c.ID)
			}
			roles[c.Role]++
			if err := os.WriteFile(c.AnswerFile, []byte(simAnswer(t, sim, c)), 0o644); err != nil {
				t.Fatal(err)
			}
			answered[c.ID] = true
		}
		// A reflection reads the replies of a whole train wave, a judge
		// a reply: neither shares a batch with the calls it depends on.
		if roles["optimizer"] > 0 && (roles["target"] > 0 || roles["miner"] > 0) {
			t.Fatalf("round %d mixes a reflection with the calls it reads: %v", rounds, roles)
		}
		rounds++
		if rounds > 30 {
			t.Fatal("the night did not end in 30 rounds")
		}
		code, out, errOut = handoffRun(t, state, extra...)
		if code == 0 {
			break
		}
		if code != exitHandoffPending || !pendingLine.MatchString(out) {
			t.Fatalf("round %d: exit %d, stdout %q, stderr %q", rounds, code, out, errOut)
		}
		if got := fileSums(t, box, filepath.Join(box, "claude")); !equalSums(got, before) {
			t.Fatalf("round %d changed the project or the skill before the night ended", rounds)
		}
		batch, _ = readBatch(t, pendingPath)
		batches = append(batches, batch)
		noPlantedSecret(t, filepath.Dir(pendingPath))
	}
	t.Logf("handoff night: %d rounds, %d calls answered", rounds, len(answered))
	if !strings.Contains(out, "action: accept") || !strings.Contains(out, "tokens (estimated)") {
		t.Fatalf("last round:\n%s", out)
	}
	if _, err := os.Stat(pendingPath); !os.IsNotExist(err) {
		t.Fatalf("pending.json after the night ended: %v", err)
	}
	// The night staged its proposal; the skill and the project are as
	// they were until adopt.
	if got := fileSums(t, box, filepath.Join(box, "claude"), filepath.Join(box, "project", ".skillfleet-sleep")); !equalSums(got, before) {
		t.Fatal("the live skill or the project changed before adopt")
	}
	hoStaging := stagingRoot(state)
	hoNight, _ := filepath.Glob(filepath.Join(hoStaging, "night-*"))
	if len(hoNight) != 1 {
		t.Fatalf("staged nights: %v", hoNight)
	}
	var rep map[string]any
	raw, _ := os.ReadFile(filepath.Join(hoNight[0], "report.json"))
	if err := json.Unmarshal(raw, &rep); err != nil || rep["usage_estimated"] == nil {
		t.Fatalf("report.json: usage_estimated missing (%v)", err)
	}

	// The same night on the sim backend, at the same paths (task ids hold
	// the project's path).
	hoState := filepath.Join(root, "state-handoff")
	if err := os.Rename(state, hoState); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, append([]string{"sleep", "run", "--persona", "researcher", "--backend", "sim", "--state-dir", state}, extra...)...)
	cmd.Env = append(os.Environ(), "HOME="+filepath.Join(state, "home"))
	if o, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sim night: %v\n%s", err, o)
	}
	simNight, _ := filepath.Glob(filepath.Join(stagingRoot(state), "night-*"))
	hoNight, _ = filepath.Glob(filepath.Join(stagingRoot(hoState), "night-*"))
	if len(simNight) != 1 || len(hoNight) != 1 {
		t.Fatalf("staged: sim %v, handoff %v", simNight, hoNight)
	}
	decided := func(dir string) string {
		var r map[string]any
		b, err := os.ReadFile(filepath.Join(dir, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		out := r["outcome"].(map[string]any)
		// Spend differs: the handoff's tokens are estimates.
		delete(out, "spend")
		delete(out, "extra_spend")
		s, _ := json.Marshal(map[string]any{"outcome": out, "tasks": r["task_list"], "splits": r["splits"], "sessions": r["sessions"]})
		return string(s)
	}
	if h, s := decided(hoNight[0]), decided(simNight[0]); h != s {
		t.Fatalf("the handoff night decided otherwise than the sim night:\nhandoff %s\nsim     %s", h, s)
	}
	evidence := func(dir string) []string {
		b, err := os.ReadFile(filepath.Join(dir, "evidence.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for l := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
			var v map[string]any
			if err := json.Unmarshal([]byte(l), &v); err != nil {
				t.Fatal(err)
			}
			delete(v, "usage")
			s, _ := json.Marshal(v)
			lines = append(lines, string(s))
		}
		return lines
	}
	if h, s := evidence(hoNight[0]), evidence(simNight[0]); !slices.Equal(h, s) {
		t.Fatalf("evidence differs: handoff %d lines, sim %d", len(h), len(s))
	}
	hp, _ := os.ReadFile(filepath.Join(hoNight[0], "proposed_SKILL.md"))
	sp, _ := os.ReadFile(filepath.Join(simNight[0], "proposed_SKILL.md"))
	if len(hp) == 0 || !bytes.Equal(hp, sp) {
		t.Fatalf("proposed skills differ:\n%s\n---\n%s", hp, sp)
	}
	return batches
}

func equalSums(a, b map[string]string) bool {
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

// TestSleepHandoffBadAnswers: an empty answer file stops the night with
// an error naming the file and the prompt id (exit 1, nothing staged); a
// miner's answer that is not the JSON asked for is a malformed reply like
// any other (counted in the report's mine_dropped, the session mined by
// the heuristic), and the night goes on.
func TestSleepHandoffBadAnswers(t *testing.T) {
	t.Parallel()
	state := filepath.Join(t.TempDir(), "state")
	dir := filepath.Join(t.TempDir(), "handoff")
	code, out, _ := handoffRun(t, state, "--handoff-dir", dir)
	if code != exitHandoffPending || !strings.HasSuffix(out, "handoff: 12 prompts pending: "+filepath.Join(dir, "pending.json")+"\n") {
		t.Fatalf("round 1: exit %d, %q", code, out)
	}
	b, _ := readBatch(t, filepath.Join(dir, "pending.json"))
	sim, err := backends.New(context.Background(), backends.Spec{Backend: backends.BackendSim, Model: "sim"}, backends.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range b.Pending[1:] {
		if err := os.WriteFile(c.AnswerFile, []byte(simAnswer(t, sim, c)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bad := b.Pending[0]
	if err := os.WriteFile(bad.AnswerFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := handoffRun(t, state, "--handoff-dir", dir)
	if code != 1 || !strings.Contains(errOut, bad.AnswerFile) || !strings.Contains(errOut, bad.ID) || !strings.Contains(errOut, "empty") {
		t.Fatalf("empty answer: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, err := os.Stat(stagingRoot(state)); !os.IsNotExist(err) {
		t.Fatalf("staging after an empty answer: %v", err)
	}
	if err := os.WriteFile(bad.AnswerFile, []byte("I could not find any recurring task."), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = handoffRun(t, state, "--handoff-dir", dir, "--json")
	if code != exitHandoffPending {
		t.Fatalf("after a malformed miner answer: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	next, _ := readBatch(t, filepath.Join(dir, "pending.json"))
	for _, c := range next.Pending {
		if c.Role != "target" {
			t.Fatalf("the round after mining asks a %s call", c.Role)
		}
	}
	// Answer the rest of the night, then read what mining dropped.
	for rounds := 0; code == exitHandoffPending; rounds++ {
		if rounds > 30 {
			t.Fatal("the night did not end in 30 rounds")
		}
		for _, c := range next.Pending {
			if err := os.WriteFile(c.AnswerFile, []byte(simAnswer(t, sim, c)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if code, out, errOut = handoffRun(t, state, "--handoff-dir", dir, "--json"); code == exitHandoffPending {
			next, _ = readBatch(t, filepath.Join(dir, "pending.json"))
		}
	}
	if code != 0 {
		t.Fatalf("last round: exit %d, stderr %q", code, errOut)
	}
	js := out[strings.Index(out, "{") : strings.LastIndex(out, "}")+1]
	var rep struct {
		MineDropped []string `json:"mine_dropped"`
	}
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	if !slices.ContainsFunc(rep.MineDropped, func(s string) bool { return strings.Contains(s, "miner reply unusable") }) {
		t.Fatalf("mine_dropped %v: the malformed answer is not counted", rep.MineDropped)
	}
}

// TestSleepHandoffJudgeWaitsForItsReply: a rubric judge reads a replay's
// reply, so it is asked only once that reply is answered: every judge
// prompt of every batch holds the answer of a target call answered in an
// earlier round, and no batch asks a judge for a reply still pending.
func TestSleepHandoffJudgeWaitsForItsReply(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	project, skill := filepath.Join(root, "project"), filepath.Join(root, "skills", "notes", "SKILL.md")
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	var tasks []map[string]any
	for i := range 6 {
		tasks = append(tasks, map[string]any{"id": fmt.Sprintf("rubric-%d", i), "intent": fmt.Sprintf("summarise release note %d in one line", i),
			"outcome": "unknown", "origin": "real", "judge": map[string]any{"kind": "rubric", "rubric": "one line, names the release"}})
	}
	tf, _ := json.Marshal(map[string]any{"reviewed": true, "tasks": tasks})
	file := filepath.Join(root, "tasks.json")
	if err := os.WriteFile(file, tf, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "handoff")
	run := func() (int, string, string) {
		return runBinaryIn(t, filepath.Join(root, "home"), "sleep", "run", "--backend", "handoff", "--state-dir", filepath.Join(root, "state"), "--project", project,
			"--skill-path", skill, "--tasks-file", file, "--handoff-dir", dir, "--no-memory")
	}
	replies := map[string]bool{} // the target answers written so far
	judges := 0
	code, out, errOut := run()
	for rounds := 1; code == exitHandoffPending; rounds++ {
		if rounds > 12 {
			t.Fatal("the night did not end in 12 rounds")
		}
		b, _ := readBatch(t, filepath.Join(dir, "pending.json"))
		var answers []string
		for _, c := range b.Pending {
			answer := `{"score": 1, "reason": "one line naming the release"}`
			switch c.Role {
			case "target":
				answer = "reply-" + c.ID[:12]
				answers = append(answers, answer)
			case "judge":
				judges++
				found := false
				for r := range replies {
					found = found || strings.Contains(c.Prompt, r)
				}
				if !found {
					t.Fatalf("round %d asks judge %s for a reply not answered yet:\n%s", rounds, c.ID, c.Prompt)
				}
			default:
				t.Fatalf("round %d asks a %s call; every replay passes, so nothing is reflected on", rounds, c.Role)
			}
			if err := os.WriteFile(c.AnswerFile, []byte(answer), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, a := range answers {
			replies[a] = true
		}
		code, out, errOut = run()
	}
	if code != 0 || judges == 0 || !strings.Contains(out, "action: no_failures") {
		t.Fatalf("exit %d after %d judge calls\n%s\n%s", code, judges, out, errOut)
	}
	if _, err := os.Stat(skill); !os.IsNotExist(err) {
		t.Fatalf("the skill file exists after a night with nothing to adopt: %v", err)
	}
}

// TestSleepHandoffRefusedWhereItCannotWork: the commands and setups a
// handoff cannot serve say so (exit 2) instead of failing a call later:
// harvest and transfer (no rounds there), an external fleet and a night
// without in-process workers (the answers are read in this process).
func TestSleepHandoffRefusedWhereItCannotWork(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sleep", "harvest", "--persona", "researcher", "--backend", "handoff", "--state-dir", state, "--output", filepath.Join(state, "t.json")}, "sleep harvest: --backend handoff"},
		{[]string{"sleep", "transfer", "--persona", "researcher", "--backend", "handoff", "--state-dir", state}, "sleep transfer: --backend handoff"},
		{[]string{"sleep", "run", "--persona", "researcher", "--backend", "handoff", "--state-dir", state, "--nats", "nats://127.0.0.1:1"}, "leave out --nats"},
		{[]string{"sleep", "run", "--persona", "researcher", "--backend", "handoff", "--state-dir", state, "--workers", "0"}, "--workers 0"},
	} {
		code, _, errOut := runCLI(t, c.args...)
		if code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want exit %d naming %q", c.args[1:2], code, errOut, exitUsage, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(state, "handoff")); !os.IsNotExist(err) {
		t.Errorf("a refused command made the handoff directory: %v", err)
	}
}

// TestSleepHandoffMultiSkillNightEqualsTheSimNight: a --skill-root night
// on the handoff backend (its skills consolidated one at a time) ends
// with each skill's evidence and proposal equal to the sim night's.
func TestSleepHandoffMultiSkillNightEqualsTheSimNight(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	file := filepath.Join(work, "researcher.json")
	if code, out, errOut := runCLI(t, "sleep", "harvest", "--persona", "researcher", "--backend", "sim", "--state-dir", filepath.Join(work, "h"), "--output", file); code != exitOK {
		t.Fatalf("harvest: exit %d\n%s\n%s", code, out, errOut)
	}
	tf, err := nightly.LoadTasksFile(file)
	if err != nil {
		t.Fatal(err)
	}
	bySplit := map[string]int{}
	for i, tk := range tf.Tasks {
		tf.Tasks[i].SkillHint = []string{"papers", "citations"}[bySplit[tk.Split]%2]
		bySplit[tk.Split]++
	}
	tf.Reviewed = true
	if err := nightly.WriteTasksFile(file, *tf); err != nil {
		t.Fatal(err)
	}
	night := filepath.Join(work, "night")
	setup := func() {
		for _, s := range []string{"papers", "citations"} {
			p := filepath.Join(night, "skills", s, "SKILL.md")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("---\nname: "+s+"\ndescription: the "+s+" skill\n---\n\n# "+s+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.MkdirAll(filepath.Join(night, "proj"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	args := func(backend string) []string {
		return []string{"sleep", "run", "--backend", backend, "--model", "sim", "--state-dir", filepath.Join(night, "state"), "--project", filepath.Join(night, "proj"),
			"--skill-root", filepath.Join(night, "skills"), "--tasks-file", file, "--handoff-dir", filepath.Join(night, "handoff")}
	}
	run := func(backend string) (int, string, string) {
		return runBinaryIn(t, filepath.Join(work, "home"), args(backend)...)
	}
	sim, err := backends.New(context.Background(), backends.Spec{Backend: backends.BackendSim, Model: "sim"}, backends.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	setup()
	code, out, errOut := run("handoff")
	rounds := 1
	for ; code == exitHandoffPending; rounds++ {
		if rounds > 40 {
			t.Fatal("the night did not end in 40 rounds")
		}
		b, _ := readBatch(t, filepath.Join(night, "handoff", "pending.json"))
		for _, c := range b.Pending {
			if err := os.WriteFile(c.AnswerFile, []byte(simAnswer(t, sim, c)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		code, out, errOut = run("handoff")
	}
	if code != 0 || !strings.Contains(out, "action: multi_skill") {
		t.Fatalf("handoff night: exit %d after %d rounds\n%s\n%s", code, rounds, out, errOut)
	}
	t.Logf("multi-skill handoff night: %d rounds", rounds)
	ho := filepath.Join(work, "night-handoff")
	if err := os.Rename(night, ho); err != nil {
		t.Fatal(err)
	}
	setup()
	if code, out, errOut := run("sim"); code != 0 {
		t.Fatalf("sim night: exit %d\n%s\n%s", code, out, errOut)
	}
	proposals := 0
	for _, s := range []string{"papers", "citations"} {
		h, _ := filepath.Glob(filepath.Join(ho, "proj", ".skillfleet-sleep", "staging", "skill-"+s, "night-*"))
		m, _ := filepath.Glob(filepath.Join(night, "proj", ".skillfleet-sleep", "staging", "skill-"+s, "night-*"))
		if len(h) != 1 || len(m) != 1 {
			t.Fatalf("skill %s staged: handoff %v, sim %v", s, h, m)
		}
		for _, f := range []string{"evidence.jsonl", "proposed_SKILL.md"} {
			hb, herr := os.ReadFile(filepath.Join(h[0], f))
			mb, merr := os.ReadFile(filepath.Join(m[0], f))
			if (herr == nil) != (merr == nil) {
				t.Fatalf("skill %s %s: handoff %v, sim %v", s, f, herr, merr)
			}
			if f == "evidence.jsonl" {
				hb, mb = []byte(withoutUsage(t, hb)), []byte(withoutUsage(t, mb))
			} else if herr == nil {
				proposals++
			}
			if !bytes.Equal(hb, mb) {
				t.Fatalf("skill %s: %s differs between the handoff and the sim night", s, f)
			}
		}
	}
	if proposals == 0 {
		t.Fatal("neither night proposed a skill: nothing was compared")
	}
}

// withoutUsage is an evidence file with each line's usage left out.
func withoutUsage(t *testing.T, b []byte) string {
	t.Helper()
	var out []string
	for l := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatal(err)
		}
		delete(v, "usage")
		s, _ := json.Marshal(v)
		out = append(out, string(s))
	}
	return strings.Join(out, "\n")
}

// noPlantedSecret fails when a file under dir (the handoff directory:
// pending.json, PROMPTS.md, harvest.json, the answers) holds one of the
// researcher persona's planted secrets.
func noPlantedSecret(t *testing.T, dir string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n++
		for _, sec := range plantedSecrets {
			if strings.Contains(string(b), sec) {
				t.Errorf("%s holds the planted secret %q", p, sec)
			}
		}
		return nil
	})
	if err != nil || n < 3 {
		t.Fatalf("walking %s: %v (%d files)", dir, err, n)
	}
}
