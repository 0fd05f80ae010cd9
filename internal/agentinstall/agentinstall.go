// Package agentinstall installs skillfleet sleep into the agents a user
// works with, and removes it again: a Claude Code plugin (the
// skillfleet-sleep skill, the `/skillfleet-sleep` and
// `/skillfleet-sleep-handoff` commands and an optional session-end hook), a Cursor
// plugin (the command and a skill) and a skill for Codex, the Copilot CLI,
// pi and opencode, each a directory holding everything it runs.
//
// # Where each agent loads them
//
// Claude Code (2.1.x) loads a plugin from ~/.claude/skills/<name>/ when
// that directory holds .claude-plugin/plugin.json (it lists it as
// <name>@skills-dir, scope user) and reads its commands/ and hooks/ there,
// in place: nothing is copied into Claude Code's plugin cache, so nothing
// the plugin runs can go missing from it. Codex (0.169) lists every
// ~/.agents/skills/<name>/SKILL.md as a user skill. Cursor loads a local
// plugin from ~/.cursor/plugins/local/<name>/ (.cursor-plugin/plugin.json
// naming its commands/ and skills/). The Copilot CLI reads user skills
// from ~/.copilot/skills/<name>/, pi from ~/.pi/agent/skills/<name>/ and
// opencode from ~/.config/opencode/skills/<name>/, each a SKILL.md whose
// name is its directory's.
//
// # What an install holds
//
// One script, the agent's front end (bin/skillfleet-sleep in the plugin,
// scripts/skillfleet-sleep in the skill), which runs the skillfleet binary
// by the absolute path given at install time with the night's flags fixed
// then (the replay target's flags, such as an agent CLI target, go to its
// run and schedule only); the command, skill and hook call that script by
// its absolute path.
// No agent CLI flag is written anywhere (a night's replays are configured
// by skillfleet, not by the plugin).
//
// In the Claude Code plugin the skill and the `/skillfleet-sleep` command
// share a name: the command is marked disable-model-invocation, so that
// the model's Skill tool offers and loads the skill (whose description
// says when to use it), while the user's `/skillfleet-sleep:skillfleet-sleep`
// runs the command, whose allowed-tools let it run the script unasked.
// Without the mark Claude Code (2.1.x) lists the command in the skill's
// place, and a Skill call asks leave to run the command.
//
// A manifest (.skillfleet-install.json)
// lists every file with its sha256 and the directories the install
// created, so that [Uninstall] removes exactly those and refuses a
// directory it did not install or one holding files it did not write.
package agentinstall

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"text/template"

	"github.com/skillfleet/skillfleet/pkg/nightly"
)

// Agents.
const (
	ClaudeCode = "claude-code"
	Codex      = "codex"
	Cursor     = "cursor"
	Copilot    = "copilot"
	Pi         = "pi"
	Opencode   = "opencode"
)

// Agents lists the agents an install supports.
func Agents() []string { return []string{ClaudeCode, Codex, Cursor, Copilot, Pi, Opencode} }

// agentTitle is how the installed files name each agent.
var agentTitle = map[string]string{ClaudeCode: "Claude Code", Codex: "Codex", Cursor: "Cursor", Copilot: "GitHub Copilot CLI", Pi: "pi", Opencode: "opencode"}

// Name is the plugin's and the skill's name (and directory name).
const Name = "skillfleet-sleep"

// HandoffRounds bounds the rounds of Claude Code's handoff command: runs
// of the night that end with prompts pending, each answered before the
// next. A night takes a round per wave of calls (mining, the baseline,
// each train wave and its reflection, each gate trial, the final check),
// so a night with a larger edit budget, a memory file or several dream
// rollouts takes more than the persona night's ten; the bound only stops
// a loop that no longer advances.
const HandoffRounds = 30

// ManifestFile is the install's manifest, inside the installed directory.
const ManifestFile = ".skillfleet-install.json"

const manifestSchema = "skillfleet-agentinstall/v1"

// marker is written into every installed text file.
const marker = "installed by `skillfleet sleep install`"

//go:embed templates
var templates embed.FS

// Options say what to install where.
type Options struct {
	// Agent is ClaudeCode or Codex.
	Agent string
	// Home is the user's home directory (absolute).
	Home string
	// Skillfleet is the absolute path of the skillfleet binary the
	// installed script runs.
	Skillfleet string
	// StateDir is the sleep state directory (absolute).
	StateDir string
	// NightArgs are skillfleet sleep flags every night, status and
	// schedule of the script gets (--backend sim, --model m, ...).
	NightArgs []string
	// TargetArgs are the replay target's `sleep run` flags
	// (--target-backend codex_exec, --codex-exec-path /x/codex, ...),
	// given to the script's run and schedule only: status and unschedule
	// do not take them.
	TargetArgs []string
	// SessionEndHook adds Claude Code's session-end hook, which records
	// each session in StateDir for the next night.
	SessionEndHook bool
	// Version goes into the plugin manifest.
	Version string
}

