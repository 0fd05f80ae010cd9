package exec

// The agent under kernel isolation: the default for every agent (option
// sandbox: bubblewrap, or no option at all). Each call runs the CLI in a
// pkg/sandbox run:
//
//   - its work directory is the sandbox's /work, a size-limited tmpfs
//     holding what prepare and wireProvider wrote (the skill, task.md,
//     the attachments, its HOME and CODEX_HOME settings); with
//     KeepWorkDir its files are copied back to the host work directory
//     when it ends (regular files only);
//   - the CLI's install tree (the directory holding node_modules, or the
//     binary's own directory) is bound read-only at /opt/agent, /usr is
//     read-only, and nothing else of the host is there: no dataset, no run
//     directory, no other call's work directory, no host socket;
//   - its network is a private loopback where only the model endpoint is
//     reachable: a loopback endpoint (sim-llm, a local server) at its own
//     127.0.0.1:PORT through pkg/sandbox's forwarder, anything else
//     through HTTPS_PROXY, a CONNECT proxy on the worker that lets
//     through the endpoint's host:port and refuses every other target;
//   - its environment is the one Chat built (keys only as allowed), with
//     host paths rewritten to the sandbox's;
//   - the timeout or a cancel kills the whole sandbox (its PID namespace:
//     every process the CLI started), as does the worker's death.
//
// There is no silent fallback: where the isolation cannot be set up, the
// first call and CheckVersion fail with pkg/sandbox's one line naming
// what is missing and how to install it. Option sandbox=none runs the
// agent as a plain process group on the worker instead: an explicit
// opt-in, logged once per client as a warning.

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	osexec "os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/skillfleet/skillfleet/pkg/sandbox"
)

// Sandbox modes (option sandbox).
const (
	SandboxNone       = "none"
	SandboxBubblewrap = "bubblewrap"
)

// SandboxConfig configures the isolation of the agent.
type SandboxConfig struct {
	// Mode is SandboxBubblewrap ("" too: the default) or SandboxNone
	// (the explicit, logged opt-out).
	Mode string
	// Logf receives the warning that an agent runs without the sandbox
	// (default: standard error).
	Logf func(format string, args ...any)
	// ReadOnly are further host paths the agent needs, bound read-only at
	// the same place (not under /work, /tmp, /usr).
	ReadOnly []string
	// Limits bound each call; zero fields take agentLimits' values.
	Limits sandbox.Limits
	// Bwrap is the bubblewrap binary (default: bwrap on PATH).
	Bwrap string
	// CAFile is a PEM bundle of further CAs the agent trusts for an
	// https endpoint (a private gateway's own CA), added to the system's.
	CAFile string
	// NoNestedUserNS forbids user namespaces inside the sandbox. By
	// default they are allowed: the built-in CLIs sandbox their tool
	// commands with bubblewrap themselves (Claude Code, Codex), which
	// then nests inside ours; without it their shell tool fails.
	NoNestedUserNS bool
	// extraBinds are further (host, sandbox) read-only binds (the check's
	// view of an agents tree).
	extraBinds [][2]string
}

// agentRoot is where the CLI's install tree is bound in the sandbox.
const agentRoot = "/opt/agent"

// Memory caps of an agent call, from what the real CLIs need (measured
// by TestRealAgentMemory: one call reading its skill with a shell command
// and answering, sandboxed, on a 2-core host). The cap that matters is
// DefaultAgentResidentMB on the resident memory not backed by a file of
// all the call's processes together, enforced by pkg/sandbox's poll, since the
// hosts we run on often have no cgroup v2 memory controller for the
// worker (this one: hybrid, memory on cgroup v1). Per process, RLIMIT_AS
// is only a backstop: the CLIs reserve far more address space than they
// touch, and the reservation grows with the host's cores and threads.
const (
	// DefaultAgentResidentMB: a Codex CLI call's processes peaked at
	// 36 MiB resident not backed by a file (216 MiB resident in all:
	// codex 137, its node launcher 41), a Claude Code call's at 106 MiB
	// (218 in all: claude 188, its npm launchers 50 and 36). 2 GiB
	// leaves room for the tool commands an agent runs (a Python script
	// over a data file).
	DefaultAgentResidentMB = 2048
	// agentAddressSpaceMB: Claude Code reserves 9.6 GiB of address space
	// (VmPeak; 5.4 GiB of it data) for its 189 MiB, Codex 421 MiB, the
	// node launchers 0.7-1 GiB.
	agentAddressSpaceMB = 32 << 10
)

