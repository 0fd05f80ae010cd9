package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/pkg/nightly"
)

// moreAgent is one of the CLIs TestHarvestRealMoreAgentSessions drives:
// how to configure its home for sim-llm, run a prompt in a project (a new
// session, or the project's last one resumed) and where its sessions are.
type moreAgent struct {
	name, source string
	// tool is the shell tool the harvest must find used.
	tool string
	// setup configures home for sim-llm at url and returns the CLI's
	// environment besides agentEnv's.
	setup func(t *testing.T, home, url string) []string
	// argv runs prompt; resume continues the project's last session.
	argv func(home, prompt string, resume bool) []string
	// store is where the CLI keeps its sessions, which must hold the
	// planted secrets after the drive.
	store func(home string) string
	// typed is a prompt as the CLI stores what it was given.
	typed func(prompt string) string
	// opts points a harvest at home.
	opts func(home string) nightly.HarvestOptions
}

var moreAgents = []moreAgent{
	{
		name: "copilot", source: nightly.SourceCopilotCLI, tool: "bash",
		setup: func(t *testing.T, home, url string) []string {
			env := []string{"COPILOT_AUTO_UPDATE=false", "COPILOT_OFFLINE=true", "COPILOT_PROVIDER_BASE_URL=" + url + "/v1",
				"COPILOT_PROVIDER_WIRE_API=responses", "COPILOT_PROVIDER_API_KEY=" + agentPlantedKey, "COPILOT_MODEL=sim-target"}
			// The CLI's unpacked bundle, shared as the exec backend
			// shares it, instead of 235 MB unpacked into the home.
			if base, err := os.UserCacheDir(); err == nil {
				env = append(env, "COPILOT_PKG_CACHE_HOME="+filepath.Join(base, "skillfleet", "copilot"))
			}
			return env
		},
		argv: func(home, prompt string, resume bool) []string {
			a := []string{"-p", prompt, "--allow-all-tools"}
			if resume {
				ids, _ := filepath.Glob(filepath.Join(home, ".copilot", "session-state", "[0-9a-f]*-*"))
				if len(ids) > 0 {
					a = append([]string{"--resume=" + filepath.Base(ids[0])}, a...)
				}
			}
			return a
		},
		store: func(home string) string { return filepath.Join(home, ".copilot") },
		typed: func(p string) string { return p },
		opts: func(home string) nightly.HarvestOptions {
			return nightly.HarvestOptions{CopilotHome: filepath.Join(home, ".copilot")}
		},
	},
	{
		name: "pi", source: nightly.SourcePi, tool: "bash",
		setup: func(t *testing.T, home, url string) []string {
			models := `{"providers":{"sim":{"baseUrl":"` + url + `/v1","api":"openai-responses","apiKey":"SKILLFLEET_SIM_KEY","models":[{"id":"sim-target"}]}}}`
			writeTestFile(t, filepath.Join(home, ".pi", "agent", "models.json"), models)
			return []string{"SKILLFLEET_SIM_KEY=" + agentPlantedKey, "PI_OFFLINE=1", "PI_TELEMETRY=0", "PI_SKIP_VERSION_CHECK=1"}
		},
		argv: func(home, prompt string, resume bool) []string {
			if resume {
				return []string{"-p", "-c", "--model", "sim/sim-target", prompt}
			}
			return []string{"-p", "--model", "sim/sim-target", prompt}
		},
		store: func(home string) string { return filepath.Join(home, ".pi", "agent", "sessions") },
		typed: func(p string) string { return p },
		opts: func(home string) nightly.HarvestOptions {
			return nightly.HarvestOptions{PiHome: filepath.Join(home, ".pi", "agent")}
		},
	},
	{
		name: "opencode", source: nightly.SourceOpencode, tool: "bash",
		setup: func(t *testing.T, home, url string) []string {
			cfg := `{"autoupdate":false,"share":"disabled","model":"sim/sim-target",` +
				`"permission":{"bash":"allow","read":"allow","edit":"deny","webfetch":"deny","external_directory":"deny"},` +
				`"provider":{"sim":{"npm":"@ai-sdk/openai","name":"sim","models":{"sim-target":{"name":"sim-target"}},` +
				`"options":{"baseURL":"` + url + `/v1","apiKey":"{env:SKILLFLEET_SIM_KEY}"}}}}`
			writeTestFile(t, filepath.Join(home, ".config", "opencode", "opencode.json"), cfg)
			return []string{"SKILLFLEET_SIM_KEY=" + agentPlantedKey, "OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1",
				"OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_SHARE=1"}
		},
		argv: func(home, prompt string, resume bool) []string {
			if resume {
				return []string{"run", "-c", prompt}
			}
			return []string{"run", prompt}
		},
		store: func(home string) string { return filepath.Join(home, ".local", "share", "opencode") },
		// `opencode run` joins its arguments into one message, quoting
		// each that holds a space: the stored prompt is the quoted one.
		typed: func(p string) string { return `"` + p + `"` },
		opts: func(home string) nightly.HarvestOptions {
			return nightly.HarvestOptions{OpencodeDB: filepath.Join(home, ".local", "share", "opencode", "opencode.db")}
		},
	},
}

func writeTestFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestHarvestRealMoreAgentSessions drives the pinned Copilot CLI, pi and
// opencode, each in its non-interactive mode (a prompt as an argument, as
// a script or a user at a shell runs them), against sim-llm in a
// temporary home: in one project a session whose prompt holds a planted
// key and asks for a task the agent reads from task.md with its shell
// tool (the tool output holds a planted token); a harvest then reads that
// session from the CLI's own store (Copilot's session-store.db, pi's
// session files, opencode's database) and its end becomes the project's
// cursor; the session is resumed with a second prompt, and the next
// harvest, from that cursor, reads the resumed session again whole, both
// prompts in order; a session in a second project follows. Every harvest
// finds the shell tool used, redacts the key, and no planted secret is in
// the digests or in `skillfleet sleep harvest`'s tasks file and output,
// while the CLI's raw store holds both (they were planted for real).
//
// Nine CLI runs, opencode's at 13 CPU-s each: opt-in with
// SKILLFLEET_AGENT_E2E=1. What the CLIs wrote is kept in
// pkg/nightly/testdata/recorded, harvested on every run by
// TestHarvestRecordedRealSessions.
func TestHarvestRealMoreAgentSessions(t *testing.T) {
	if os.Getenv("SKILLFLEET_AGENT_E2E") != "1" {
		t.Skip("drives the real Copilot CLI, pi and opencode through sessions (nine CLI runs): set SKILLFLEET_AGENT_E2E=1 and -timeout 40m")
	}
	for _, a := range moreAgents {
		t.Run(a.name, func(t *testing.T) {
			bin := realAgentBin(t, a.name)
			t.Parallel()
			home, tmp, sim := harvestHome(t, "sf-harvest-"+a.name+"-")
			projects := []string{filepath.Join(home, "work", "webapp"), filepath.Join(home, "work", "api")}
			for _, p := range projects {
				writeTestFile(t, filepath.Join(p, "task.md"), taskFile)
			}
			env := agentEnv(home, tmp, append(a.setup(t, home, sim.URL), "NO_COLOR=1")...)
			run := func(project, prompt string, resume bool) {
				t.Helper()
				cmd := exec.Command(bin, a.argv(home, prompt, resume)...)
				cmd.Dir, cmd.Env = project, env
				start := time.Now()
				out, err := cmd.CombinedOutput()
				if err != nil || !bytes.Contains(out, []byte("<answer>")) {
					t.Fatalf("%s %q (resume %v): %v, no answer; its output:\n%s", a.name, prompt, resume, err, tailLines(string(out), 20))
				}
				t.Logf("%s: a prompt answered in %s", a.name, time.Since(start).Round(time.Second))
			}
			harvest := func(cursors map[string]time.Time) []nightly.Digest {
				t.Helper()
				o := a.opts(home)
				o.Source, o.Projects, o.Cursors, o.Now, o.Lookback = a.source, projects, cursors, time.Now(), time.Hour
				ds, sk, err := nightly.Harvest(o)
				if err != nil {
					t.Fatal(err)
				}
				if sk.Unreadable != 0 || sk.MalformedLines != 0 {
					t.Errorf("harvest skipped %+v", sk)
				}
				b, _ := json.Marshal(ds)
				noSecrets(t, "the digests", b)
				return ds
			}
			// want checks the one session of project in ds: its prompts and,
			// in the first project (whose task the agent read from
			// task.md), the shell tool.
			want := func(ds []nightly.Digest, project string, prompts ...string) nightly.Digest {
				t.Helper()
				var mine []nightly.Digest
				for _, d := range ds {
					if d.Project == project {
						mine = append(mine, d)
					}
				}
				if len(mine) != 1 {
					t.Fatalf("harvest of %s: %d sessions %+v, want one", project, len(mine), mine)
				}
				var w []string
				for _, p := range prompts {
					w = append(w, strings.ReplaceAll(a.typed(p), plantedPromptKey, "[REDACTED:api_key]"))
				}
				d := mine[0]
				if !slices.Equal(d.UserPrompts, w) {
					t.Errorf("harvested prompts\n%q\nwant\n%q", d.UserPrompts, w)
				}
				if project == projects[0] && !slices.Contains(d.ToolsUsed, a.tool) {
					t.Errorf("tools used %v, want %s among them", d.ToolsUsed, a.tool)
				}
				if d.NAssistantTurns == 0 || len(d.AssistantFinals) == 0 || d.EndedAt.IsZero() {
					t.Errorf("session %s: %d assistant turns, finals %q, end %v", d.SessionID, d.NAssistantTurns, d.AssistantFinals, d.EndedAt)
				}
				return d
			}

			run(projects[0], firstPrompt, false)
			first := want(harvest(nil), projects[0], firstPrompt)
			cursors := map[string]time.Time{projects[0]: first.EndedAt}
			if ds := harvest(cursors); len(ds) != 0 {
				t.Fatalf("from the cursor at the session's end, the harvest read %d sessions again", len(ds))
			}
			second := "no, that is wrong: give it as a plain number. " + simQuestion(4821)
			run(projects[0], second, true)
			resumed := want(harvest(cursors), projects[0], firstPrompt, second)
			if resumed.SessionID != first.SessionID || !resumed.EndedAt.After(first.EndedAt) {
				t.Errorf("resumed: session %s ending %v, want session %s ending after %v", resumed.SessionID, resumed.EndedAt, first.SessionID, first.EndedAt)
			}
			third := simQuestion(5150)
			run(projects[1], third, false)
			all := harvest(nil)
			want(all, projects[0], firstPrompt, second)
			want(all, projects[1], third)

			// The raw store holds both secrets: they were planted for real.
			for _, secret := range []string{plantedPromptKey, plantedToolToken} {
				if !treeHolds(a.store(home), secret) {
					t.Fatalf("nothing under %s holds %q: the planting did not reach the CLI's store", a.store(home), secret)
				}
			}
			// The harvest command: no secret in what it writes or prints.
			state := filepath.Join(home, "state")
			for _, p := range projects {
				tasks := filepath.Join(state, filepath.Base(p)+"-tasks.json")
				out := runSleepBinary(t, home, "sleep", "harvest", "--source", a.source, "--heuristic-mine", "--output", tasks,
					"--project", p, "--state-dir", state, "--lookback-hours", "1")
				noSecrets(t, "sleep harvest's output", []byte(out))
				noSecrets(t, tasks, readFile(t, tasks))
				if !strings.Contains(out, "harvested 1 sessions") {
					t.Errorf("sleep harvest --project %s: %s", p, out)
				}
			}
			t.Logf("%s: %d sessions harvested; the resumed one read again from the cursor", a.name, len(all))
		})
	}
}

// treeHolds reports whether a regular file under root holds s.
func treeHolds(root, s string) bool {
	found := false
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || found || !d.Type().IsRegular() {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(s)) {
			found = true
		}
		return nil
	})
	return found
}