// Manifest is what an install wrote.
type Manifest struct {
	Schema string `json:"schema"`
	Agent  string `json:"agent"`
	// Files are the installed files, relative to the install directory
	// (the manifest itself not among them), with their sha256.
	Files map[string]string `json:"files"`
	// CreatedDirs are the directories above the install directory that
	// the first install created, outermost first.
	CreatedDirs []string `json:"created_dirs,omitempty"`
	// ConfigEdits are the entries the install added to the agent's own
	// config files (the Copilot CLI's MCP servers).
	ConfigEdits []ConfigEdit `json:"config_edits,omitempty"`
}

// Result says what an install or uninstall did.
type Result struct {
	// Dir is the install directory.
	Dir string
	// Script is the installed front-end script (install only).
	Script string
	// Changed: the install wrote files, or the uninstall removed them.
	Changed bool
	// Files are the files installed or removed, relative to Dir.
	Files []string
	// Configs say what was done to each agent config file the install
	// edits (path: what).
	Configs map[string]string
}

// Dir returns where agent's install lives under home.
func Dir(agent, home string) (string, error) {
	switch agent {
	case ClaudeCode:
		return filepath.Join(home, ".claude", "skills", Name), nil
	case Codex:
		return filepath.Join(home, ".agents", "skills", Name), nil
	case Cursor:
		return filepath.Join(home, ".cursor", "plugins", "local", Name), nil
	case Copilot:
		return filepath.Join(home, ".copilot", "skills", Name), nil
	case Pi:
		return filepath.Join(home, ".pi", "agent", "skills", Name), nil
	case Opencode:
		return filepath.Join(home, ".config", "opencode", "skills", Name), nil
	}
	return "", fmt.Errorf("agent %q: want one of %s", agent, strings.Join(Agents(), ", "))
}

// scriptRel is the front-end script's path inside the install.
func scriptRel(agent string) string {
	if agent == ClaudeCode {
		return "bin/" + Name
	}
	return "scripts/" + Name
}

// plainPath is a path that a slash command's permission rule and a hook's
// shell command can hold unquoted.
var plainPath = regexp.MustCompile(`^[A-Za-z0-9_./@+-]+$`)

func (o *Options) check() error {
	if _, err := Dir(o.Agent, o.Home); err != nil {
		return err
	}
	for _, p := range []struct{ name, v string }{{"home", o.Home}, {"skillfleet binary", o.Skillfleet}, {"state dir", o.StateDir}} {
		if p.v == "" || !filepath.IsAbs(p.v) {
			return fmt.Errorf("%s %q: want an absolute path", p.name, p.v)
		}
	}
	st, err := os.Stat(o.Skillfleet)
	if err != nil {
		return fmt.Errorf("skillfleet binary: %w", err)
	}
	if !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("skillfleet binary %s: not an executable file", o.Skillfleet)
	}
	for _, a := range slices.Concat([]string{o.Skillfleet, o.StateDir}, o.NightArgs, o.TargetArgs) {
		if strings.ContainsAny(a, "\x00\n\r") {
			return fmt.Errorf("argument %q: holds a NUL or line break", a)
		}
		if nightly.ContainsSecret(a) {
			return errSecretArg
		}
	}
	if o.SessionEndHook && o.Agent != ClaudeCode {
		return fmt.Errorf("the session-end hook is for %s only", ClaudeCode)
	}
	return nil
}

// errSecretArg refuses an argument that would put a secret into the
// installed script.
var errSecretArg = errors.New("an argument looks like a secret (not shown): the installed script is a plain file, so keep keys in environment variables and pass their names (--api-key-env, --target-api-key-env)")