// agentLimits are the defaults for an agent call: CLIs are large
// runtimes, run many threads and for minutes.
func agentLimits(l sandbox.Limits, timeout time.Duration) sandbox.Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	if l.Wall <= 0 {
		l.Wall = timeout + 5*time.Second
	}
	def(&l.CPU, int(timeout/time.Second)+30)
	def(&l.MemoryMB, agentAddressSpaceMB)
	def(&l.ResidentMB, DefaultAgentResidentMB)
	def(&l.FileMB, 256)
	def(&l.Procs, 1024)
	def(&l.OpenFiles, 4096)
	def(&l.WorkMB, 512)
	def(&l.CollectMB, 128)
	return l
}

// sandboxOptions reads the sandbox options: sandbox (bubblewrap, the
// default, or none), sandbox_ro (comma list of host paths),
// sandbox_work_mb, sandbox_procs, sandbox_memory_mb (the resident memory
// cap of a call's processes together, default DefaultAgentResidentMB),
// sandbox_ca_file, sandbox_nested_userns (true|false).
func sandboxOptions(opts map[string]string, c *Config) (errs []string) {
	switch v := opts["sandbox"]; v {
	case "", SandboxNone, SandboxBubblewrap:
		c.Sandbox.Mode = v
	default:
		return []string{fmt.Sprintf("option sandbox=%q: want %s (the default) or %s (no isolation, logged)", v, SandboxBubblewrap, SandboxNone)}
	}
	if v := strings.TrimSpace(opts["sandbox_ro"]); v != "" {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); !filepath.IsAbs(p) {
				errs = append(errs, fmt.Sprintf("option sandbox_ro: %q is not an absolute path", p))
			} else {
				c.Sandbox.ReadOnly = append(c.Sandbox.ReadOnly, p)
			}
		}
	}
	for _, kv := range []struct {
		key string
		dst *int
	}{{"sandbox_work_mb", &c.Sandbox.Limits.WorkMB}, {"sandbox_procs", &c.Sandbox.Limits.Procs}, {"sandbox_memory_mb", &c.Sandbox.Limits.ResidentMB}} {
		if v := opts[kv.key]; v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				errs = append(errs, fmt.Sprintf("option %s=%q: want a positive integer", kv.key, v))
			}
			*kv.dst = n
		}
	}
	if v := opts["sandbox_ca_file"]; v != "" {
		if !filepath.IsAbs(v) {
			errs = append(errs, fmt.Sprintf("option sandbox_ca_file=%q: want an absolute path", v))
		}
		c.Sandbox.CAFile = v
	}
	if v := opts["sandbox_nested_userns"]; v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Sprintf("option sandbox_nested_userns=%q: want true or false", v))
		}
		c.Sandbox.NoNestedUserNS = !b
	}
	return errs
}

// sandboxState is a Client's sandbox, set up on first use.
type sandboxState struct {
	once  sync.Once
	box   *sandbox.Sandbox
	err   error
	proxy *connectProxy // for endpoints that are not on the loopback
}

// sandboxed reports whether calls run in the sandbox: always, unless
// option sandbox=none opts out.
func (c *Client) sandboxed() bool { return c.cfg.Sandbox.Mode != SandboxNone }

// sandboxReady sets the sandbox up (once) or says why it cannot be; with
// option sandbox=none it logs, once, that the agent runs without it.
func (c *Client) sandboxReady() error {
	s := &c.sb
	s.once.Do(func() {
		if !c.sandboxed() {
			logf := c.cfg.Sandbox.Logf
			if logf == nil {
				logf = func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
			}
			logf("agent sandbox: WARNING: agent %s runs WITHOUT the sandbox (explicit option sandbox=none): it can read the worker's files, reach its network and host sockets, and see its environment's allowed keys", c.Endpoint())
			return
		}
		s.box, s.err = sandbox.New(sandbox.Options{Bwrap: c.cfg.Sandbox.Bwrap, ReadOnly: c.cfg.Sandbox.ReadOnly})
		if s.err == nil && len(c.argv) > 0 {
			s.err = reachableByNobody(c.argv[0])
		}
		if s.err == nil {
			s.err = c.checkEndpoint()
		}
		if s.err != nil {
			s.err = fmt.Errorf("agent sandbox (the default; option sandbox=none runs the agent without it, logged): %w", s.err)
		}
	})
	return s.err
}

