package exec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

// Tested versions of the built-in agents. A CLI whose major version is not
// listed is refused at start ([Client.CheckVersion]).
var testedVersions = map[string]struct {
	majors []int
	tested string
}{
	AgentCodex:    {majors: []int{0}, tested: "0.169.0"},
	AgentClaude:   {majors: []int{2}, tested: "2.1.328"},
	AgentCopilot:  {majors: []int{1}, tested: "1.0.102"},
	AgentPi:       {majors: []int{0}, tested: "0.73.1"},
	AgentOpencode: {majors: []int{1}, tested: "1.18.33"},
}

// SupportedVersions describes the versions of the built-in agents that
// skillfleet is tested with.
func SupportedVersions() string {
	var parts []string
	for _, a := range Agents() {
		v, ok := testedVersions[a]
		if !ok {
			continue
		}
		var majors []string
		for _, m := range v.majors {
			majors = append(majors, strconv.Itoa(m)+".x")
		}
		parts = append(parts, fmt.Sprintf("%s %s (tested %s)", a, strings.Join(majors, ", "), v.tested))
	}
	return strings.Join(parts, "; ")
}

var semverRe = regexp.MustCompile(`\b(\d+)\.(\d+)\.(\d+)\b`)

// versionCache holds each binary's --version answer: one probe per
// process and binary.
var versionCache sync.Map // string -> versionResult

type versionResult struct {
	version string
	err     error
}

// CheckVersion runs the agent's --version once per binary (cached) and,
// for a built-in agent, refuses a major version skillfleet has not been
// tested with, naming the supported ones. A custom command, or option
// version_check=false, skips the check. It returns the version seen.
func (c *Client) CheckVersion(ctx context.Context) (string, error) {
	if len(c.argv) == 0 {
		return "", fmt.Errorf("exec backend: no command (set option agent or command)")
	}
	if err := c.sandboxReady(); err != nil {
		return "", err
	}
	want, builtin := testedVersions[c.cfg.Agent]
	if !builtin || len(c.cfg.Command) > 0 || c.cfg.SkipVersionCheck {
		return "", nil
	}
	bin := c.argv[0]
	var vr versionResult
	if r, ok := versionCache.Load(bin); ok {
		vr = r.(versionResult)
	} else {
		v, err := probeVersion(ctx, bin, c.cfg.Getenv("PATH"))
		vr = versionResult{v, err}
		if ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
			// A probe cut short by the caller's context, or by its own
			// timeout on a loaded host, says nothing about the binary: the
			// next caller probes again.
			r, _ := versionCache.LoadOrStore(bin, vr)
			vr = r.(versionResult)
		}
	}
	var slow *versionTimeoutError
	if errors.As(vr.err, &slow) {
		return "", fmt.Errorf("agent %s: %w", c.cfg.Agent, vr.err)
	}
	if vr.err != nil {
		return "", fmt.Errorf("agent %s: %w (install the tested CLIs with scripts/install-agents.sh; supported: %s)", c.cfg.Agent, vr.err, SupportedVersions())
	}
	m := semverRe.FindStringSubmatch(vr.version)
	if m == nil {
		return "", fmt.Errorf("agent %s: %q --version printed %q, which holds no version number; supported: %s", c.cfg.Agent, bin, vr.version, SupportedVersions())
	}
	major, _ := strconv.Atoi(m[1])
	for _, ok := range want.majors {
		if major == ok {
			return m[0], nil
		}
	}
	return m[0], fmt.Errorf("agent %s: %s is version %s, a major version skillfleet has not been tested with; supported: %s (scripts/install-agents.sh installs them; option version_check=false runs it anyway)",
		c.cfg.Agent, bin, m[0], SupportedVersions())
}

// VersionTimeout bounds one --version probe. An agent CLI's start is
// slow on a busy host (a Node CLI loads its whole bundle before it
// prints a version), so the bound is generous; a probe that reaches it
// says the host is too busy, not that the binary is wrong.
const VersionTimeout = 2 * time.Minute

func probeVersion(ctx context.Context, bin, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, VersionTimeout)
	defer cancel()
	home, err := os.MkdirTemp("", "skillfleet-version-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(home)
	cmd := osexec.CommandContext(ctx, bin, "--version")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	cmd.Env = []string{"PATH=" + path, "HOME=" + home, "TMPDIR=" + home}
	cmd.Dir = home
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	setProcessGroup(cmd)
	err = cmd.Run()
	killGroup(cmd)
	if ctx.Err() != nil {
		return "", &versionTimeoutError{bin: bin, err: ctx.Err()}
	}
	if err != nil {
		return "", fmt.Errorf("%s --version: %w: %s", bin, err, strings.TrimSpace(string(head(out.Bytes(), 300))))
	}
	return strings.TrimSpace(out.String()), nil
}

// versionTimeoutError is a --version probe that did not answer in time:
// the binary started (it was found and is executable) but the host, or
// the caller's deadline, did not give it long enough.
type versionTimeoutError struct {
	bin string
	err error
}