// render returns the install's files: relative path -> content, and the
// executable ones.
func render(o Options, dir string) (map[string][]byte, map[string]bool, error) {
	script := filepath.Join(dir, scriptRel(o.Agent))
	if !plainPath.MatchString(script) {
		return nil, nil, fmt.Errorf("install path %s: the agent runs it unquoted, so it may hold only letters, digits and _ . / @ + -", script)
	}
	data := map[string]any{
		"Marker": marker, "Agent": o.Agent, "AgentTitle": agentTitle[o.Agent],
		"Skillfleet": o.Skillfleet, "StateDir": o.StateDir, "NightArgs": o.NightArgs, "TargetArgs": o.TargetArgs, "Script": script,
		"ScriptRel": scriptRel(o.Agent),
		"Version":   cmpOr(o.Version, "0.0.0"), "HandoffRounds": HandoffRounds,
	}
	funcs := template.FuncMap{
		"sh": shQuote,
		"json": func(s string) (string, error) {
			b, err := json.Marshal(s)
			return string(b), err
		},
	}
	files := map[string]string{"skillfleet-sleep.sh": scriptRel(o.Agent)}
	switch o.Agent {
	case ClaudeCode:
		files["plugin.json"] = ".claude-plugin/plugin.json"
		files["command.md"] = "commands/" + Name + ".md"
		files["handoff-command.md"] = "commands/" + Name + "-handoff.md"
		files["SKILL.md"] = "skills/" + Name + "/SKILL.md"
		files["README.md"] = "README.md"
		if o.SessionEndHook {
			files["hooks.json"] = "hooks/hooks.json"
		}
	case Cursor:
		files["cursor-plugin.json"] = ".cursor-plugin/plugin.json"
		files["cursor-command.md"] = "commands/" + Name + ".md"
		files["SKILL.md"] = "skills/" + Name + "/SKILL.md"
		files["README.md"] = "README.md"
	default: // Codex, Copilot, pi and opencode: a skill
		files["SKILL.md"] = "SKILL.md"
	}
	out := map[string][]byte{}
	for src, dst := range files {
		t, err := template.New(src).Funcs(funcs).Option("missingkey=error").ParseFS(templates, "templates/"+src)
		if err != nil {
			return nil, nil, err
		}
		var b bytes.Buffer
		if err := t.Execute(&b, data); err != nil {
			return nil, nil, fmt.Errorf("template %s: %w", src, err)
		}
		out[dst] = b.Bytes()
	}
	return out, map[string]bool{scriptRel(o.Agent): true}, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// shQuote quotes s for a POSIX shell.
func shQuote(s string) string {
	if s != "" && plainPath.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// ReadManifest reads the manifest of the install in dir; an error when dir
// holds none (it was not installed by skillfleet) or one of another agent.
func ReadManifest(dir, agent string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return nil, fmt.Errorf("%s was not installed by skillfleet (no %s): move it away or remove it yourself", dir, ManifestFile)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestFile), err)
	}
	if m.Schema != manifestSchema || m.Agent != agent {
		return nil, fmt.Errorf("%s: schema %q agent %q, want %q for %s", filepath.Join(dir, ManifestFile), m.Schema, m.Agent, manifestSchema, agent)
	}
	return &m, nil
}

