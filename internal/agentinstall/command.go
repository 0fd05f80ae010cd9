package agentinstall

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/pkg/nightly"
)

// UsageError is a command line refused for how it was written.
type UsageError struct{ Err error }

func (u UsageError) Error() string { return u.Err.Error() }
func (u UsageError) Unwrap() error { return u.Err }

// AgentArg takes the agent named first in args ("" and args as they are
// for a help flag).
func AgentArg(cmd string, args []string) (string, []string, error) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return "", args, nil
		}
		return "", nil, UsageError{fmt.Errorf("sleep %s: name the agent first: %s", cmd, strings.Join(Agents(), " or "))}
	}
	for _, a := range Agents() {
		if args[0] == a {
			return a, args[1:], nil
		}
	}
	return "", nil, UsageError{fmt.Errorf("sleep %s: agent %q: want %s", cmd, args[0], strings.Join(Agents(), " or "))}
}

// nightFlags are the night's settings `sleep install` fixes in the
// installed script; every one may also live in <state-dir>/config.yaml.
var nightFlags = []struct{ name, usage string }{
	{"config", "config YAML for the nights"},
	{"backend", "model backend of the nights"},
	{"model", "target model"},
	{"optimizer-model", "miner, reflector and judge model"},
	{"base-url", "API base URL"},
	{"api-key-env", "environment variable holding the API key"},
	{"skill-path", "the live skill file"},
	{"skill-dir", "a skill package directory"},
	{"source", "transcripts: " + strings.Join(nightly.Sources(), ", ") + " or all"},
	{"persona", "proof run: the built-in persona's sessions in a sandbox (offline try-out)"},
}

// InstallFlags are `sleep install`'s flags.
type InstallFlags struct {
	Home, StateDir, Skillfleet string
	SessionEndHook             bool
	// TargetArgs are the replay target's flags as `sleep run` takes them;
	// the caller registers and reads those flags (they are sleep run's own).
	TargetArgs []string
	night      map[string]*string
}

// Register adds the flags to fs.
func (f *InstallFlags) Register(fs *flag.FlagSet) {
	home, _ := os.UserHomeDir()
	fs.StringVar(&f.Home, "home", home, "the home directory to install into")
	fs.StringVar(&f.StateDir, "state-dir", "", "the sleep state directory the installed command uses (default <home>/.skillfleet-sleep)")
	fs.StringVar(&f.Skillfleet, "skillfleet", "", "the skillfleet binary the installed command runs (default: this one)")
	fs.BoolVar(&f.SessionEndHook, "session-end-hook", false, "claude-code: also install a SessionEnd hook that records each session in the state dir for the next night")
	f.night = map[string]*string{}
	for _, nf := range nightFlags {
		f.night[nf.name] = fs.String(nf.name, "", nf.usage+" (passed to every night the installed command runs)")
	}
}