func (e *versionTimeoutError) Error() string {
	return fmt.Sprintf("%s --version gave no answer in time (%v): the agent CLI starts slowly on a busy machine; retry when it is quieter, or skip the check (train and campaign: --no-preflight; the agent's option version_check=false)", e.bin, e.err)
}

func (e *versionTimeoutError) Unwrap() error { return e.err }

// claudeSettings are the settings Claude Code runs with (--settings): its
// Bash tool runs inside Claude Code's sandbox (bubblewrap on Linux: writes
// only in the work directory, no network), never outside it, and the
// allowed tools run without asking; anything else is denied, not asked.
const claudeSettings = `{"sandbox":{"enabled":true,"autoAllowBashIfSandboxed":true,"allowUnsandboxedCommands":false},` +
	`"permissions":{"defaultMode":"dontAsk","allow":["Skill","Read","Glob","Grep","Bash"]}}`

// codexFeatures turns off what a one-task `codex exec` run does not use
// and pays for at every start: the login-shell snapshot, the plugin and
// app catalogues (fetched from GitHub with git ls-remote). About a tenth
// of a call's CPU time.
const codexFeatures = "[features]\nshell_snapshot = false\nplugins = false\nremote_plugin = false\napps = false\n"

// providerName is the Codex model_providers entry skillfleet writes.
const providerName = "skillfleet"

// wireProvider writes the agent's provider settings into the call's work
// directory and returns the environment entries that point the agent at
// them. Codex gets $CODEX_HOME/config.toml (CODEX_HOME inside the work
// directory) with a model_providers entry for Config.BaseURL using the
// Responses API, whose env_key names Config.APIKeyEnv (the key itself is
// never written), or, with the user's login and no key, that signs with
// the login. Claude Code gets ANTHROPIC_BASE_URL, and the key of
// Config.APIKeyEnv as ANTHROPIC_API_KEY, in its environment only.
//
// cleanup removes what it made outside dir; it is never nil.
func (c *Client) wireProvider(dir, model string) (env []string, cleanup func(), err error) {
	cleanup = func() {}
	switch c.cfg.Agent {
	case AgentCursor, AgentCopilot, AgentPi, AgentOpencode:
		env, err = c.wireAgent(dir, model)
		return env, cleanup, err
	case AgentCodex:
		home := filepath.Join(dir, ".codex")
		if err := os.MkdirAll(home, 0o700); err != nil {
			return nil, cleanup, err
		}
		env = append(env, "CODEX_HOME="+home)
		var b strings.Builder
		if c.cfg.BaseURL != "" {
			if model != "" {
				fmt.Fprintf(&b, "model = %s\n", strconv.Quote(model))
			}
			fmt.Fprintf(&b, "model_provider = %q\n\n[model_providers.%s]\nname = %q\nbase_url = %s\nwire_api = \"responses\"\n",
				providerName, providerName, providerName, strconv.Quote(c.cfg.BaseURL))
			switch {
			case c.cfg.APIKeyEnv != "":
				fmt.Fprintf(&b, "env_key = %s\n", strconv.Quote(c.cfg.APIKeyEnv))
			case c.cfg.UserLogin:
				// The copied login signs the calls at BaseURL too (a
				// gateway in front of the user's account): without this
				// Codex sends a custom provider no credential at all.
				b.WriteString("requires_openai_auth = true\n")
			}
			b.WriteString("\n")
		}
		b.WriteString(codexFeatures)
		if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(b.String()), 0o600); err != nil {
			return nil, cleanup, err
		}
	case AgentClaude:
		// HOME apart from the work directory: Claude Code reads
		// $HOME/.claude as user settings, and only project skills (the
		// work directory's .claude/skills) are loaded.
		home := filepath.Join(dir, ".home")
		if err := os.MkdirAll(home, 0o700); err != nil {
			return nil, cleanup, err
		}
		env = append(env, "HOME="+home)
		// The sandbox's bridge sockets live in TMPDIR, and a Unix socket's
		// path must fit in 108 bytes: a deep work directory gets a short
		// TMPDIR of its own.
		if len(dir) > 48 {
			tmp, err := os.MkdirTemp("", "sf")
			if err != nil {
				return nil, cleanup, err
			}
			cleanup = func() { _ = os.RemoveAll(tmp) }
			env = append(env, "TMPDIR="+tmp)
		}
		env = append(env, "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
		if c.cfg.BaseURL != "" {
			env = append(env, "ANTHROPIC_BASE_URL="+strings.TrimSuffix(strings.TrimRight(c.cfg.BaseURL, "/"), "/v1"))
		}
		key := ""
		if k := c.cfg.APIKeyEnv; k != "" {
			key = c.cfg.Getenv(k)
		} else if slices.Contains(c.cfg.Env, "ANTHROPIC_API_KEY") {
			key = c.cfg.Getenv("ANTHROPIC_API_KEY")
		}
		switch {
		case key != "":
			env = append(env, "ANTHROPIC_API_KEY="+key)
		case c.cfg.UserLogin:
			// The copied login signs the calls, at BaseURL too (a
			// gateway or a proxy in front of the user's subscription):
			// a key would take its place.
		case c.cfg.BaseURL != "":
			// A server that needs no key (sim-llm): Claude Code still
			// wants one to start.
			env = append(env, "ANTHROPIC_API_KEY="+noKey)
		}
	}
	return env, cleanup, nil
}

