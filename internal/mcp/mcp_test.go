package mcp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeSkillfleet prints its working directory and arguments, one a line,
// and exits 3 for adopt (as the real one does with nothing to adopt).
func fakeSkillfleet(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "skillfleet")
	script := "#!/bin/sh\necho \"cwd=$PWD\"\nfor a in \"$@\"; do echo \"arg=$a\"; done\necho warn >&2\n[ \"$2\" = adopt ] && exit 3\nexit 0\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// connect serves New(o) to an SDK client over in-memory transports.
func connect(t *testing.T, o Options) *mcp.ClientSession {
	t.Helper()
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, ct := mcp.NewInMemoryTransports()
	if _, err := s.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil)
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, Result) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var r Result
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
	}
	return res, r
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestToolsRunTheSleepCommands(t *testing.T) {
	proj, other, state := t.TempDir(), t.TempDir(), t.TempDir()
	o := Options{Skillfleet: fakeSkillfleet(t), StateDir: state, Project: proj, Version: "1.0.0",
		Args: []string{"--backend", "sim"}, RunArgs: []string{"--target-backend", "codex_exec"}}
	cs := connect(t, o)

	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range lt.Tools {
		names = append(names, tl.Name)
		if tl.Description == "" || tl.InputSchema == nil {
			t.Errorf("%s: no description or input schema", tl.Name)
		}
	}
	slices.Sort(names)
	want := slices.Clone(Tools())
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("tools/list = %v, want %v", names, want)
	}

	cases := []struct {
		tool string
		args map[string]any
		dir  string
		want []string
	}{
		{"sleep_status", nil, proj, []string{"sleep", "status", "--json", "--project", proj, "--state-dir", state, "--backend", "sim"}},
		{"sleep_run", map[string]any{"project": other}, other,
			[]string{"sleep", "run", "--project", other, "--state-dir", state, "--backend", "sim", "--target-backend", "codex_exec"}},
		{"sleep_dry_run", nil, proj, []string{"sleep", "dry-run", "--project", proj, "--state-dir", state, "--backend", "sim", "--target-backend", "codex_exec"}},
		{"sleep_harvest", nil, proj, []string{"sleep", "harvest", "--output", filepath.Join(state, "harvest-tasks.json"), "--project", proj, "--state-dir", state, "--backend", "sim"}},
		{"sleep_schedule", map[string]any{"at": "02:05"}, proj,
			[]string{"sleep", "schedule", "--at", "02:05", "--project", proj, "--state-dir", state, "--backend", "sim", "--target-backend", "codex_exec"}},
		{"sleep_unschedule", nil, proj, []string{"sleep", "unschedule", "--project", proj, "--state-dir", state, "--backend", "sim"}},
	}
	for _, c := range cases {
		res, r := call(t, cs, c.tool, c.args)
		if res.IsError || r.ExitCode != 0 {
			t.Errorf("%s: error result %s", c.tool, text(res))
		}
		if !slices.Equal(r.Command, c.want) {
			t.Errorf("%s: ran %q, want %q", c.tool, r.Command, c.want)
		}
		wantOut := "cwd=" + c.dir + "\n"
		for _, a := range c.want {
			wantOut += "arg=" + a + "\n"
		}
		if r.Stdout != wantOut || r.Stderr != "warn\n" || !strings.Contains(text(res), wantOut) {
			t.Errorf("%s: stdout %q stderr %q text %q; want stdout %q", c.tool, r.Stdout, r.Stderr, text(res), wantOut)
		}
	}

	// A command that exits non-zero is an error result with its exit code.
	res, r := call(t, cs, "sleep_adopt", map[string]any{"undo": true})
	if !res.IsError || r.ExitCode != 3 || !slices.Contains(r.Command, "--undo") || !strings.Contains(text(res), "exited 3") {
		t.Errorf("sleep_adopt: error %v exit %d command %q text %q; want an error result, exit 3, --undo", res.IsError, r.ExitCode, r.Command, text(res))
	}

	// Bad arguments are refused before anything runs.
	for _, bad := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"sleep_status", map[string]any{"project": "relative/dir"}, "want an absolute path"},
		{"sleep_status", map[string]any{"project": filepath.Join(proj, "missing")}, "not a directory"},
		{"sleep_schedule", map[string]any{"at": "25:00"}, "want HH:MM"},
		{"sleep_adopt", map[string]any{"staging": "x"}, "want an absolute path"},
		{"sleep_harvest", map[string]any{"output": "tasks.json"}, "want an absolute path"},
	} {
		res, r := call(t, cs, bad.tool, bad.args)
		if !res.IsError || !strings.Contains(text(res), bad.want) || r.Command != nil {
			t.Errorf("%s %v: error %v %q, ran %q; want an error naming %q and nothing run", bad.tool, bad.args, res.IsError, text(res), r.Command, bad.want)
		}
	}
}

func TestNewRefusesRelativePaths(t *testing.T) {
	abs := t.TempDir()
	for _, o := range []Options{
		{Skillfleet: "skillfleet", StateDir: abs, Project: abs},
		{Skillfleet: abs, StateDir: "state", Project: abs},
		{Skillfleet: abs, StateDir: abs, Project: ""},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v): no error", o)
		}
	}
}
