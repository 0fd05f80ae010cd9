// Package mcp serves skillfleet sleep's commands as the tools of a Model
// Context Protocol server (stdio), on the protocol's official Go SDK, so
// that any agent that speaks MCP (the Copilot CLI, Cursor, Claude Code,
// Codex) can run a night, read its status and adopt its proposal from
// inside a session.
//
// Each tool runs one `skillfleet sleep` command as a child process of the
// skillfleet binary, in the project's directory, with the server's fixed
// flags (the state directory, the night's backend and model, the replay
// target's flags) and the few arguments the tool takes. The command's
// exit code, standard output and standard error are the tool's result; a
// non-zero exit is a tool error the model can read, not a protocol error.
// The sleep commands redact secrets from what they print; no argument of
// a tool reaches a shell.
package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Name is the server's name, the key under which agents register it.
const Name = "skillfleet-sleep"

// Options configure the server.
type Options struct {
	// Skillfleet is the skillfleet binary the tools run (absolute).
	Skillfleet string
	// StateDir is the sleep state directory (absolute).
	StateDir string
	// Project is the project a tool call without one works on (absolute;
	// normally the directory the agent started the server in).
	Project string
	// Args are flags given to every sleep command (--backend sim, ...).
	Args []string
	// RunArgs are the replay target's flags, given to run, dry-run and
	// schedule only (the commands that replay).
	RunArgs []string
	// Version is skillfleet's, reported to the client.
	Version string
}

// Result is a tool's structured result: what the command did.
type Result struct {
	// Command is the sleep command run, without the binary.
	Command  []string `json:"command"`
	ExitCode int      `json:"exit_code"`
	Stdout   string   `json:"stdout"`
	Stderr   string   `json:"stderr,omitempty"`
}

// ProjectArg is the argument every tool takes.
type ProjectArg struct {
	Project string `json:"project,omitempty" jsonschema:"absolute path of the project (default: the directory the server runs in)"`
}

type adoptArgs struct {
	ProjectArg
	Staging string `json:"staging,omitempty" jsonschema:"a staging directory to adopt instead of the project's latest accepted proposal"`
	Undo    bool   `json:"undo,omitempty" jsonschema:"put back the files the last adopt replaced"`
}

type scheduleArgs struct {
	ProjectArg
	At string `json:"at,omitempty" jsonschema:"time of day of the nightly run, HH:MM (default 03:17)"`
}

type harvestArgs struct {
	ProjectArg
	Output string `json:"output,omitempty" jsonschema:"where to write the mined tasks file (default: harvest-tasks.json in the state directory)"`
}

var clock = regexp.MustCompile(`^([01][0-9]|2[0-3]):[0-5][0-9]$`)

