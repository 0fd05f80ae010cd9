// Package exec is the llm.Model for a CLI agent used as the target: Codex
// (`codex exec`), Claude Code (`claude -p`), or any command template.
//
// Each call runs the agent once, in a fresh work directory:
//
//   - the skill is written where the agent loads skills (default
//     .agents/skills/<name>/SKILL.md; .claude/skills/<name>/SKILL.md for
//     Claude Code), with a name/description front matter when it has none.
//     The skill is Config.SkillText when set, else the text between the
//     "<skill>" and "</skill>" lines of the system message, else the whole
//     system message;
//   - the task (the system text outside the skill, then the conversation)
//     is written to task.md and passed to the command as one argv element
//     ({task}) or as the file's path ({task_file}). There is no shell: the
//     argv goes to the kernel as is, so task text cannot inject commands;
//   - the environment holds only PATH, HOME (the work directory), TMPDIR
//     (inside it) and the variables Config.Env allows; with
//     Config.UserLogin, HOME holds a copy of the user's agent login
//     (login.go) and nothing else of the user's home;
//   - the agent runs in the sandbox by default (sandbox.go: bubblewrap,
//     its work directory only, the network to its model endpoint only);
//     where the sandbox cannot be set up the call refuses with one line
//     naming what is missing, and option sandbox=none (logged) runs it as
//     a plain process instead;
//   - the agent runs in its own process group (in the sandbox, its own
//     PID namespace), and the timeout (or the caller's cancellation)
//     kills the whole group;
//   - stdout is the reply (or, with Output "claude-json" or "codex-json",
//     the result parsed from the CLI's JSON events, with its usage, led
//     by a note of the skill package's files the agent's tool calls
//     opened; output.go); output that does not parse is an *OutputError;
//     a non-zero exit is an *llm.Error of KindServer carrying the tail of
//     stderr, never a reply.
//
// When the CLI reports no usage, usage is estimated with llm.EstimateTokens
// over the skill, task and reply, and [Client.EstimatedCalls] counts it.
package exec

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skillfleet/skillfleet/backends/internal/httpx"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// Agents with built-in command templates.
const (
	AgentCodex  = "codex"
	AgentClaude = "claude"
	// AgentCursor is Cursor's agent CLI (cursor-agent); AgentCopilot the
	// GitHub Copilot CLI (copilot); AgentPi pi (pi-coding-agent);
	// AgentOpencode opencode. See harness.go.
	AgentCursor   = "cursor"
	AgentCopilot  = "copilot"
	AgentPi       = "pi"
	AgentOpencode = "opencode"
)

// Agents lists the agents with built-in command templates.
func Agents() []string {
	return []string{AgentCodex, AgentClaude, AgentCursor, AgentCopilot, AgentPi, AgentOpencode}
}

// Output formats.
const (
	// OutputText takes stdout as the reply.
	OutputText = "text"
	// OutputClaudeJSON parses `claude -p --output-format stream-json
	// --verbose` events (or the one event of `--output-format json`): the
	// result event's result, is_error and usage, and the assistant
	// events' tool calls.
	OutputClaudeJSON = "claude-json"
	// OutputCodexJSON parses `codex exec --json` events: the last
	// agent_message and the turn.completed usage.
	OutputCodexJSON = "codex-json"
	// OutputCursorJSON parses `cursor-agent -p --output-format
	// stream-json` events (parse_cursor.go).
	OutputCursorJSON = "cursor-json"
	// OutputCopilotJSON parses `copilot -p --output-format json` events
	// (parse_copilot.go).
	OutputCopilotJSON = "copilot-json"
	// OutputPiJSON parses `pi -p --mode json` events (parse_pi.go).
	OutputPiJSON = "pi-json"
	// OutputOpencodeJSON parses `opencode run --format json` events
	// (parse_opencode.go).
	OutputOpencodeJSON = "opencode-json"
)

// outputs lists the output formats option output accepts.
var outputs = []string{OutputText, OutputClaudeJSON, OutputCodexJSON, OutputCursorJSON, OutputCopilotJSON, OutputPiJSON, OutputOpencodeJSON}

// Defaults.
const (
	DefaultSkillName        = "skillfleet-target"
	DefaultSkillDescription = "Guidance for the tasks in this workspace. Read it before you start."
	DefaultTimeout          = 10 * time.Minute
	DefaultMaxOutput        = 8 << 20
	stderrTail              = 2048
)

// Placeholders replaced in command arguments (in one pass: text that
// replaces one is never scanned again).
const (
	PlaceholderTask     = "{task}"
	PlaceholderTaskFile = "{task_file}"
	PlaceholderWorkDir  = "{workdir}"
	PlaceholderSkill    = "{skill_file}"
	PlaceholderModel    = "{model}"
)