// reachableByNobody refuses, for a root worker (whose sandbox runs as uid
// 65534 on the host too), an agent program the sandbox could not bind:
// one in a directory others cannot enter (a root-only temp dir), or not
// readable and executable by others.
func reachableByNobody(prog string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	if !strings.ContainsRune(prog, '/') {
		p, err := osexec.LookPath(prog)
		if err != nil {
			return fmt.Errorf("agent program %q: %w", prog, err)
		}
		prog = p
	}
	resolved, err := filepath.EvalSymlinks(prog)
	if err != nil {
		return fmt.Errorf("agent program: %w", err)
	}
	st, err := os.Stat(resolved)
	if err != nil {
		return fmt.Errorf("agent program: %w", err)
	}
	if st.Mode().Perm()&0o005 != 0o005 {
		return fmt.Errorf("agent program %s (mode %v) is not readable and executable by others: the sandbox runs as uid %d (chmod o+rx it)", resolved, st.Mode().Perm(), sandbox.Nobody)
	}
	for d := filepath.Dir(resolved); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("agent program: %w", err)
		}
		if st.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("agent program %s is in %s (mode %v), which others cannot enter: the sandbox runs as uid %d; install the CLI in a world-readable directory (scripts/install-agents.sh's .tools/agents) or chmod o+x the directory", resolved, d, st.Mode().Perm(), sandbox.Nobody)
		}
		if d == "/" || d == "." {
			return nil
		}
	}
}

// endpoint is where the agent's model is: the configured base URL or
// the agent's own provider.
func (c *Client) endpoint() (*url.URL, error) {
	raw := c.cfg.BaseURL
	if raw == "" {
		switch c.cfg.Agent {
		case AgentCodex:
			raw = "https://api.openai.com/v1"
			if c.codexChatGPTLogin() {
				raw = codexChatGPTEndpoint
			}
		case AgentClaude:
			raw = "https://api.anthropic.com"
		default:
			return nil, nil // a custom command: no network at all
		}
	}
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("agent sandbox: base_url %q: want http(s)://HOST[:PORT][/PATH]", raw)
	}
	return u, nil
}

// checkEndpoint refuses a loopback endpoint on a port below 1024: the
// sandbox offers a loopback endpoint at the same port on its own
// loopback, where its unprivileged user may not listen on such a port.
func (c *Client) checkEndpoint() error {
	u, err := c.endpoint()
	if err != nil || u == nil {
		return err
	}
	if p := endpointPort(u); loopbackHost(u.Hostname()) && p < 1024 {
		return fmt.Errorf("model endpoint %s is on the loopback at port %d, below 1024, which the sandbox cannot offer at the same port: serve it on a port of 1024 or above", u.Redacted(), p)
	}
	return nil
}

func endpointPort(u *url.URL) int {
	if p, err := strconv.Atoi(u.Port()); err == nil {
		return p
	}
	if u.Scheme == "https" {
		return 443
	}
	return 80
}

// loopbackHost: the endpoint is reached at the same host:port inside.
func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback() && ip.To4() != nil
}

// writeEtc makes the few /etc files a CLI looks at: hosts (localhost),
// passwd and group (the sandbox's user), nsswitch.conf.
func writeEtc() (string, error) {
	dir, err := os.MkdirTemp("", "skillfleet-agent-etc-")
	if err != nil {
		return "", fmt.Errorf("agent sandbox: %w", err)
	}
	// A root worker's sandbox runs as nobody.
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("agent sandbox: %w", err)
	}
	files := map[string]string{
		"hosts":         "127.0.0.1 localhost\n::1 localhost\n",
		"passwd":        fmt.Sprintf("agent:x:%d:%d:agent:%s:/usr/sbin/nologin\n", sandbox.Nobody, sandbox.Nobody, sandbox.WorkDir),
		"group":         fmt.Sprintf("agent:x:%d:\n", sandbox.Nobody),
		"nsswitch.conf": "passwd: files\ngroup: files\nhosts: files dns\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("agent sandbox: %w", err)
		}
	}
	return dir, nil
}