// Install writes the agent's plugin or skill under o.Home. Installing
// again with the same options changes nothing; with other options it
// replaces the install whole. A directory of that name that skillfleet
// did not install is refused.
func Install(o Options) (*Result, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	dir, _ := Dir(o.Agent, o.Home)
	files, exe, err := render(o, dir)
	if err != nil {
		return nil, err
	}
	res := &Result{Dir: dir, Script: filepath.Join(dir, scriptRel(o.Agent))}
	for rel := range files {
		res.Files = append(res.Files, rel)
	}
	sort.Strings(res.Files)
	m := &Manifest{Schema: manifestSchema, Agent: o.Agent, Files: map[string]string{}}
	for rel, b := range files {
		m.Files[rel] = sum(b)
	}

	st, err := os.Lstat(dir)
	unchanged := false
	switch {
	case err == nil && !st.IsDir():
		return nil, fmt.Errorf("%s exists and is not a directory: move it away or remove it yourself", dir)
	case err == nil:
		old, err := ReadManifest(dir, o.Agent)
		if err != nil {
			return nil, err
		}
		m.CreatedDirs, m.ConfigEdits = old.CreatedDirs, old.ConfigEdits
		same, _ := sameTree(dir, files, exe)
		unchanged = same && maps(old.Files, m.Files)
	case errors.Is(err, fs.ErrNotExist):
		if o.Agent == Copilot { // refuse a config it cannot edit before creating anything
			if _, _, err := addMCPServer(copilotMCPConfig(o.Home), res.Script, nil, true); err != nil {
				return nil, err
			}
		}
		created, err := mkdirParents(o.Home, filepath.Dir(dir))
		if err != nil {
			return nil, err
		}
		m.CreatedDirs = created
	default:
		return nil, err
	}
	// The agent's config file, after the checks above (never for a
	// directory skillfleet did not install).
	var backup []byte
	if o.Agent == Copilot {
		var prev *ConfigEdit
		if len(m.ConfigEdits) > 0 {
			prev = &m.ConfigEdits[0]
		}
		edit, b, err := addMCPServer(copilotMCPConfig(o.Home), res.Script, prev, false)
		if err != nil {
			return nil, err
		}
		res.Configs = map[string]string{copilotMCPConfig(o.Home): "has the " + Name + " MCP server"}
		if edit != nil {
			m.ConfigEdits, backup, unchanged = []ConfigEdit{*edit}, b, false
			res.Configs[edit.Path] = "the " + Name + " MCP server added"
		}
	}
	if unchanged {
		return res, nil
	}

	// Build the new tree beside the live one, then swap it in.
	parent := filepath.Dir(dir)
	tmp, err := os.MkdirTemp(parent, "."+Name+".new-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, err
	}
	for rel, b := range files {
		p := filepath.Join(tmp, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		mode := os.FileMode(0o644)
		if exe[rel] {
			mode = 0o755
		}
		if err := os.WriteFile(p, b, mode); err != nil {
			return nil, err
		}
		if err := os.Chmod(p, mode); err != nil {
			return nil, err
		}
	}
	if backup == nil && len(m.ConfigEdits) > 0 && m.ConfigEdits[0].Existed {
		// The original from the first install, carried into the new tree.
		if backup, err = os.ReadFile(filepath.Join(dir, configBackup)); err != nil {
			return nil, fmt.Errorf("the copy of %s from the first install: %w", m.ConfigEdits[0].Path, err)
		}
	}
	if backup != nil {
		if err := os.WriteFile(filepath.Join(tmp, configBackup), backup, 0o600); err != nil {
			return nil, err
		}
	}
	mb, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, ManifestFile), append(mb, '\n'), 0o644); err != nil {
		return nil, err
	}
	if _, err := os.Lstat(dir); err == nil {
		old, err := os.MkdirTemp(parent, "."+Name+".old-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(old)
		if err := os.Rename(dir, filepath.Join(old, "tree")); err != nil {
			return nil, err
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		return nil, err
	}
	res.Changed = true
	return res, nil
}

func maps(a, b map[string]string) bool {
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

// sameTree reports whether dir holds exactly files (and the manifest),
// with the executable bits exe.
func sameTree(dir string, files map[string][]byte, exe map[string]bool) (bool, error) {
	seen := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if rel == ManifestFile || rel == configBackup {
			return nil
		}
		want, ok := files[rel]
		if !ok || !d.Type().IsRegular() {
			return errDiffers
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if (info.Mode().Perm()&0o100 != 0) != exe[rel] {
			return errDiffers
		}
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(b, want) {
			return errDiffers
		}
		seen++
		return nil
	})
	if err != nil {
		return false, err
	}
	return seen == len(files), nil
}

var errDiffers = errors.New("differs")

// mkdirParents creates dir and its missing parents up to home (which must
// exist) and returns the directories it created, outermost first.
func mkdirParents(home, dir string) ([]string, error) {
	if _, err := os.Stat(home); err != nil {
		return nil, fmt.Errorf("home: %w", err)
	}
	var missing []string
	for p := dir; p != home && p != filepath.Dir(p); p = filepath.Dir(p) {
		st, err := os.Lstat(p)
		if err == nil {
			if !st.IsDir() {
				return nil, fmt.Errorf("%s is not a directory", p)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		missing = append(missing, p)
	}
	slices.Reverse(missing)
	for _, p := range missing {
		if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
	}
	return missing, nil
}

// Uninstall removes the agent's install under home and the directories
// its first install created (when they are empty). Nothing installed is
// not an error; a directory skillfleet did not install, or an install
// holding a file skillfleet did not write, is refused.
func Uninstall(agent, home string) (*Result, error) {
	dir, err := Dir(agent, home)
	if err != nil {
		return nil, err
	}
	res := &Result{Dir: dir}
	st, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return res, nil
	}
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory skillfleet installed: remove it yourself", dir)
	}
	m, err := ReadManifest(dir, agent)
	if err != nil {
		return nil, err
	}
	var foreign []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() || rel == ManifestFile || rel == configBackup {
			return nil
		}
		if _, ok := m.Files[rel]; !ok {
			foreign = append(foreign, rel)
		} else {
			res.Files = append(res.Files, rel)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(foreign) > 0 {
		return nil, fmt.Errorf("%s holds files skillfleet did not install (%s): move them away first", dir, strings.Join(foreign, ", "))
	}
	for _, e := range m.ConfigEdits {
		var backup []byte
		if e.Existed {
			if backup, err = os.ReadFile(filepath.Join(dir, configBackup)); err != nil {
				return nil, fmt.Errorf("the copy of %s the install kept: %w", e.Path, err)
			}
		}
		what, err := removeMCPServer(e, backup)
		if err != nil {
			return nil, err
		}
		if res.Configs == nil {
			res.Configs = map[string]string{}
		}
		res.Configs[e.Path] = what
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	for i := len(m.CreatedDirs) - 1; i >= 0; i-- {
		p := m.CreatedDirs[i]
		if rel, err := filepath.Rel(home, p); err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			continue // never outside home
		}
		_ = os.Remove(p) // only when empty
	}
	sort.Strings(res.Files)
	res.Changed = true
	return res, nil
}
