package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/internal/agentinstall"
	"github.com/skillfleet/skillfleet/pkg/nightly"
)

// sleepAgentCommand runs `sleep install|uninstall AGENT` and `sleep
// record` (the session-end hook's command).
func sleepAgentCommand(_ context.Context, cmd string, args []string, stdout, stderr io.Writer) error {
	switch cmd {
	case "install":
		return sleepInstall(args, stdout, stderr)
	case "uninstall":
		return sleepUninstall(args, stdout, stderr)
	case "record":
		return sleepRecord(args, os.Stdin, stdout, stderr)
	}
	return usageError{fmt.Errorf("sleep: unknown command %q", cmd)}
}

// agentArg takes the agent named first in args.
func agentArg(cmd string, args []string) (string, []string, error) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return "", args, nil
		}
		return "", nil, usageError{fmt.Errorf("sleep %s: name the agent first: %s", cmd, strings.Join(agentinstall.Agents(), " or "))}
	}
	for _, a := range agentinstall.Agents() {
		if args[0] == a {
			return a, args[1:], nil
		}
	}
	return "", nil, usageError{fmt.Errorf("sleep %s: agent %q: want %s", cmd, args[0], strings.Join(agentinstall.Agents(), " or "))}
}

func sleepInstall(args []string, stdout, stderr io.Writer) error {
	agent, args, err := agentArg("install", args)
	if err != nil {
		return err
	}
	fs := newFlagSet("sleep install", "sleep install claude-code|codex [flags]", stderr)
	home, _ := os.UserHomeDir()
	homeDir := fs.String("home", home, "the home directory to install into")
	stateDir := fs.String("state-dir", "", "the sleep state directory the installed command uses (default <home>/.skillfleet-sleep)")
	bin := fs.String("skillfleet", "", "the skillfleet binary the installed command runs (default: this one)")
	hook := fs.Bool("session-end-hook", false, "claude-code: also install a SessionEnd hook that records each session in the state dir for the next night")
	// The night's settings, fixed in the installed script; every one may
	// also live in <state-dir>/config.yaml instead.
	night := map[string]*string{}
	for _, f := range []struct{ name, usage string }{
		{"config", "config YAML for the nights"},
		{"backend", "model backend of the nights"},
		{"model", "target model"},
		{"optimizer-model", "miner, reflector and judge model"},
		{"base-url", "API base URL"},
		{"api-key-env", "environment variable holding the API key"},
		{"skill-path", "the live skill file"},
		{"skill-dir", "a skill package directory"},
		{"source", "transcripts: claude, codex, cursor or all"},
		{"persona", "proof run: the built-in persona's sessions in a sandbox (offline try-out)"},
	} {
		night[f.name] = fs.String(f.name, "", f.usage+" (passed to every night the installed command runs)")
	}
	if help, err := parse(fs, args); help || err != nil {
		return err
	}
	if agent == "" {
		fs.Usage()
		return nil
	}
	if *homeDir == "" {
		return usageError{errors.New("sleep install: --home is required (no home directory found)")}
	}
	h, err := filepath.Abs(*homeDir)
	if err != nil {
		return err
	}
	sd := *stateDir
	if sd == "" {
		sd = filepath.Join(h, ".skillfleet-sleep")
	}
	if sd, err = filepath.Abs(sd); err != nil {
		return err
	}
	exe := *bin
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return err
		}
		if strings.Contains(exe, string(filepath.Separator)+"go-build") {
			return usageError{fmt.Errorf("sleep install: this skillfleet (%s) is a temporary `go run` build that the installed command could not run later: build one (go build -o skillfleet ./cmd/skillfleet) and install with it, or pass --skillfleet", exe)}
		}
	}
	if exe, err = filepath.Abs(exe); err != nil {
		return err
	}
	var nightArgs []string
	fs.Visit(func(f *flag.Flag) {
		p, ok := night[f.Name]
		if !ok {
			return
		}
		v := *p
		if (f.Name == "config" || f.Name == "skill-path" || f.Name == "skill-dir") && v != "" {
			v, _ = filepath.Abs(v)
		}
		nightArgs = append(nightArgs, "--"+f.Name, v)
	})
	res, err := agentinstall.Install(agentinstall.Options{Agent: agent, Home: h, Skillfleet: exe, StateDir: sd,
		NightArgs: nightArgs, SessionEndHook: *hook, Version: pluginVersion()})
	if err != nil {
		return fmt.Errorf("sleep install %s: %w", agent, err)
	}
	state := "installed"
	if !res.Changed {
		state = "already installed, unchanged:"
	}
	switch agent {
	case agentinstall.ClaudeCode:
		hk := "no session-end hook"
		if *hook {
			hk = "a SessionEnd hook recording sessions in " + filepath.Join(sd, recordFile)
		}
		fmt.Fprintf(stdout, "%s the Claude Code plugin %s in %s: the /%s command, %s\n", state, agentinstall.Name, res.Dir, agentinstall.Name, hk)
		fmt.Fprintf(stdout, "check: claude plugin list (it shows %s@skills-dir); remove: skillfleet sleep uninstall claude-code\n", agentinstall.Name)
	case agentinstall.Codex:
		fmt.Fprintf(stdout, "%s the Codex skill %s in %s (ask Codex to run skillfleet sleep, or mention $%s)\n", state, agentinstall.Name, res.Dir, agentinstall.Name)
		fmt.Fprintln(stdout, "remove: skillfleet sleep uninstall codex")
	}
	fmt.Fprintf(stdout, "it runs %s (%s run in a project runs a night there)\n", exe, res.Script)
	return nil
}

