package main

import (
	"database/sql"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// TestSleepHarvestNewSources runs `skillfleet sleep harvest` on a home
// holding a session of each source read since SkillOpt-Sleep's six (the
// fixtures of pkg/nightly: Copilot Chat in VS Code, the Copilot CLI's
// store, pi, opencode's database): with --source each yields the tasks
// of its sessions of the project, the planted secrets redacted; all of
// them at once yield every one.
func TestSleepHarvestNewSources(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	src := filepath.Join("..", "..", "pkg", "nightly", "testdata")
	err := filepath.WalkDir(filepath.Join(src, "agents"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(filepath.Join(src, "agents"), p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(home, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(home, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	load := func(db, script string) {
		if err := os.MkdirAll(filepath.Dir(db), 0o755); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(src, script))
		if err != nil {
			t.Fatal(err)
		}
		d, err := sql.Open("sqlite", db)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if _, err := d.Exec(string(b)); err != nil {
			t.Fatalf("%s: %v", script, err)
		}
	}
	load(filepath.Join(home, ".copilot", "session-store.db"), "copilot-cli.sql")
	load(filepath.Join(home, ".local", "share", "opencode", "opencode.db"), "opencode.sql")
	if err := os.MkdirAll(filepath.Join(home, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}

	// The lookback reaches every fixture session, the Copilot CLI's one
	// that ended before the fixtures' lookback among them.
	want := map[string][]string{
		"copilot":     {"Add retries to the upload client; AWS key [REDACTED:aws_key]"},
		"copilot_cli": {"Bump the Go version in CI; the deploy key is [REDACTED:aws_key]", "OLD-SESSION prompt"},
		"pi":          {"Make the CSV export stream rows instead of buffering; my token is [REDACTED:github_token]"},
		"opencode":    {"Speed up the image resize; my OpenAI key is [REDACTED:api_key]"},
	}
	harvest := func(source string) []string {
		out := filepath.Join(home, source+"-tasks.json")
		stdout := runSleepBinary(t, home, "sleep", "harvest", "--source", source, "--heuristic-mine", "--output", out,
			"--project", "/home/dev/webapp", "--lookback-hours", "100000", "--state-dir", filepath.Join(home, "state-"+source))
		b := readFile(t, out)
		for _, secret := range []string{"AKIAIOSFODNN7EXAMPLE", "ghp_abcdef", "sk-proj-AbCd"} {
			if strings.Contains(string(b), secret) || strings.Contains(stdout, secret) {
				t.Errorf("%s: a planted secret reached the tasks file or the output", source)
			}
		}
		var f struct {
			Tasks []struct{ Intent string }
		}
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		var intents []string
		for _, tk := range f.Tasks {
			intents = append(intents, tk.Intent)
		}
		slices.Sort(intents)
		return intents
	}
	var all []string
	for source, intents := range want {
		if got := harvest(source); !slices.Equal(got, intents) {
			t.Errorf("--source %s: tasks %q, want %q", source, got, intents)
		}
		all = append(all, intents...)
	}
	slices.Sort(all)
	if got := harvest("all"); !slices.Equal(got, all) {
		t.Errorf("--source all: tasks %q, want %q", got, all)
	}
}