// noKey is the key Claude Code is given for a server that needs none.
const noKey = "skillfleet-no-key"

// taskFilePrompt is the prompt of a task too long for one argument: the
// task is in task.md, which the agent reads with its tools.
const taskFilePrompt = "Your task is in the file task.md in the current directory. Read it with a shell command (cat task.md), then do what it says."

// writeSkill writes the call's skill at skillFile. A plain skill is one
// SKILL.md, given a name/description front matter when it has none. A
// skill package (a skillpkg bundle, as the trainer carries one) is
// written whole as the skill directory around skillFile: SKILL.md there
// under skillFile's name, references/ and scripts/ beside it (scripts
// executable), so the agent finds the files SKILL.md points to where a
// user's installed skill would have them.
func (c *Client) writeSkill(skillFile, skill string) error {
	withFrontMatter := func(text string) string {
		if strings.HasPrefix(text, "---\n") {
			return text
		}
		return fmt.Sprintf("---\nname: %s\ndescription: %s\n---\n\n%s", c.cfg.SkillName, c.cfg.SkillDescription, text)
	}
	if !skillpkg.IsBundle(skill) {
		return os.WriteFile(skillFile, []byte(withFrontMatter(skill)), 0o644)
	}
	p, err := skillpkg.Decode(skill)
	if err != nil {
		return fmt.Errorf("skill package in the system message: %w", err)
	}
	dir := filepath.Dir(skillFile)
	// The directory prepare made is empty: Write fills it atomically.
	if err := skillpkg.Write(p, dir); err != nil {
		return err
	}
	entry := withFrontMatter(p.Entry())
	return os.WriteFile(skillFile, []byte(entry), 0o644)
}

// OpenedFilesNote opens the reply of an agent that was given a skill
// package and opened files of it (skillpkg's note, which NotedFiles
// reads back). It leads the reply so that the last line and the answer
// tags stay the agent's.
const OpenedFilesNote = skillpkg.OpenedFilesNote

// noteOpenedFiles returns reply, preceded by a note naming the files of
// the call's skill package that the agent opened, as the commands and
// paths its tool calls named show them (used: Codex's command_execution
// items, Claude Code's tool_use blocks; see parseCodex and parseClaude).
// A plain skill (unless Config.NoteOpened is NoteAlways: then its
// SKILL.md is noted when opened), an output format without tool calls, or
// no file opened leaves reply as it is. The note is how a trajectory
// records which files of a package the agent opened: the optimizer reads
// it with the reply.
func (c *Client) noteOpenedFiles(skill string, used []string, reply string) string {
	if len(used) == 0 || !skillpkg.IsBundle(skill) && c.cfg.NoteOpened != NoteAlways {
		return reply
	}
	var p *skillpkg.Package
	var err error
	if skillpkg.IsBundle(skill) {
		p, err = skillpkg.Decode(skill)
	} else {
		p, err = skillpkg.New(map[string]string{skillpkg.EntryFile: skill}, skillpkg.Limits{})
	}
	if err != nil {
		return reply
	}
	opened := OpenedFiles(p, c.skillDir(), used)
	if len(opened) == 0 {
		return reply
	}
	return OpenedFilesNote + " " + strings.Join(opened, ", ") + "]\n\n" + reply
}

// OpenedFiles returns the files of p that the commands and paths name
// under the skill directory skillDir (relative to the work directory), in
// the order first named. The directory may be named under any root (the
// sandbox's /work, a temporary directory) or relative to the work
// directory (the agent's current directory). A command or path that names
// the directory alone (a listing) opens nothing, nor does a name that is
// not a file of p.
func OpenedFiles(p *skillpkg.Package, skillDir string, commands []string) []string {
	var opened []string
	prefix := strings.Trim(skillDir, "/") + "/"
	for _, cmd := range commands {
		for rest := cmd; ; {
			i := strings.Index(rest, prefix)
			if i < 0 {
				break
			}
			// The directory starts a path, or a path component.
			starts := i == 0 || rest[i-1] == '/' || !isPathByte(rest[i-1])
			rest = rest[i+len(prefix):]
			if !starts {
				continue
			}
			end := strings.IndexFunc(rest, func(r rune) bool { return r >= 0x80 || !isPathByte(byte(r)) })
			if end < 0 {
				end = len(rest)
			}
			name := rest[:end]
			if _, ok := p.File(name); ok && !slices.Contains(opened, name) {
				opened = append(opened, name)
			}
		}
	}
	return opened
}

// isPathByte reports whether b may be part of a package file's path as a
// command names it.
func isPathByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || strings.IndexByte("/._-", b) >= 0
}