// InstallCommand installs agent with the flags parsed on fs and says on
// stdout what it did and how to check and remove it. version is
// skillfleet's, for the plugin manifest.
func (f *InstallFlags) InstallCommand(agent, version string, fs *flag.FlagSet, stdout io.Writer) error {
	if f.Home == "" {
		return UsageError{errors.New("sleep install: --home is required (no home directory found)")}
	}
	h, err := filepath.Abs(f.Home)
	if err != nil {
		return err
	}
	sd := f.StateDir
	if sd == "" {
		sd = filepath.Join(h, ".skillfleet-sleep")
	}
	if sd, err = filepath.Abs(sd); err != nil {
		return err
	}
	exe := f.Skillfleet
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return err
		}
		if strings.Contains(exe, string(filepath.Separator)+"go-build") {
			return UsageError{fmt.Errorf("sleep install: this skillfleet (%s) is a temporary `go run` build that the installed command could not run later: build one (go build -o skillfleet ./cmd/skillfleet) and install with it, or pass --skillfleet", exe)}
		}
	}
	if exe, err = filepath.Abs(exe); err != nil {
		return err
	}
	var nightArgs []string
	fs.Visit(func(fl *flag.Flag) {
		p, ok := f.night[fl.Name]
		if !ok {
			return
		}
		v := *p
		if (fl.Name == "config" || fl.Name == "skill-path" || fl.Name == "skill-dir") && v != "" {
			v, _ = filepath.Abs(v)
		}
		nightArgs = append(nightArgs, "--"+fl.Name, v)
	})
	res, err := Install(Options{Agent: agent, Home: h, Skillfleet: exe, StateDir: sd,
		NightArgs: nightArgs, TargetArgs: f.TargetArgs, SessionEndHook: f.SessionEndHook, Version: pluginVersion(version)})
	if errors.Is(err, errSecretArg) {
		return UsageError{fmt.Errorf("sleep install %s: %w", agent, err)}
	}
	if err != nil {
		return fmt.Errorf("sleep install %s: %w", agent, err)
	}
	state := "installed"
	if !res.Changed {
		state = "already installed, unchanged:"
	}
	switch agent {
	case ClaudeCode:
		hk := "no session-end hook"
		if f.SessionEndHook {
			hk = "a SessionEnd hook recording sessions in " + filepath.Join(sd, RecordFile)
		}
		fmt.Fprintf(stdout, "%s the Claude Code plugin %s in %s: the %s skill, the /%s and /%s:%s-handoff commands, %s\n", state, Name, res.Dir, Name, Name, Name, Name, hk)
		fmt.Fprintf(stdout, "check: claude plugin list (it shows %s@skills-dir); remove: skillfleet sleep uninstall claude-code\n", Name)
	case Codex:
		fmt.Fprintf(stdout, "%s the Codex skill %s in %s (ask Codex to run skillfleet sleep, or mention $%s)\n", state, Name, res.Dir, Name)
	case Cursor:
		fmt.Fprintf(stdout, "%s the Cursor plugin %s in %s: the /%s command and the %s skill (restart Cursor to load it)\n", state, Name, res.Dir, Name, Name)
	case Pi:
		fmt.Fprintf(stdout, "%s the pi skill %s in %s (ask pi to run skillfleet sleep, or type /skill:%s)\n", state, Name, res.Dir, Name)
	default:
		fmt.Fprintf(stdout, "%s the %s skill %s in %s (ask it to run skillfleet sleep)\n", state, agentTitle[agent], Name, res.Dir)
	}
	if agent != ClaudeCode {
		fmt.Fprintln(stdout, "remove: skillfleet sleep uninstall "+agent)
	}
	printConfigs(stdout, res.Configs)
	if agent == Copilot {
		fmt.Fprintf(stdout, "check: copilot mcp list, or /mcp in a session (it shows %s with the sleep_* tools)\n", Name)
	}
	fmt.Fprintf(stdout, "it runs %s (%s run in a project runs a night there)\n", exe, res.Script)
	if len(f.TargetArgs) > 0 {
		fmt.Fprintf(stdout, "its nights replay with: %s\n", strings.Join(f.TargetArgs, " "))
	}
	return nil
}

// pluginVersion is the plugin manifest's version: skillfleet's, when it
// is a version number.
func pluginVersion(version string) string {
	v := strings.TrimPrefix(version, "v")
	if v == "" || v[0] < '0' || v[0] > '9' {
		return "0.0.0"
	}
	return v
}

// UninstallCommand removes agent's install from home and says so.
func UninstallCommand(agent, home string, stdout io.Writer) error {
	h, err := filepath.Abs(home)
	if err != nil {
		return err
	}
	res, err := Uninstall(agent, h)
	if err != nil {
		return fmt.Errorf("sleep uninstall %s: %w", agent, err)
	}
	if !res.Changed {
		fmt.Fprintf(stdout, "not installed: %s does not exist\n", res.Dir)
		return nil
	}
	fmt.Fprintf(stdout, "removed %s (%d files)\n", res.Dir, len(res.Files))
	printConfigs(stdout, res.Configs)
	return nil
}

// printConfigs says what an install or uninstall did to the agent's own
// config files.
func printConfigs(stdout io.Writer, configs map[string]string) {
	paths := make([]string, 0, len(configs))
	for p := range configs {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		fmt.Fprintf(stdout, "%s: %s\n", p, configs[p])
	}
}

// RecordFile holds the sessions the session-end hook recorded, one JSON
// object a line, in the state dir.
const RecordFile = "recorded-sessions.jsonl"

// RecordedSession is one line of RecordFile.
type RecordedSession struct {
	Agent      string    `json:"agent"`
	SessionID  string    `json:"session_id"`
	Transcript string    `json:"transcript_path,omitempty"`
	Project    string    `json:"project,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	RecordedAt time.Time `json:"recorded_at"`
}

// Record reads a session-end hook's JSON from stdin and appends the
// session to stateDir's RecordFile. Only the ids and paths are kept
// (secret-shaped parts redacted), never the session's text.
func Record(agent, stateDir string, stdin io.Reader) error {
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
		return UsageError{fmt.Errorf("sleep record: the hook's input on stdin is not JSON: %w", err)}
	}
	if in.SessionID == "" {
		return UsageError{errors.New("sleep record: the hook's input has no session_id")}
	}
	r := RecordedSession{Agent: agent, SessionID: nightly.Redact(in.SessionID), Transcript: nightly.Redact(in.TranscriptPath),
		Project: nightly.Redact(in.Cwd), Reason: nightly.Redact(in.Reason), RecordedAt: time.Now().UTC()}
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return err
	}
	// One write of one line with O_APPEND: concurrent hooks do not mix.
	f, err := os.OpenFile(filepath.Join(stateDir, RecordFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