// Config configures a Client.
type Config struct {
	// Agent selects a built-in command template (AgentCodex, AgentClaude)
	// when Command is empty.
	Agent string
	// Command is the argv template; see the Placeholder constants. An
	// argument that is exactly {model} is dropped, with the flag before
	// it, when Model is empty.
	Command []string
	// Bin replaces the program of the Agent's built-in command (a path to
	// codex or claude); the preset's flags stay.
	Bin string
	// Model is the agent's model ("" = the agent's default).
	Model string
	// SkillName names the skill directory (default DefaultSkillName).
	SkillName string
	// SkillPath is where the skill is written, relative to the work
	// directory ("" = the agent's default location for SkillName).
	SkillPath string
	// SkillText, when set, is the skill of every call (the system message
	// then goes to task.md whole).
	SkillText string
	// SkillDescription is the front-matter description (default
	// DefaultSkillDescription).
	SkillDescription string
	// SkillOpen and SkillClose mark the skill inside the system message
	// (defaults "<skill>" and "</skill>").
	SkillOpen, SkillClose string
	// Output is OutputText, OutputClaudeJSON or OutputCodexJSON ("" = the
	// agent's format, else text).
	Output string
	// Env names the variables passed through besides PATH (API keys, a
	// CODEX_HOME...). Their values are redacted from error messages.
	Env []string
	// Getenv reads the parent environment (default os.Getenv).
	Getenv func(string) string
	// WorkRoot is where work directories are made ("" = os.TempDir()).
	WorkRoot string
	// KeepWorkDir keeps each call's work directory (for debugging).
	KeepWorkDir bool
	// Timeout bounds a call whose Request.Timeout is 0 (default DefaultTimeout).
	Timeout time.Duration
	// MaxOutput caps the stdout bytes kept (default DefaultMaxOutput).
	MaxOutput int
	// BaseURL points a built-in agent at a model server (an OpenAI
	// Responses API for Codex, an Anthropic Messages API for Claude Code;
	// "" = the agent's own default provider). The provider settings are
	// written per call into the call's work directory.
	BaseURL string
	// APIKeyEnv names the variable holding the key for BaseURL. It is
	// passed to the agent in its environment only (Codex: as the
	// provider's env_key; Claude Code: as ANTHROPIC_API_KEY).
	APIKeyEnv string
	// SkipVersionCheck skips CheckVersion's refusal of an untested major
	// version of a built-in agent.
	SkipVersionCheck bool
	// TaskInlineMax is the longest task passed as an argument; a longer one
	// stays in task.md and the agent is told to read it (default
	// DefaultTaskInlineMax, under Linux's 128 KiB limit per argument).
	TaskInlineMax int
	// Sandbox is each call's kernel isolation (see sandbox.go): on unless
	// Sandbox.Mode is SandboxNone.
	Sandbox SandboxConfig
	// NoteOpened is NotePackage (the default: a reply notes the files of
	// a skill package the agent opened) or NoteAlways (a plain skill's
	// SKILL.md too).
	NoteOpened string
	// UserLogin gives each call of a built-in agent a copy of the user's
	// own login (Codex's auth.json, Claude Code's .credentials.json) in
	// its HOME; see login.go.
	UserLogin bool
	// Mode is ModeAgent ("" too) or ModeChat (harness.go).
	Mode string
	// EmptyRetries reruns a call whose agent ended well but whose reply
	// held no text, this many times (default 0: such a call is an
	// invalid reply at once).
	EmptyRetries int
	// TraceSummary leads each agent-mode reply with a bounded summary of
	// what the agent did (trace.go), for the optimizer.
	TraceSummary bool
	// NoteTools leads each agent-mode reply with the note of the tool
	// calls the agent's stream showed (prompts.ToolsNote), "none" when it
	// showed none, so a judge of the reply reads which tools the agent
	// really called (a night's tool_called check).
	NoteTools bool
	// Extra are the harness arguments put at {harness_args}, and
	// ExtraEnv further NAME=value entries of the agent's environment
	// (harnessOptions).
	Extra    []string
	ExtraEnv []string
	// CodexSandbox replaces Codex's --sandbox mode (default
	// workspace-write; read-only in chat mode); CursorSandbox Cursor's
	// (default enabled).
	CodexSandbox, CursorSandbox string
	// AllowAllTools lets Copilot run every tool unattended.
	AllowAllTools bool
}

// Config.NoteOpened values.
const (
	NotePackage = "package"
	NoteAlways  = "always"
)

// DefaultTaskInlineMax is Config.TaskInlineMax's default.
const DefaultTaskInlineMax = 100_000

