package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	simmodel "github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/pkg/nightly"
)

// The secrets planted in the real CLIs' sessions: one typed in a prompt,
// one in a file the agent reads with a tool (so it is in a tool output).
const (
	plantedPromptKey = "sk-proj-PlantedPromptKey0123456789abcdef"
	plantedToolToken = "ghp_PlantedToolOutput0123456789abcdefABCDEF"
)

// tui drives one interactive agent CLI in a tmux server of its own.
type tui struct {
	t      *testing.T
	sock   string
	what   string
	exited string
}

// startTUI runs argv in dir under env (nothing else of the test's
// environment) on a 200x50 terminal, the tmux server's socket in sockDir.
func startTUI(t *testing.T, what, dir, sockDir string, env []string, argv ...string) *tui {
	t.Helper()
	u := &tui{t: t, sock: filepath.Join(sockDir, fmt.Sprintf("tmux-%d", time.Now().UnixNano())), what: what, exited: "SKILLFLEET-TUI-EXITED"}
	// The CLI, then a marker when it exits; the shell keeps the pane.
	script := "cd " + shellQuote(dir) + " && env -i"
	for _, e := range env {
		script += " " + shellQuote(e)
	}
	for _, a := range argv {
		script += " " + shellQuote(a)
	}
	script += "; echo; echo " + u.exited + " $?; sleep 3600"
	cmd := exec.Command("tmux", "-S", u.sock, "-f", "/dev/null", "new-session", "-d", "-x", "200", "-y", "50", "sh", "-c", script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", u.sock, "kill-server").Run() })
	return u
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func (u *tui) screen() string {
	out, _ := exec.Command("tmux", "-S", u.sock, "capture-pane", "-p").Output()
	return string(out)
}

func (u *tui) keys(k ...string) {
	u.t.Helper()
	if out, err := exec.Command("tmux", append([]string{"-S", u.sock, "send-keys"}, k...)...).CombinedOutput(); err != nil {
		u.t.Fatalf("tmux send-keys: %v\n%s", err, out)
	}
}

// typeLine types text and presses Enter. A CLI that has just ended a
// turn may still be redrawing and drop keys (on a loaded machine Codex
// lost a whole line that way), so it waits for the screen to settle,
// and presses Enter only once the text shows in the input; a line that
// does not show in 10 s is typed again. An Enter can be lost the same
// way (Codex kept a typed line in its input for minutes), so while taken
// does not hold 15 s after it, Enter is pressed again, three times at
// most: on an input already sent, Enter sends nothing.
func (u *tui) typeLine(text string, taken func() bool) {
	u.t.Helper()
	u.settle(10 * time.Second)
	probe := text
	if len(probe) > 40 {
		probe = probe[:40]
	}
	for attempt := 1; ; attempt++ {
		u.keys("-l", text)
		if u.shows(probe, 10*time.Second) {
			break
		}
		if attempt == 3 {
			u.t.Fatalf("%s: %q typed %d times never showed; its screen:\n%s", u.what, probe, attempt, u.screen())
		}
	}
	time.Sleep(300 * time.Millisecond)
	for range 3 {
		u.keys("Enter")
		for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
			if taken() {
				return
			}
		}
		u.t.Logf("%s: %q not taken 15 s after Enter: pressing it again", u.what, probe)
	}
}

// grew returns a taken condition for [tui.typeLine]: the session files
// under root have more lines than now (the CLI recorded the message).
func grew(root string) func() bool {
	all := func(line []byte) bool { return true }
	n := countLines(root, all)
	return func() bool { return countLines(root, all) > n }
}

// settle waits, at most limit, until two captures a second apart agree.
func (u *tui) settle(limit time.Duration) {
	prev := u.screen()
	for end := time.Now().Add(limit); time.Now().Before(end); {
		time.Sleep(time.Second)
		cur := u.screen()
		if cur == prev {
			return
		}
		prev = cur
	}
}

// shows reports whether the screen shows text within limit.
func (u *tui) shows(text string, limit time.Duration) bool {
	for end := time.Now().Add(limit); ; {
		if strings.Contains(u.screen(), text) {
			return true
		}
		if time.Now().After(end) {
			return false
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// tuiDialogs are the questions the CLIs ask on a first start that a
// configured home does not settle, each with the keys that answer it.
var tuiDialogs = []struct {
	text string
	keys []string
}{
	// Claude Code offers auto mode over "don't ask": keep don't ask.
	{"set auto mode as my default permission mode", []string{"Down", "Enter"}},
}

// waitFor polls until done holds, answering the known dialogs; it fails,
// with the screen, after limit.
func (u *tui) waitFor(what string, limit time.Duration, done func() bool) {
	u.t.Helper()
	deadline := time.Now().Add(limit)
	for !done() {
		s := u.screen()
		// It may have ended what was waited for between done and screen.
		if strings.Contains(s, u.exited) && !done() {
			u.t.Fatalf("%s exited while waiting for %s; its screen:\n%s", u.what, what, s)
		}
		for _, d := range tuiDialogs {
			if strings.Contains(s, d.text) {
				u.keys(d.keys...)
			}
		}
		if time.Now().After(deadline) {
			u.t.Fatalf("%s: no %s after %s; its screen:\n%s", u.what, what, limit, s)
		}
		time.Sleep(time.Second)
	}
}

// exit types the CLI's quit command and waits for it to end.
func (u *tui) exit(cmd string) {
	u.t.Helper()
	u.typeLine(cmd, func() bool { return strings.Contains(u.screen(), u.exited) })
	u.waitFor("exit after "+cmd, 2*time.Minute, func() bool { return strings.Contains(u.screen(), u.exited+" 0") })
}

// jsonlFiles lists the .jsonl files under root.
func jsonlFiles(root string) []string {
	var out []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && strings.HasSuffix(p, ".jsonl") {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// countLines counts the lines of the .jsonl files under root that match.
func countLines(root string, match func(line []byte) bool) int {
	n := 0
	for _, f := range jsonlFiles(root) {
		b, _ := os.ReadFile(f)
		for _, l := range bytes.Split(b, []byte("\n")) {
			if len(l) > 0 && match(l) {
				n++
			}
		}
	}
	return n
}

// recordShapes summarises a session file's records: each type (with the
// payload or event type under it) and how often it occurs, and each
// top-level key seen. A failing harvest prints it, so that a change of
// the CLI's format shows as a change of these shapes.
func recordShapes(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	kinds := map[string]int{}
	keys := map[string]bool{}
	for _, l := range bytes.Split(b, []byte("\n")) {
		var r map[string]json.RawMessage
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		if err := json.Unmarshal(l, &r); err != nil {
			kinds[fmt.Sprintf("<not a JSON object: %q…>", l[:min(len(l), 60)])]++
			continue
		}
		var typ string
		_ = json.Unmarshal(r["type"], &typ)
		var sub struct {
			Type string `json:"type"`
			Role string `json:"role"`
		}
		_ = json.Unmarshal(r["payload"], &sub)
		if sub.Type == "" {
			_ = json.Unmarshal(r["message"], &sub)
		}
		k := typ
		if sub.Type != "" || sub.Role != "" {
			k += "/" + sub.Type + "/" + sub.Role
		}
		kinds[k]++
		for key := range r {
			keys[key] = true
		}
	}
	var parts []string
	for k, n := range kinds {
		parts = append(parts, fmt.Sprintf("%s×%d", k, n))
	}
	sort.Strings(parts)
	var ks []string
	for k := range keys {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return fmt.Sprintf("%s: records %s; keys %s", path, strings.Join(parts, " "), strings.Join(ks, " "))
}

// agentSessions is what one CLI was driven through.
type agentSessions struct {
	// prompts are the user's prompts by project, in the order typed.
	prompts map[string][]string
	// root is where the CLI keeps its session files.
	root string
	// tool is the tool the harvest must find used.
	tool string
}

// Prompts of the sessions: the first asks for the task in task.md (the
// agent reads it with a tool: the tool output holds plantedToolToken), the
// others carry a sim question inline.
func simQuestion(v int) string {
	return fmt.Sprintf("Note the serial code. Record value: %d. Answer inside <answer></answer>.", v)
}

var firstPrompt = "The task is in task.md; my API key is " + plantedPromptKey + ", keep it out of the answer."

// taskFile holds the token before the question: the sim takes the
// question from the paragraph that ends with the answer instruction.
const taskFile = "The deploy token is " + plantedToolToken + "\n\nNote the route length. It also refers to the serial code. Record value: 4821. Answer inside <answer></answer>.\n"

// TestHarvestRealAgentSessions drives the pinned Claude Code and Codex
// CLIs, interactively (in tmux, as a user types), through sessions
// against sim-llm in a temporary home: in one project a session whose
// first prompt holds a planted key and asks for a task the agent reads
// from task.md with its shell tool (the tool output holds a planted
// token), a second prompt in it, then the same session resumed with a
// third prompt; in another project one more session. The harvest then
// reads the CLIs' own ~/.claude and ~/.codex: every session file the CLIs
// wrote is found (none skipped), the prompts typed come out in order with
// the key redacted, the shell tool is seen, and neither secret is in the
// digests, in `skillfleet sleep harvest`'s tasks file or output, or in
// anything a night (sim backend) writes or prints. The raw files hold
// both secrets (the test plants them where the CLIs really keep them).
// When a CLI's format changes, the failure prints each session file's
// record shapes.
func TestHarvestRealAgentSessions(t *testing.T) {
	requireAgents(t)
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("SKILLFLEET_REQUIRE_AGENTS") == "1" {
			t.Fatal("tmux not found (SKILLFLEET_REQUIRE_AGENTS=1): apt-get install tmux")
		}
		t.Skip("tmux not found: apt-get install tmux")
	}
	t.Parallel()
	home, tmp, sim := harvestHome(t, "sf-harvest-home-")
	projects := []string{filepath.Join(home, "work", "webapp"), filepath.Join(home, "work", "api")}
	for _, p := range projects {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "task.md"), []byte(taskFile), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	got := map[string]*agentSessions{}
	var mu sync.Mutex
	t.Run("sessions", func(t *testing.T) {
		for name, drive := range map[string]func(*testing.T, string, string, string, []string) *agentSessions{"claude": driveClaude, "codex": driveCodex} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				s := drive(t, home, tmp, sim.URL, projects)
				mu.Lock()
				got[name] = s
				mu.Unlock()
			})
		}
	})
	if t.Failed() {
		return
	}

	// The raw files hold both secrets: they were planted for real.
	for name, s := range got {
		for _, secret := range []string{plantedPromptKey, plantedToolToken} {
			if countLines(s.root, func(l []byte) bool { return bytes.Contains(l, []byte(secret)) }) == 0 {
				t.Fatalf("%s: no session file under %s holds %q: the planting did not reach the CLI's files", name, s.root, secret)
			}
		}
	}

	ds, sk, err := nightly.Harvest(nightly.HarvestOptions{ClaudeHome: filepath.Join(home, ".claude"), CodexHome: filepath.Join(home, ".codex"),
		CursorHome: filepath.Join(home, ".cursor"), Projects: projects, Now: time.Now(), Lookback: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range got {
		src := map[string]string{"claude": nightly.SourceClaude, "codex": nightly.SourceCodex}[name]
		files := jsonlFiles(s.root)
		var shapes []string
		for _, f := range files {
			shapes = append(shapes, recordShapes(f))
		}
		why := fmt.Sprintf("harvest skipped %+v; the %s session files:\n%s", sk, name, strings.Join(shapes, "\n"))
		var mine []nightly.Digest
		for _, d := range ds {
			if d.Source == src {
				mine = append(mine, d)
			}
		}
		// Every session file the CLI wrote is a harvested session.
		var paths []string
		for _, d := range mine {
			paths = append(paths, d.RawPath)
		}
		sort.Strings(paths)
		if !slices.Equal(paths, files) {
			t.Errorf("%s: harvested sessions from %v, want one from each session file the CLI wrote %v; %s", name, paths, files, why)
			continue
		}
		// The prompts typed, by project, in order, the key redacted.
		for _, p := range projects {
			var prompts []string
			var tools []string
			var byStart []nightly.Digest
			for _, d := range mine {
				if d.Project == p {
					byStart = append(byStart, d)
				}
			}
			sort.Slice(byStart, func(i, j int) bool { return byStart[i].StartedAt.Before(byStart[j].StartedAt) })
			for _, d := range byStart {
				prompts = append(prompts, d.UserPrompts...)
				tools = append(tools, d.ToolsUsed...)
				if d.NAssistantTurns == 0 || len(d.AssistantFinals) == 0 {
					t.Errorf("%s: session %s has no assistant turn; %s", name, d.SessionID, why)
				}
			}
			var want []string
			for _, w := range s.prompts[p] {
				want = append(want, strings.ReplaceAll(w, plantedPromptKey, "[REDACTED:api_key]"))
			}
			if !slices.Equal(prompts, want) {
				t.Errorf("%s, project %s: harvested prompts\n%q\nwant\n%q\n%s", name, p, prompts, want, why)
			}
			if !slices.Contains(tools, s.tool) {
				t.Errorf("%s, project %s: tools used %v, want %s among them; %s", name, p, tools, s.tool, why)
			}
		}
	}
	b, _ := json.Marshal(ds)
	noSecrets(t, "the digests", b)

	// The harvest command and a night on the sim backend: no secret in
	// anything they write or print.
	state := t.TempDir()
	for _, p := range projects {
		common := []string{"--claude-home", filepath.Join(home, ".claude"), "--codex-home", filepath.Join(home, ".codex"),
			"--cursor-home", filepath.Join(home, ".cursor"), "--project", p, "--state-dir", state, "--lookback-hours", "1",
			"--skill-path", filepath.Join(state, "skills", filepath.Base(p), "SKILL.md")}
		tasks := filepath.Join(state, filepath.Base(p)+"-tasks.json")
		out := runSleepBinary(t, home, append([]string{"sleep", "harvest", "--output", tasks}, common...)...)
		noSecrets(t, "sleep harvest's output", []byte(out))
		if !strings.Contains(out, "harvested 2 sessions") && !strings.Contains(out, "harvested 3 sessions") && !strings.Contains(out, "harvested 4 sessions") {
			t.Errorf("sleep harvest --project %s: %s", p, out)
		}
		out = runSleepBinary(t, home, append([]string{"sleep", "run", "--backend", "sim", "--heuristic-mine"}, common...)...)
		noSecrets(t, "sleep run's output", []byte(out))
		t.Logf("night on %s:\n%s", p, out)
	}
	scanned := 0
	for _, dir := range append([]string{state}, projects...) {
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() || filepath.Base(p) == "task.md" {
				return nil
			}
			b, err := os.ReadFile(p)
			if err == nil {
				scanned++
				noSecrets(t, p, b)
			}
			return nil
		})
	}
	if scanned < 6 {
		t.Errorf("%d files scanned for secrets: the harvest and nights wrote too little", scanned)
	}
	t.Logf("%d sessions harvested (%+v skipped); no planted secret in the digests or in %d files the harvest and nights wrote", len(ds), sk, scanned)
}

func noSecrets(t *testing.T, where string, b []byte) {
	t.Helper()
	for _, s := range []string{plantedPromptKey, plantedToolToken, agentPlantedKey} {
		if bytes.Contains(b, []byte(s)) {
			t.Errorf("%s holds the planted %q", where, s)
		}
	}
}

// runSleepBinary runs the skillfleet binary with HOME=home.
func runSleepBinary(t *testing.T, home string, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + filepath.Join(home, "tmp")}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("skillfleet %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// claudeAnswer matches a Claude Code record of an assistant reply with
// an answer.
func claudeAnswer(l []byte) bool {
	return bytes.Contains(l, []byte(`"type":"assistant"`)) && bytes.Contains(l, []byte("<answer>"))
}

// driveClaude runs Claude Code's sessions and returns what was typed.
func driveClaude(t *testing.T, home, tmp, simURL string, projects []string) *agentSessions {
	// A configured home: onboarding done, the projects trusted, the key
	// approved, the read and shell tools allowed without asking.
	cfg := map[string]any{"hasCompletedOnboarding": true, "theme": "dark",
		"customApiKeyResponses": map[string]any{"approved": []string{agentPlantedKey[len(agentPlantedKey)-20:]}, "rejected": []string{}},
		"projects":              map[string]any{}}
	for _, p := range projects {
		cfg["projects"].(map[string]any)[p] = map[string]any{"hasTrustDialogAccepted": true}
	}
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".claude", "settings.json"),
		[]byte(`{"permissions":{"defaultMode":"dontAsk","allow":["Read","Bash"]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	env := agentEnv(home, tmp, "ANTHROPIC_BASE_URL="+simURL, "ANTHROPIC_API_KEY="+agentPlantedKey, "TERM=xterm-256color")
	root := filepath.Join(home, ".claude", "projects")
	answers := func() int { return countLines(root, claudeAnswer) }
	bin := agentCLI(t, "claude")
	s := &agentSessions{prompts: map[string][]string{}, root: root, tool: "Bash"}

	// A session in the first project: the task file, then a correction.
	u := startTUI(t, "claude", projects[0], tmp, env, bin, "--model", "sim-target", firstPrompt)
	u.waitFor("the first answer", 4*time.Minute, func() bool { return answers() >= 1 })
	second := "no, that is wrong: give it as a plain number. " + simQuestion(4821)
	u.typeLine(second, grew(root))
	u.waitFor("the second answer", 3*time.Minute, func() bool { return answers() >= 2 })
	u.exit("/exit")
	s.prompts[projects[0]] = []string{firstPrompt, second}
	files := jsonlFiles(root)
	if len(files) != 1 {
		t.Fatalf("claude wrote %v, want one session file", files)
	}
	id := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")

	// The same session resumed.
	third := "thanks. " + simQuestion(5150)
	u = startTUI(t, "claude --resume", projects[0], tmp, env, bin, "--model", "sim-target", "--resume", id, third)
	u.waitFor("the resumed session's answer", 4*time.Minute, func() bool { return answers() >= 3 })
	u.exit("/exit")
	s.prompts[projects[0]] = append(s.prompts[projects[0]], third)

	// A session in the second project.
	u = startTUI(t, "claude (second project)", projects[1], tmp, env, bin, "--model", "sim-target", firstPrompt)
	u.waitFor("the answer", 4*time.Minute, func() bool { return answers() >= 4 })
	u.exit("/exit")
	s.prompts[projects[1]] = []string{firstPrompt}
	return s
}

// driveCodex runs Codex's sessions and returns what was typed.
func driveCodex(t *testing.T, home, tmp, simURL string, projects []string) *agentSessions {
	// A configured home: sim-llm as the provider (its key from the
	// environment), the projects trusted, commands run without approval
	// and without Codex's sandbox (sim-llm only asks to read task.md),
	// no background app-server daemon (it would outlive the test).
	var b strings.Builder
	fmt.Fprintf(&b, "model = \"sim-target\"\nmodel_provider = \"sim\"\napproval_policy = \"never\"\nsandbox_mode = \"danger-full-access\"\n\n")
	fmt.Fprintf(&b, "[model_providers.sim]\nname = \"sim\"\nbase_url = %q\nwire_api = \"responses\"\nenv_key = \"SKILLFLEET_SIM_KEY\"\n\n", simURL+"/v1")
	b.WriteString("[features]\nshell_snapshot = false\nplugins = false\nremote_plugin = false\napps = false\ndaemon_auto_start = false\n\n")
	for _, p := range projects {
		fmt.Fprintf(&b, "[projects.%q]\ntrust_level = \"trusted\"\n\n", p)
	}
	if err := os.MkdirAll(filepath.Join(home, ".codex"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".codex", "config.toml"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	env := agentEnv(home, tmp, "SKILLFLEET_SIM_KEY="+agentPlantedKey, "TERM=xterm-256color")
	root := filepath.Join(home, ".codex", "sessions")
	done := func() int {
		return countLines(root, func(l []byte) bool { return bytes.Contains(l, []byte(`"type":"task_complete"`)) })
	}
	bin := agentCLI(t, "codex")
	s := &agentSessions{prompts: map[string][]string{}, root: root, tool: "exec_command"}

	u := startTUI(t, "codex", projects[0], tmp, env, bin, firstPrompt)
	u.waitFor("the first turn's end", 4*time.Minute, func() bool { return done() >= 1 })
	second := "no, that is wrong: give it as a plain number. " + simQuestion(4821)
	u.typeLine(second, grew(root))
	u.waitFor("the second turn's end", 3*time.Minute, func() bool { return done() >= 2 })
	u.exit("/quit")
	s.prompts[projects[0]] = []string{firstPrompt, second}
	files := jsonlFiles(root)
	if len(files) != 1 {
		t.Fatalf("codex wrote %v, want one session file", files)
	}
	var meta struct {
		Payload struct {
			ID string `json:"id"`
		} `json:"payload"`
	}
	f, err := os.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 4<<20)
	if sc.Scan() {
		_ = json.Unmarshal(sc.Bytes(), &meta)
	}
	f.Close()
	if meta.Payload.ID == "" {
		t.Fatalf("codex session file %s: its first line names no session id: %s", files[0], recordShapes(files[0]))
	}

	third := "thanks. " + simQuestion(5150)
	u = startTUI(t, "codex resume", projects[0], tmp, env, bin, "resume", meta.Payload.ID, third)
	u.waitFor("the resumed session's turn end", 4*time.Minute, func() bool { return done() >= 3 })
	u.exit("/quit")
	s.prompts[projects[0]] = append(s.prompts[projects[0]], third)

	u = startTUI(t, "codex (second project)", projects[1], tmp, env, bin, firstPrompt)
	u.waitFor("the turn's end", 4*time.Minute, func() bool { return done() >= 4 })
	u.exit("/quit")
	s.prompts[projects[1]] = []string{firstPrompt}
	return s
}

// harvestHome makes a home directory (under a name starting with prefix,
// removed after the test) with a tmp directory in it, and a sim model
// server that takes agentPlantedKey as its API key.
func harvestHome(t *testing.T, prefix string) (home, tmp string, sim *httptest.Server) {
	t.Helper()
	home, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	tmp = filepath.Join(home, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	sim = httptest.NewServer(simmodel.NewServer(simmodel.New(simmodel.Options{Epsilon: -1, HarmSpill: -1, LengthBudget: -1}),
		simmodel.ServerOptions{APIKey: agentPlantedKey}))
	t.Cleanup(sim.Close)
	return home, tmp, sim
}

// TestTUIDriverPressesALostEnterAgain: the terminal driver's typeLine,
// against a program that echoes what is typed and ignores the first
// Enter (as a loaded Codex did), presses Enter again and the line is
// recorded once.
func TestTUIDriverPressesALostEnterAgain(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not found: apt-get install tmux")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	dir := t.TempDir()
	const lossy = `import os, tty
tty.setraw(0)
line, enters = b"", 0
while True:
    c = os.read(0, 1)
    if c == b"\r":
        enters += 1
        if enters >= 2 and line:
            with open("session.jsonl", "ab") as f:
                f.write(line + b"\n")
            line = b""
            os.write(1, b"\r\n")
    else:
        line += c
        os.write(1, c)
`
	u := startTUI(t, "lossy", dir, dir, nil, py, "-c", lossy)
	u.typeLine("a line the first Enter loses", grew(dir))
	b, err := os.ReadFile(filepath.Join(dir, "session.jsonl"))
	if err != nil || string(b) != "a line the first Enter loses\n" {
		t.Fatalf("recorded %q (%v), want the typed line once", b, err)
	}
}