// pluginVersion is the plugin manifest's version: skillfleet's, when it
// is a version number.
func pluginVersion() string {
	v := strings.TrimPrefix(version, "v")
	if v == "" || v[0] < '0' || v[0] > '9' {
		return "0.0.0"
	}
	return v
}

func sleepUninstall(args []string, stdout, stderr io.Writer) error {
	agent, args, err := agentArg("uninstall", args)
	if err != nil {
		return err
	}
	fs := newFlagSet("sleep uninstall", "sleep uninstall claude-code|codex [--home DIR]", stderr)
	home, _ := os.UserHomeDir()
	homeDir := fs.String("home", home, "the home directory it was installed into")
	if help, err := parse(fs, args); help || err != nil {
		return err
	}
	if agent == "" {
		fs.Usage()
		return nil
	}
	h, err := filepath.Abs(*homeDir)
	if err != nil {
		return err
	}
	res, err := agentinstall.Uninstall(agent, h)
	if err != nil {
		return fmt.Errorf("sleep uninstall %s: %w", agent, err)
	}
	if !res.Changed {
		fmt.Fprintf(stdout, "not installed: %s does not exist\n", res.Dir)
		return nil
	}
	fmt.Fprintf(stdout, "removed %s (%d files)\n", res.Dir, len(res.Files))
	return nil
}

// recordFile holds the sessions the session-end hook recorded, one JSON
// object a line, in the state dir.
const recordFile = "recorded-sessions.jsonl"

// recordedSession is one line of recordFile.
type recordedSession struct {
	Agent      string    `json:"agent"`
	SessionID  string    `json:"session_id"`
	Transcript string    `json:"transcript_path,omitempty"`
	Project    string    `json:"project,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	RecordedAt time.Time `json:"recorded_at"`
}

// sleepRecord reads a session-end hook's JSON from stdin and appends the
// session to the state dir's record. Only the ids and paths are kept
// (secret-shaped parts redacted), never the session's text.
func sleepRecord(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("sleep record", "sleep record --agent claude-code|codex [--state-dir DIR] < hook.json", stderr)
	home, _ := os.UserHomeDir()
	agent := fs.String("agent", agentinstall.ClaudeCode, "the agent whose hook calls it")
	stateDir := fs.String("state-dir", filepath.Join(home, ".skillfleet-sleep"), "the sleep state directory")
	if help, err := parse(fs, args); help || err != nil {
		return err
	}
	b, err := io.ReadAll(io.LimitReader(stdin, 1<<20))
	if err != nil {
		return err
	}
	var in struct {
		SessionID      string `json:"session_id"`
		TranscriptPath string `json:"transcript_path"`
		Cwd            string `json:"cwd"`
		Reason         string `json:"reason"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return usageError{fmt.Errorf("sleep record: the hook's input on stdin is not JSON: %v", err)}
	}
	if in.SessionID == "" {
		return usageError{errors.New("sleep record: the hook's input has no session_id")}
	}
	r := recordedSession{Agent: *agent, SessionID: nightly.Redact(in.SessionID), Transcript: nightly.Redact(in.TranscriptPath),
		Project: nightly.Redact(in.Cwd), Reason: nightly.Redact(in.Reason), RecordedAt: time.Now().UTC()}
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*stateDir, 0o700); err != nil {
		return err
	}
	// One write of one line with O_APPEND: concurrent hooks do not mix.
	f, err := os.OpenFile(filepath.Join(*stateDir, recordFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