// ConfigFromOptions builds a Config from a model spec's options: agent,
// command (a JSON array), bin (replaces the command's program), skill_name,
// skill_path, skill_text, skill_description, skill_open, skill_close,
// output, env (comma list), work_root, keep_workdir, timeout (a Go
// duration), max_output_bytes, base_url, api_key_env, version_check
// (false skips it), task_inline_max (bytes), note_opened (package or
// always), user_login (true: the user's own login, login.go), note_tools
// (true: the tools note, Config.NoteTools).
func ConfigFromOptions(model string, opts map[string]string) (Config, error) {
	c := Config{
		Agent: opts["agent"], Model: model, SkillName: opts["skill_name"], SkillPath: opts["skill_path"],
		SkillText: opts["skill_text"], SkillDescription: opts["skill_description"], SkillOpen: opts["skill_open"],
		SkillClose: opts["skill_close"], Output: opts["output"], WorkRoot: opts["work_root"],
		BaseURL: opts["base_url"], APIKeyEnv: opts["api_key_env"],
	}
	var errs []string
	if v := opts["command"]; v != "" {
		if err := json.Unmarshal([]byte(v), &c.Command); err != nil || len(c.Command) == 0 {
			errs = append(errs, fmt.Sprintf("option command=%q: want a non-empty JSON array of strings", v))
		}
	}
	if v := strings.TrimSpace(opts["env"]); v != "" {
		for _, n := range strings.Split(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				c.Env = append(c.Env, n)
			}
		}
	}
	if v := opts["keep_workdir"]; v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Sprintf("option keep_workdir=%q: want true or false", v))
		}
		c.KeepWorkDir = b
	}
	if v := opts["timeout"]; v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Sprintf("option timeout=%q: want a positive duration such as \"5m\"", v))
		}
		c.Timeout = d
	}
	if v := opts["user_login"]; v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Sprintf("option user_login=%q: want true or false", v))
		}
		c.UserLogin = b
	}
	if v := opts["version_check"]; v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Sprintf("option version_check=%q: want true or false", v))
		}
		c.SkipVersionCheck = !b
	}
	if v := opts["task_inline_max"]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Sprintf("option task_inline_max=%q: want a positive number of bytes", v))
		}
		c.TaskInlineMax = n
	}
	if v := opts["max_output_bytes"]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Sprintf("option max_output_bytes=%q: want a positive integer", v))
		}
		c.MaxOutput = n
	}
	errs = append(errs, sandboxOptions(opts, &c)...)
	errs = append(errs, harnessOptions(opts, &c)...)
	switch c.Mode = opts["mode"]; c.Mode {
	case "", ModeAgent, ModeChat:
	default:
		errs = append(errs, fmt.Sprintf("option mode=%q: want %s or %s", c.Mode, ModeAgent, ModeChat))
	}
	if v := opts["empty_retries"]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 5 {
			errs = append(errs, fmt.Sprintf("option empty_retries=%q: want 0 to 5", v))
		}
		c.EmptyRetries = n
	}
	if v := opts["trace_summary"]; v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Sprintf("option trace_summary=%q: want true or false", v))
		}
		c.TraceSummary = b
	}
	if v := opts["note_tools"]; v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Sprintf("option note_tools=%q: want true or false", v))
		}
		c.NoteTools = b
	}
	if len(c.Command) == 0 {
		if _, ok := presets[c.Agent]; !ok {
			errs = append(errs, fmt.Sprintf("option agent=%q: want one of %s, or set option command", c.Agent, strings.Join(Agents(), ", ")))
		}
	}
	if bin := opts["bin"]; bin != "" {
		if len(c.Command) > 0 {
			c.Command[0] = bin
		} else {
			c.Bin = bin
		}
	}
	switch c.NoteOpened = opts["note_opened"]; c.NoteOpened {
	case "", NotePackage, NoteAlways:
	default:
		errs = append(errs, fmt.Sprintf("option note_opened=%q: want %s or %s", c.NoteOpened, NotePackage, NoteAlways))
	}
	if c.Output != "" && !slices.Contains(outputs, c.Output) {
		errs = append(errs, fmt.Sprintf("option output=%q: want one of %s", c.Output, strings.Join(outputs, ", ")))
	}
	if c.SkillPath != "" && !filepath.IsLocal(c.SkillPath) {
		errs = append(errs, fmt.Sprintf("option skill_path=%q: want a relative path inside the work directory", c.SkillPath))
	}
	if len(errs) > 0 {
		return c, errors.New(strings.Join(errs, "; "))
	}
	return c, nil
}

type preset struct {
	argv      []string
	output    string
	skillPath string // with %s for the skill name
	// chat is the command of chat mode (ModeChat), whose output reads as
	// chatOutput; with chatStdin the prompt goes on stdin, else at {task}.
	chat       []string
	chatOutput string
	chatStdin  bool
}