// agentBinds maps the CLI program to its place in the sandbox: the tree
// holding node_modules (so the npm launchers find their native
// packages), or the binary's directory; a program under /usr stays.
func agentBinds(prog string) (inside string, binds []sandbox.Bind, pathDir string, err error) {
	if !strings.ContainsRune(prog, '/') {
		p, err := osexec.LookPath(prog)
		if err != nil {
			return "", nil, "", fmt.Errorf("agent sandbox: %w", err)
		}
		prog = p
	}
	prog, err = filepath.Abs(prog)
	if err != nil {
		return "", nil, "", err
	}
	if strings.HasPrefix(prog, "/usr/") {
		return prog, nil, filepath.Dir(prog), nil
	}
	if i := strings.LastIndex(prog, "/node_modules/"); i > 0 {
		root := prog[:i]
		inside = agentRoot + prog[i:]
		return inside, []sandbox.Bind{{Source: root, Target: agentRoot}}, agentRoot + "/node_modules/.bin", nil
	}
	resolved, err := filepath.EvalSymlinks(prog)
	if err != nil {
		return "", nil, "", fmt.Errorf("agent sandbox: %w", err)
	}
	dir := agentRoot + "/bin"
	return dir + "/" + filepath.Base(resolved), []sandbox.Bind{{Source: filepath.Dir(resolved), Target: dir}}, dir, nil
}

// sandboxExit is a sandboxed agent's non-zero exit.
type sandboxExit struct {
	code   int
	signal syscall.Signal
	// memoryMB: killed for passing the call's resident memory cap.
	memoryMB int
}

func (e *sandboxExit) Error() string { return "agent " + e.String() }

func (e *sandboxExit) String() string {
	if e.memoryMB > 0 {
		return fmt.Sprintf("a kill at the memory cap (its processes held more than %d MiB resident; option sandbox_memory_mb)", e.memoryMB)
	}
	if e.signal != 0 {
		return "signal: " + e.signal.String()
	}
	return "exit status " + strconv.Itoa(e.code)
}