// New returns the server with its tools.
func New(o Options) (*mcp.Server, error) {
	for _, p := range []struct{ name, v string }{{"skillfleet binary", o.Skillfleet}, {"state dir", o.StateDir}, {"project", o.Project}} {
		if !filepath.IsAbs(p.v) {
			return nil, fmt.Errorf("%s %q: want an absolute path", p.name, p.v)
		}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: Name, Title: "skillfleet sleep", Version: o.Version}, &mcp.ServerOptions{
		Instructions: "skillfleet sleep learns from this project's recent agent sessions overnight and stages an improved skill. " +
			"Read sleep_status first. A night (sleep_run) can take minutes. Never call sleep_adopt unless the user asked to adopt: the user decides.",
	})
	srv := &server{o: o}
	mcp.AddTool(s, &mcp.Tool{Name: "sleep_status", Description: "The project's sleep state: past nights, the staged proposal and the command that adopts it, the schedule.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ProjectArg) (*mcp.CallToolResult, Result, error) {
			return srv.run(ctx, in.Project, false, "status", "--json")
		})
	mcp.AddTool(s, &mcp.Tool{Name: "sleep_dry_run", Description: "A night that stages nothing and leaves the state as it was: what it would harvest, mine and replay, and the score it would reach.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ProjectArg) (*mcp.CallToolResult, Result, error) {
			return srv.run(ctx, in.Project, true, "dry-run")
		})
	mcp.AddTool(s, &mcp.Tool{Name: "sleep_run", Description: "Run a night now on the project: harvest its recent sessions, mine tasks, replay them under the skill, keep the edits that raise the validation score, and stage the proposal (never adopted here)."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ProjectArg) (*mcp.CallToolResult, Result, error) {
			return srv.run(ctx, in.Project, true, "run")
		})
	mcp.AddTool(s, &mcp.Tool{Name: "sleep_harvest", Description: "Read the project's recent sessions (redacted) and write the tasks a night would replay to a file for review, without running a night."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in harvestArgs) (*mcp.CallToolResult, Result, error) {
			out := in.Output
			if out == "" {
				out = filepath.Join(o.StateDir, "harvest-tasks.json")
			}
			if !filepath.IsAbs(out) {
				return nil, Result{}, fmt.Errorf("output %q: want an absolute path", out)
			}
			return srv.run(ctx, in.Project, false, "harvest", "--output", out)
		})
	mcp.AddTool(s, &mcp.Tool{Name: "sleep_adopt", Description: "Install the staged proposal into the live skill and memory files (undo: put the old files back). Only when the user asked to adopt.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}},
		func(ctx context.Context, _ *mcp.CallToolRequest, in adoptArgs) (*mcp.CallToolResult, Result, error) {
			args := []string{"adopt"}
			if in.Staging != "" {
				if !filepath.IsAbs(in.Staging) {
					return nil, Result{}, fmt.Errorf("staging %q: want an absolute path", in.Staging)
				}
				args = append(args, "--staging", in.Staging)
			}
			if in.Undo {
				args = append(args, "--undo")
			}
			return srv.run(ctx, in.Project, false, args...)
		})
	mcp.AddTool(s, &mcp.Tool{Name: "sleep_schedule", Description: "Schedule a night every day for the project with the system's scheduler (cron, systemd, launchd or schtasks)."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in scheduleArgs) (*mcp.CallToolResult, Result, error) {
			at := in.At
			if at == "" {
				at = "03:17"
			}
			if !clock.MatchString(at) {
				return nil, Result{}, fmt.Errorf("at %q: want HH:MM", at)
			}
			return srv.run(ctx, in.Project, true, "schedule", "--at", at)
		})
	mcp.AddTool(s, &mcp.Tool{Name: "sleep_unschedule", Description: "Remove the project's nightly schedule."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ProjectArg) (*mcp.CallToolResult, Result, error) {
			return srv.run(ctx, in.Project, false, "unschedule")
		})
	return s, nil
}

func ptr[T any](v T) *T { return &v }

// Tools lists the tools' names, in the order New adds them.
func Tools() []string {
	return []string{"sleep_status", "sleep_dry_run", "sleep_run", "sleep_harvest", "sleep_adopt", "sleep_schedule", "sleep_unschedule"}
}

type server struct{ o Options }

// run runs `skillfleet sleep ARGS` in the project. A bad argument is an
// error (the SDK returns it to the model as a tool error); a command that
// ran is a result, an error result when it exited non-zero.
func (s *server) run(ctx context.Context, project string, replay bool, args ...string) (*mcp.CallToolResult, Result, error) {
	if project == "" {
		project = s.o.Project
	}
	if !filepath.IsAbs(project) {
		return nil, Result{}, fmt.Errorf("project %q: want an absolute path", project)
	}
	if st, err := os.Stat(project); err != nil || !st.IsDir() {
		return nil, Result{}, fmt.Errorf("project %s: not a directory", project)
	}
	argv := append([]string{"sleep"}, args...)
	argv = append(argv, "--project", project, "--state-dir", s.o.StateDir)
	argv = append(argv, s.o.Args...)
	if replay {
		argv = append(argv, s.o.RunArgs...)
	}
	cmd := exec.CommandContext(ctx, s.o.Skillfleet, argv...)
	cmd.Dir = project
	cmd.Stdin = nil
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := Result{Command: argv, Stdout: stdout.String(), Stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode()
	case err != nil:
		return nil, Result{}, fmt.Errorf("run %s: %w", s.o.Skillfleet, err)
	}
	text := res.Stdout
	if res.Stderr != "" {
		text = strings.TrimRight(text, "\n") + "\n\nstderr:\n" + res.Stderr
	}
	if res.ExitCode != 0 {
		text = fmt.Sprintf("skillfleet %s exited %d\n%s", strings.Join(args[:1], " "), res.ExitCode, text)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: res.ExitCode != 0}, res, nil
}