var presets = map[string]preset{
	// Claude Code in print mode: only project settings (the skill in
	// .claude/skills) and claudeSettings (sandboxed Bash, no prompts), no
	// MCP servers, no saved session, and the tools a task needs. Its
	// output is the event stream (stream-json, which print mode allows
	// only with --verbose): the tool calls are in it, not in json's
	// result alone. Chat mode: no tool at all, the prompt on stdin, the
	// one result event of --output-format json.
	AgentClaude: {
		argv: []string{"claude", "-p", PlaceholderTask, "--output-format", "stream-json", "--verbose", "--model", PlaceholderModel,
			"--setting-sources", "project", "--settings", claudeSettings, "--strict-mcp-config",
			"--no-session-persistence", "--tools", "Bash,Read,Glob,Grep,Skill", PlaceholderHarness},
		output:    OutputClaudeJSON,
		skillPath: ".claude/skills/%s/SKILL.md",
		chat: []string{"claude", "-p", "--output-format", "json", "--model", PlaceholderModel,
			"--setting-sources", "project", "--strict-mcp-config", "--no-session-persistence", "--tools", "", PlaceholderHarness},
		chatOutput: OutputClaudeJSON,
		chatStdin:  true,
	},
	AgentCodex: {
		// codex exec: commands sandboxed to the work directory (writes
		// there only, no network), never an approval prompt, no session
		// kept. Chat mode: no shell tool (Codex cannot turn off its other,
		// non-acting tools), a read-only sandbox in an empty directory,
		// the prompt on stdin ("-").
		argv: []string{"codex", "exec", "--skip-git-repo-check", "--json", "--ephemeral", "--sandbox", "workspace-write",
			"-c", `approval_policy="never"`, "-C", PlaceholderWorkDir, "-m", PlaceholderModel, PlaceholderHarness, PlaceholderTask},
		output:    OutputCodexJSON,
		skillPath: ".agents/skills/%s/SKILL.md",
		chat: []string{"codex", "exec", "--skip-git-repo-check", "--json", "--ephemeral", "--sandbox", "read-only",
			"-c", `approval_policy="never"`, "-c", "features.shell_tool=false", "-C", PlaceholderWorkDir, "-m", PlaceholderModel, PlaceholderHarness, "-"},
		chatOutput: OutputCodexJSON,
		chatStdin:  true,
	},
	// Cursor Agent in print mode, read-only (ask mode: it reads files and
	// searches, it edits nothing), its own sandbox on, the work directory
	// trusted so that its project skills (.cursor/skills) load. Chat
	// mode: the same in an empty directory, with the one result event of
	// --output-format json.
	AgentCursor: {
		argv: []string{"cursor-agent", "-p", "--output-format", "stream-json", "--trust", "--workspace", PlaceholderWorkDir,
			"--sandbox", "enabled", "--mode", "ask", "--model", PlaceholderModel, PlaceholderHarness, PlaceholderTask},
		output:    OutputCursorJSON,
		skillPath: ".cursor/skills/%s/SKILL.md",
		chat: []string{"cursor-agent", "-p", "--output-format", "json", "--trust", "--workspace", PlaceholderWorkDir,
			"--sandbox", "enabled", "--mode", "ask", "--model", PlaceholderModel, PlaceholderHarness, PlaceholderTask},
		chatOutput: OutputCursorJSON,
	},
	// The Copilot CLI in prompt mode: JSON-lines events, no streaming
	// deltas, no MCP server, no custom instructions, no update, the work
	// directory trusted for this session only (so its project skills in
	// .github/skills load), its usage written to a file (its events carry
	// no token counts). Its tools need approval in prompt mode: the
	// target may read (view, grep, glob) and run shell commands (bash)
	// unattended, inside skillfleet's sandbox; option allow_all_tools
	// allows every tool. Chat mode: no tool available at all (an
	// allowlist naming no tool: an empty one means every tool).
	AgentCopilot: {
		argv: []string{"copilot", "-p", PlaceholderTask, "--output-format", "json", "--stream", "off", "--no-color", "--log-level", "none",
			"--disable-builtin-mcps", "--no-custom-instructions", "--no-auto-update", "--no-ask-user", "--trust-folder", "-C", PlaceholderWorkDir,
			"--allow-tool", "view", "--allow-tool", "grep", "--allow-tool", "glob", "--allow-tool", "skill", "--allow-tool", "shell",
			"--usage-output-file", "{workdir}/" + copilotUsageFile, "--model", PlaceholderModel, PlaceholderHarness},
		output:    OutputCopilotJSON,
		skillPath: ".github/skills/%s/SKILL.md",
		chat: []string{"copilot", "-p", PlaceholderTask, "--output-format", "json", "--stream", "off", "--no-color", "--log-level", "none",
			"--disable-builtin-mcps", "--no-custom-instructions", "--no-auto-update", "--no-ask-user", "-C", PlaceholderWorkDir,
			"--available-tools=none", "--usage-output-file", "{workdir}/" + copilotUsageFile, "--model", PlaceholderModel, PlaceholderHarness},
		chatOutput: OutputCopilotJSON,
	},
	// pi in print mode with its JSON event stream: no saved session, no
	// context files, extensions, prompt templates or themes, no startup
	// network, the read and bash tools; the skill in the project's
	// .pi/skills. Chat mode: no tool and no skill, the prompt on stdin.
	AgentPi: {
		argv: []string{"pi", "-p", "--mode", "json", "--no-session", "--no-context-files", "--no-extensions", "--no-prompt-templates",
			"--no-themes", "--offline", "--tools", "read,bash", "--model", PlaceholderModel, PlaceholderHarness, PlaceholderTask},
		output:    OutputPiJSON,
		skillPath: ".pi/skills/%s/SKILL.md",
		chat: []string{"pi", "-p", "--mode", "json", "--no-session", "--no-tools", "--no-skills", "--no-context-files", "--no-extensions",
			"--no-prompt-templates", "--no-themes", "--offline", "--model", PlaceholderModel, PlaceholderHarness},
		chatOutput: OutputPiJSON,
		chatStdin:  true,
	},
	// opencode run with its JSON events, without external plugins, in the
	// work directory; the skill in the project's .opencode/skills; the
	// tools' permissions and the provider in OPENCODE_CONFIG_CONTENT
	// (wireAgent); a title given, so that it asks the model for none.
	// Chat mode: every tool off.
	AgentOpencode: {
		argv: []string{"opencode", "run", "--format", "json", "--pure", "--title", "skillfleet", "--dir", PlaceholderWorkDir,
			"--model", PlaceholderModel, PlaceholderHarness, PlaceholderTask},
		output:    OutputOpencodeJSON,
		skillPath: ".opencode/skills/%s/SKILL.md",
		chat: []string{"opencode", "run", "--format", "json", "--pure", "--title", "skillfleet", "--dir", PlaceholderWorkDir,
			"--model", PlaceholderModel, PlaceholderHarness, PlaceholderTask},
		chatOutput: OutputOpencodeJSON,
	},
}