// runSandboxed runs argv (host paths under dir) in the sandbox. Its error
// is nil, a *sandboxExit, the context's error, or a setup failure.
func (c *Client) runSandboxed(ctx context.Context, dir string, argv, env []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if err := c.sandboxReady(); err != nil {
		return err
	}
	timeout := c.cfg.Timeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	spec := sandbox.Spec{
		Stdin: stdin, Stdout: stdout, Stderr: stderr,
		Limits:       agentLimits(c.cfg.Sandbox.Limits, timeout),
		NestedUserNS: !c.cfg.Sandbox.NoNestedUserNS,
	}
	// The work directory's files go in; its directories are made first.
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case rel == ".":
		case d.IsDir():
			dirs = append(dirs, filepath.ToSlash(rel))
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			info, _ := d.Info()
			spec.Files = append(spec.Files, sandbox.File{Name: filepath.ToSlash(rel), Data: data, Mode: info.Mode().Perm()})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("agent sandbox: read work directory: %w", err)
	}
	prog, binds, pathDir, err := agentBinds(argv[0])
	if err != nil {
		return err
	}
	spec.Binds = binds
	for _, b := range c.cfg.Sandbox.extraBinds {
		spec.Binds = append(spec.Binds, sandbox.Bind{Source: b[0], Target: b[1]})
	}
	etc, err := writeEtc()
	if err != nil {
		return err
	}
	defer os.RemoveAll(etc)
	for _, f := range []string{"hosts", "passwd", "group", "nsswitch.conf"} {
		spec.Binds = append(spec.Binds, sandbox.Bind{Source: filepath.Join(etc, f), Target: "/etc/" + f})
	}
	rewrite := func(v string) string {
		if v == dir || strings.HasPrefix(v, dir+"/") {
			return sandbox.WorkDir + strings.TrimPrefix(v, dir)
		}
		return v
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH":
			v = pathDir + ":/usr/local/bin:/usr/bin:/bin"
		case "TMPDIR":
			if !strings.HasPrefix(v, dir) {
				v = "/tmp"
			}
		}
		spec.Env = append(spec.Env, k+"="+rewrite(v))
	}
	u, err := c.endpoint()
	if err != nil {
		return err
	}
	if u != nil {
		port := endpointPort(u)
		if loopbackHost(u.Hostname()) {
			spec.Forwards = []sandbox.Forward{{Port: port, Target: net.JoinHostPort(u.Hostname(), strconv.Itoa(port))}}
		} else {
			p, err := c.connectProxy(net.JoinHostPort(u.Hostname(), strconv.Itoa(port)))
			if err != nil {
				return err
			}
			spec.Forwards = []sandbox.Forward{{Port: proxyPort, Target: p.addr}}
			proxy := "http://127.0.0.1:" + strconv.Itoa(proxyPort)
			spec.Env = append(spec.Env, "HTTPS_PROXY="+proxy, "https_proxy="+proxy, "HTTP_PROXY="+proxy, "http_proxy="+proxy,
				"NO_PROXY=", "no_proxy=")
			if _, err := os.Stat("/etc/ssl/certs"); err == nil {
				spec.Binds = append(spec.Binds, sandbox.Bind{Source: "/etc/ssl/certs", Target: "/etc/ssl/certs"})
			}
			if ca := c.cfg.Sandbox.CAFile; ca != "" {
				// Claude Code adds NODE_EXTRA_CA_CERTS to its roots; Codex
				// and OpenSSL-based tools read CODEX_CA_CERTIFICATE or
				// SSL_CERT_FILE, which hold the system's bundle and the
				// extra CAs.
				pem, err := os.ReadFile(ca)
				if err != nil {
					return fmt.Errorf("agent sandbox: option sandbox_ca_file: %w", err)
				}
				sys, _ := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
				if err := os.WriteFile(filepath.Join(etc, "ca.pem"), append(append(sys, '\n'), pem...), 0o644); err != nil {
					return fmt.Errorf("agent sandbox: %w", err)
				}
				spec.Binds = append(spec.Binds, sandbox.Bind{Source: filepath.Join(etc, "ca.pem"), Target: "/etc/skillfleet-ca.pem"})
				spec.Env = append(spec.Env, "SSL_CERT_FILE=/etc/skillfleet-ca.pem", "CODEX_CA_CERTIFICATE=/etc/skillfleet-ca.pem", "NODE_EXTRA_CA_CERTS=/etc/skillfleet-ca.pem")
			}
		}
	}
	script := ""
	if len(dirs) > 0 {
		script = "mkdir -p"
		for _, d := range dirs {
			script += " " + shellQuote(path.Join(sandbox.WorkDir, d))
		}
		script += " && "
	}
	script += `exec "$@"`
	spec.Argv = append([]string{"/usr/bin/sh", "-c", script, "agent-init", prog}, rewriteAll(argv[1:], rewrite)...)
	switch {
	case c.cfg.KeepWorkDir:
		spec.Collect = []string{"."}
	case c.cfg.Agent == AgentCopilot && len(c.cfg.Command) == 0:
		spec.Collect = []string{copilotUsageFile} // its usage
	}
	res, err := c.sb.box.Run(ctx, spec)
	if err != nil {
		return fmt.Errorf("agent sandbox: %w", err)
	}
	if len(spec.Collect) > 0 {
		keepFiles(dir, res.Files)
	}
	switch {
	case res.MemoryExceeded:
		return &sandboxExit{code: res.ExitCode, signal: res.Signal, memoryMB: spec.Limits.ResidentMB}
	case res.TimedOut:
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return context.DeadlineExceeded
	case res.ExitCode != 0 || res.Signal != 0:
		return &sandboxExit{code: res.ExitCode, signal: res.Signal}
	}
	return nil
}

func rewriteAll(args []string, f func(string) string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = f(a)
	}
	return out
}

// keepFiles writes the sandbox's work directory back into dir: regular
// files and directories only, names inside dir only.
func keepFiles(dir string, files map[string]*sandbox.Entry) {
	for name, e := range files {
		if !filepath.IsLocal(filepath.FromSlash(name)) {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		switch e.Type {
		case "dir":
			_ = os.MkdirAll(p, 0o755)
		case "file":
			if e.TooLarge {
				continue
			}
			_ = os.MkdirAll(filepath.Dir(p), 0o755)
			if st, err := os.Lstat(p); err == nil && !st.Mode().IsRegular() {
				continue
			}
			_ = os.WriteFile(p, e.Data, 0o600)
		}
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