// Client runs a CLI agent per call. It is safe for concurrent use: each
// call has its own work directory and process group.
type Client struct {
	cfg       Config
	argv      []string
	output    string
	skillPath string
	// chat: the client serves a chat role (ModeChat); chatStdin: the
	// prompt goes on the agent's stdin.
	chat, chatStdin bool
	// rgPath is the ripgrep opencode gets (ripgrep()).
	rgOnce sync.Once
	rgPath string
	// pkgDir is the Copilot CLI's shared package cache (copilotPkgCache).
	pkgOnce   sync.Once
	pkgDir    string
	calls     atomic.Int64
	estimated atomic.Int64
	sb        sandboxState
	proxyMu   sync.Mutex
	// grader is the chat-mode twin of an agent-mode client (graderFor).
	graderOnce sync.Once
	grader     atomic.Pointer[Client]
}

var _ llm.Model = (*Client)(nil)

// New returns a Client (config errors surface on the first call as
// KindInvalidRequest; ConfigFromOptions reports them up front).
func New(cfg Config) *Client {
	p := presets[cfg.Agent]
	c := &Client{cfg: cfg, argv: cfg.Command, output: cfg.Output, chat: cfg.Mode == ModeChat}
	if c.chat && len(cfg.Command) == 0 {
		p.argv, p.output = p.chat, p.chatOutput
		c.chatStdin = p.chatStdin
	}
	if len(c.argv) == 0 && len(p.argv) > 0 {
		c.argv = slices.Clone(p.argv)
		if cfg.Bin != "" {
			c.argv[0] = cfg.Bin
		}
		c.argv = setFlag(c.argv, "--sandbox", cmpOr(cfg.CodexSandbox, cfg.CursorSandbox))
		if cfg.AllowAllTools && !slices.Contains(c.argv, "--allow-all-tools") {
			c.argv = slices.Insert(c.argv, 1, "--allow-all-tools")
		}
	}
	// A relative program path with a directory (".tools/agents/...") is
	// taken from the current directory, not the call's work directory.
	if len(c.argv) > 0 && strings.ContainsRune(c.argv[0], filepath.Separator) && !filepath.IsAbs(c.argv[0]) {
		if abs, err := filepath.Abs(c.argv[0]); err == nil {
			c.argv = append([]string{abs}, c.argv[1:]...)
		}
	}
	if c.output == "" {
		c.output = cmpOr(p.output, OutputText)
	}
	name := cmpOr(cfg.SkillName, DefaultSkillName)
	c.skillPath = cfg.SkillPath
	if c.skillPath == "" {
		c.skillPath = fmt.Sprintf(cmpOr(p.skillPath, ".agents/skills/%s/SKILL.md"), name)
	}
	if c.cfg.Getenv == nil {
		c.cfg.Getenv = os.Getenv
	}
	c.cfg.Timeout = cmpOr(c.cfg.Timeout, DefaultTimeout)
	c.cfg.MaxOutput = cmpOr(c.cfg.MaxOutput, DefaultMaxOutput)
	c.cfg.TaskInlineMax = cmpOr(c.cfg.TaskInlineMax, DefaultTaskInlineMax)
	c.cfg.SkillName = name
	c.cfg.SkillDescription = cmpOr(c.cfg.SkillDescription, DefaultSkillDescription)
	c.cfg.SkillOpen = cmpOr(c.cfg.SkillOpen, "<skill>")
	c.cfg.SkillClose = cmpOr(c.cfg.SkillClose, "</skill>")
	return c
}

// String names the agent program.
func (c *Client) String() string { return "exec(" + c.Endpoint() + ")" }

// Endpoint is the agent program, for limiter keys.
func (c *Client) Endpoint() string {
	if len(c.argv) == 0 {
		return ""
	}
	return c.argv[0]
}

// Calls counts the calls made; EstimatedCalls those whose usage the CLI
// did not report and was estimated.
func (c *Client) Calls() int64 {
	n := c.calls.Load()
	if g := c.grader.Load(); g != nil {
		n += g.Calls()
	}
	return n
}

// EstimatedCalls counts calls whose usage was estimated.
func (c *Client) EstimatedCalls() int64 {
	n := c.estimated.Load()
	if g := c.grader.Load(); g != nil {
		n += g.EstimatedCalls()
	}
	return n
}

// SkillPath is where the skill is written, relative to the work directory.
func (c *Client) SkillPath() string { return c.skillPath }

// Chat implements llm.Model.
func (c *Client) Chat(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if len(c.argv) == 0 {
		return nil, &llm.Error{Kind: llm.KindInvalidRequest, Msg: "exec backend: no command (set option agent or command)"}
	}
	if g := c.graderFor(req); g != nil {
		return g.Chat(ctx, req)
	}
	if c.chat {
		if err := chatRequestOK(req); err != nil {
			return nil, err
		}
	}
	var resp *llm.Response
	var err error
	for attempt := 0; ; attempt++ {
		resp, err = c.call(ctx, req)
		var oe *OutputError
		if err == nil || attempt >= c.cfg.EmptyRetries || !errors.As(err, &oe) || !oe.empty || ctx.Err() != nil {
			break
		}
	}
	return resp, err
}

// GradingStages are the request stages that grade a reply: the Sleep
// rubric judge's (pkg/nightly) and the jsonl benchmark's judge
// (pkg/bench/jsonl). Both send their judge request to the target model.
var GradingStages = []string{"sleep_judge", "judge"}

// graderFor returns, for a grading request (GradingStages) to an
// agent-mode client of a built-in agent, the client's chat-mode twin, or
// nil. A judge is a chat role: in agent mode the agent would grade with
// its tools and the skill under training in its workspace. The twin has
// the same program, endpoint, login and options, without the agent-mode
// sandbox and tool settings; its calls count in Calls.
func (c *Client) graderFor(req *llm.Request) *Client {
	if c.chat || len(c.cfg.Command) > 0 || len(presets[c.cfg.Agent].chat) == 0 || !slices.Contains(GradingStages, req.Stage) {
		return nil
	}
	c.graderOnce.Do(func() {
		cfg := c.cfg
		cfg.Mode = ModeChat
		cfg.CodexSandbox, cfg.CursorSandbox, cfg.AllowAllTools = "", "", false
		c.grader.Store(New(cfg))
	})
	return c.grader.Load()
}

// call runs the agent once.
func (c *Client) call(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	c.calls.Add(1)
	timeout := cmpOr(req.Timeout, c.cfg.Timeout)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var skill, task string
	if c.chat {
		task = chatPrompt(req)
	} else {
		skill, task = c.compose(req)
	}
	dir, err := os.MkdirTemp(c.cfg.WorkRoot, "skillfleet-exec-*")
	if err != nil {
		return nil, &llm.Error{Kind: llm.KindServer, Msg: "make work directory: " + err.Error()}
	}
	if !c.cfg.KeepWorkDir {
		defer os.RemoveAll(dir)
	}
	var taskFile, skillFile string
	if c.chat {
		err = os.MkdirAll(filepath.Join(dir, ".tmp"), 0o755)
	} else {
		taskFile, skillFile, task, err = c.prepare(dir, skill, task, req)
	}
	if err != nil {
		return nil, &llm.Error{Kind: llm.KindServer, Msg: "prepare work directory: " + err.Error()}
	}
	model := cmpOr(req.Model, c.cfg.Model)
	prompt := task
	var stdin io.Reader
	switch {
	case c.chat && c.chatStdin:
		stdin, prompt = strings.NewReader(task), ""
	case c.chat && len(task) > c.cfg.TaskInlineMax:
		return nil, &llm.Error{Kind: llm.KindInvalidRequest, Msg: fmt.Sprintf("chat prompt of %d bytes is longer than task_inline_max (%d): agent %s takes its prompt only as one argument", len(task), c.cfg.TaskInlineMax, c.cfg.Agent)}
	case len(prompt) > c.cfg.TaskInlineMax:
		prompt = taskFilePrompt
	}
	argv := c.command(model, map[string]string{
		PlaceholderTask: prompt, PlaceholderTaskFile: taskFile, PlaceholderWorkDir: dir,
		PlaceholderSkill: skillFile, PlaceholderModel: c.modelArg(model),
	})
	env, secrets := c.env(dir)
	provider, cleanup, err := c.wireProvider(dir, model)
	defer cleanup()
	if err != nil {
		return nil, &llm.Error{Kind: llm.KindServer, Msg: "write the agent's provider settings: " + err.Error()}
	}
	for _, kv := range provider {
		for _, k := range []string{"ANTHROPIC_API_KEY=", "COPILOT_PROVIDER_API_KEY="} {
			if v, ok := strings.CutPrefix(kv, k); ok && v != noKey {
				secrets = append(secrets, v)
			}
		}
	}
	env = append(env, provider...)
	env = append(env, c.cfg.ExtraEnv...)
	env = append(env, c.tokenEnv()...)
	login, loginSecrets, err := c.copyLogin(dir)
	defer removeLogin(login)
	if err != nil {
		return nil, err
	}
	secrets = append(loginSecrets, secrets...)
	red := httpx.NewRedactor(secrets...)

	stdout := &capped{max: c.cfg.MaxOutput}
	stderr := &tail{max: stderrTail}
	var runErr error
	if c.sandboxed() {
		runErr = c.runSandboxed(ctx, dir, argv, env, stdin, stdout, stderr)
	} else {
		_ = c.sandboxReady() // logs the opt-out once
		cmd := osexec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir, cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = dir, env, stdin, stdout, stderr
		cmd.WaitDelay = 2 * time.Second
		setProcessGroup(cmd)
		runErr = cmd.Run()
		killGroup(cmd) // stray children of an agent that exited
	}
	removeLogin(login) // before anything reads the work directory back

	in := llm.EstimateTokens(skill) + llm.EstimateTokens(task)
	switch {
	case runErr != nil && ctx.Err() != nil:
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, &llm.Error{Kind: llm.KindTimeout, Msg: fmt.Sprintf("agent %s timed out after %s; process group killed", filepath.Base(argv[0]), timeout), Err: context.DeadlineExceeded}
		}
		return nil, &llm.Error{Kind: llm.KindCancelled, Msg: "agent cancelled; process group killed", Err: context.Canceled}
	case runErr != nil:
		var ee *osexec.ExitError
		var se *sandboxExit
		var state fmt.Stringer
		switch {
		case errors.As(runErr, &ee):
			state = ee.ProcessState
		case errors.As(runErr, &se):
			state = se
		default:
			return nil, &llm.Error{Kind: llm.KindInvalidRequest, Msg: "start agent: " + red.Msg(runErr.Error())}
		}
		e := &llm.Error{Kind: llm.KindServer, Msg: fmt.Sprintf("agent %s exited with %s: %s", filepath.Base(argv[0]), state.String(), red.Msg(stderr.String()))}
		r, perr := c.parse(stdout.Bytes(), stdout.cut)
		if perr == nil && r.content != "" && c.output != OutputText {
			e.Msg += "; it reported: " + red.Msg(string(head([]byte(r.content), 500)))
		}
		if perr == nil && r.usage != nil {
			return nil, &llm.BilledError{Usage: *r.usage, Err: e}
		}
		return nil, e
	}
	r, perr := c.parse(stdout.Bytes(), stdout.cut)
	if r.usage == nil && c.output == OutputCopilotJSON {
		r.usage = copilotUsage(dir)
	}
	if perr != nil {
		perr.Excerpt = red.Msg(perr.Excerpt)
		return nil, &llm.BilledError{Usage: llm.Usage{InputTokens: in}, Err: &llm.Error{Kind: llm.KindInvalidReply, Msg: "unreadable agent output", Err: perr}}
	}
	if r.failed {
		e := &llm.Error{Kind: llm.KindServer, Msg: "agent reported an error: " + red.Msg(r.content)}
		if r.usage != nil {
			return nil, &llm.BilledError{Usage: *r.usage, Err: e}
		}
		return nil, e
	}
	// An agent that printed its login, its key or another value of its
	// environment does not carry it into the trajectory.
	r.content = red.String(r.content)
	content := r.content
	if !c.chat {
		if c.cfg.TraceSummary {
			content = c.traceSummary(r, red) + content
		}
		if c.cfg.NoteTools {
			calls := make([]string, len(r.calls))
			for i, call := range r.calls {
				calls[i] = red.String(call)
			}
			content = prompts.ToolsNoteLine(calls) + content
		}
		content = c.noteOpenedFiles(skill, r.used, content)
	}
	resp := &llm.Response{Content: content, Model: cmpOr(r.model, model), FinishReason: "stop", Attempts: 1}
	if r.usage != nil {
		resp.Usage = *r.usage
	} else {
		c.estimated.Add(1)
		resp.Usage = llm.Usage{InputTokens: in, OutputTokens: llm.EstimateTokens(r.content)}
	}
	return resp, nil
}

// compose splits a request into the skill and the task text.
func (c *Client) compose(req *llm.Request) (skill, task string) {
	var sys, conv []string
	var roles []string
	for _, m := range req.Messages {
		if m.Role == llm.RoleSystem {
			sys = append(sys, m.Text())
			continue
		}
		conv = append(conv, m.Text())
		roles = append(roles, m.Role)
	}
	system := strings.Join(sys, "\n\n")
	instructions := ""
	switch {
	case c.cfg.SkillText != "":
		skill, instructions = c.cfg.SkillText, system
	default:
		open, closing := c.cfg.SkillOpen+"\n", "\n"+c.cfg.SkillClose
		i := strings.Index(system, open)
		j := strings.LastIndex(system, closing)
		if i >= 0 && j >= i+len(open)-1 {
			skill = system[i+len(open) : max(j, i+len(open))]
			var rest []string
			for _, r := range []string{system[:i], system[j+len(closing):]} {
				if r = strings.TrimSpace(r); r != "" {
					rest = append(rest, r)
				}
			}
			instructions = strings.Join(rest, "\n\n")
		} else {
			skill = system
		}
	}
	var b strings.Builder
	if instructions != "" {
		b.WriteString(instructions)
		b.WriteString("\n\n")
	}
	onlyUser := true
	for _, r := range roles {
		onlyUser = onlyUser && r == llm.RoleUser
	}
	for i, t := range conv {
		if i > 0 {
			b.WriteString("\n\n")
		}
		if !onlyUser {
			b.WriteString("## " + roles[i] + "\n\n")
		}
		b.WriteString(t)
	}
	return skill, b.String()
}

// prepare writes the skill, the attachments and task.md into dir and
// returns the task file's and skill file's paths and the final task text.
func (c *Client) prepare(dir, skill, task string, req *llm.Request) (taskFile, skillFile, text string, err error) {
	skillFile = filepath.Join(dir, c.skillPath)
	if err := os.MkdirAll(filepath.Dir(skillFile), 0o755); err != nil {
		return "", "", "", err
	}
	if err := c.writeSkill(skillFile, skill); err != nil {
		return "", "", "", err
	}
	if err := os.MkdirAll(filepath.Join(dir, ".tmp"), 0o755); err != nil {
		return "", "", "", err
	}
	var att []string
	n := 0
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			if p.Type != "image" {
				continue
			}
			n++
			name, data, ok := decodeDataURI(p.ImageURL, n)
			if !ok {
				att = append(att, "- "+p.ImageURL)
				continue
			}
			rel := filepath.Join("attachments", name)
			if err := os.MkdirAll(filepath.Join(dir, "attachments"), 0o755); err != nil {
				return "", "", "", err
			}
			if err := os.WriteFile(filepath.Join(dir, rel), data, 0o644); err != nil {
				return "", "", "", err
			}
			att = append(att, "- "+rel)
		}
	}
	if len(att) > 0 {
		task += "\n\nAttached images:\n" + strings.Join(att, "\n")
	}
	taskFile = filepath.Join(dir, "task.md")
	if err := os.WriteFile(taskFile, []byte(task), 0o644); err != nil {
		return "", "", "", err
	}
	return taskFile, skillFile, task, nil
}

func decodeDataURI(u string, n int) (name string, data []byte, ok bool) {
	rest, isData := strings.CutPrefix(u, "data:")
	if !isData {
		return "", nil, false
	}
	meta, enc, found := strings.Cut(rest, ",")
	mediaType, isB64 := strings.CutSuffix(meta, ";base64")
	if !found || !isB64 {
		return "", nil, false
	}
	b, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return "", nil, false
	}
	ext := "bin"
	if _, sub, ok := strings.Cut(mediaType, "/"); ok && sub != "" && !strings.ContainsAny(sub, `/\.`) {
		ext = sub
	}
	return fmt.Sprintf("image-%d.%s", n, ext), b, true
}

// command fills the argv template. An argument that is exactly {model}
// is dropped, with the flag before it, when the model is empty.
func (c *Client) command(model string, vals map[string]string) []string {
	pairs := make([]string, 0, 2*len(vals))
	for k, v := range vals {
		pairs = append(pairs, k, v)
	}
	r := strings.NewReplacer(pairs...)
	var argv []string
	for i, a := range c.argv {
		if a == PlaceholderHarness {
			argv = append(argv, c.cfg.Extra...)
			continue
		}
		if a == PlaceholderModel && model == "" {
			if i > 0 && len(argv) > 0 && strings.HasPrefix(c.argv[i-1], "-") {
				argv = argv[:len(argv)-1]
			}
			continue
		}
		argv = append(argv, r.Replace(a))
	}
	return argv
}

// setFlag sets the value after flag in argv, when both are there.
func setFlag(argv []string, flag, value string) []string {
	if value == "" {
		return argv
	}
	for i := range len(argv) - 1 {
		if argv[i] == flag {
			argv[i+1] = value
		}
	}
	return argv
}

// env builds the agent's environment and lists the values to redact.
func (c *Client) env(dir string) (env, secrets []string) {
	path := c.cfg.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	env = []string{"PATH=" + path, "HOME=" + dir, "TMPDIR=" + filepath.Join(dir, ".tmp")}
	names := c.cfg.Env
	if c.cfg.APIKeyEnv != "" && slices.Contains([]string{AgentCodex, AgentPi, AgentOpencode}, c.cfg.Agent) && !slices.Contains(names, c.cfg.APIKeyEnv) {
		names = append(slices.Clip(names), c.cfg.APIKeyEnv) // the provider's key variable
	}
	for _, n := range names {
		switch n {
		case "PATH", "HOME", "TMPDIR":
			continue
		}
		if v := c.cfg.Getenv(n); v != "" {
			env = append(env, n+"="+v)
			secrets = append(secrets, v)
		}
	}
	return env, secrets
}

// capped keeps the first max bytes written; cut says more came.
type capped struct {
	buf bytes.Buffer
	max int
	cut bool
}

func (w *capped) Write(p []byte) (int, error) {
	room := w.max - w.buf.Len()
	w.buf.Write(p[:max(0, min(len(p), room))])
	w.cut = w.cut || len(p) > room
	return len(p), nil
}

func (w *capped) Bytes() []byte { return w.buf.Bytes() }

// tail keeps the last max bytes written.
type tail struct {
	b   []byte
	max int
}

func (w *tail) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	if len(w.b) > w.max {
		w.b = append([]byte(nil), w.b[len(w.b)-w.max:]...)
	}
	return len(p), nil
}

func (w *tail) String() string { return strings.TrimSpace(string(w.b)) }

func head(b []byte, n int) []byte { return b[:min(len(b), n)] }

func cmpOr[T comparable](a, b T) T {
	var zero T
	if a != zero {
		return a
	}
	return b
}
