package exec

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/sandbox"
)

// checkTree is where CheckSandbox binds the agents tree (the check agent
// itself is at /opt/agent).
const checkTree = "/opt/agents"

// SandboxProbe is one containment probe of the agent sandbox.
type SandboxProbe struct {
	Name string
	// Control probes must succeed (the agent needs them); the others
	// must be blocked.
	Control bool
	Held    bool
	Detail  string
	Elapsed time.Duration
}

// checkAgent is a stand-in CLI (Python from /usr) run by CheckSandbox;
// it prints one JSON object of what it could see and reach.
const checkAgent = `#!/usr/bin/python3
import json, os, socket, subprocess, sys
port, other, sock, proxy = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
clis = [c for c in sys.argv[5].split(",") if c]
hidden = sys.argv[6:]
r = {}
def tcp(p, host="127.0.0.1", send=b"GET / HTTP/1.0\r\n\r\n"):
    try:
        s = socket.create_connection((host, p), timeout=3)
        s.sendall(send)
        d = s.recv(200).decode(errors="replace")
        s.close()
        return d.split("\r\n")[0] or "connected"
    except Exception as e:
        return "blocked: " + type(e).__name__
r["endpoint"] = tcp(port)
r["other"] = tcp(other)
r["outside"] = tcp(80, "192.0.2.1")
try:
    u = socket.socket(socket.AF_UNIX); u.settimeout(3); u.connect(sock); r["unix"] = "connected"
except Exception as e:
    r["unix"] = "blocked: " + type(e).__name__
if proxy:
    r["proxy"] = tcp(proxy, send=b"CONNECT elsewhere.example.net:443 HTTP/1.1\r\nHost: elsewhere.example.net:443\r\n\r\n")
seen = []
for p in hidden:
    if os.path.exists(p):
        seen.append(p)
r["visible"] = seen
w = []
for p in ["/usr/x", "/etc/x", "/opt/agent/x", "/x"]:
    try:
        open(p, "w").write("x"); w.append(p)
    except Exception:
        pass
r["written"] = w
try:
    r["nested"] = subprocess.run(["bwrap", "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
        "--symlink", "usr/lib64", "/lib64", "--unshare-all", "--", "/usr/bin/true"], capture_output=True, timeout=20).returncode == 0
except Exception as e:
    r["nested"] = False
for cli in clis:
    try:
        out = subprocess.run([cli, "--version"], capture_output=True, timeout=60, text=True)
        r["version " + os.path.basename(cli)] = (out.stdout or out.stderr).strip()[:80] if out.returncode == 0 else "failed: " + (out.stderr or out.stdout).strip()[:200]
    except Exception as e:
        r["version " + os.path.basename(cli)] = "failed: " + str(e)
print(json.dumps(r))
`

// CheckSandbox runs the agent sandbox's containment probes on this host:
// a stand-in CLI in exactly the isolation an agent call gets (option
// sandbox: bubblewrap) reports what it can reach. agentsDir, when not
// empty, is an install tree of the real CLIs (scripts/install-agents.sh's
// directory): each one's --version must then run inside the sandbox.
// The error is for a sandbox that cannot be set up at all.
func CheckSandbox(ctx context.Context, agentsDir string) ([]SandboxProbe, error) {
	dir, err := os.MkdirTemp("", "skillfleet-agent-check-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil { // a root worker's sandbox runs as nobody
		return nil, err
	}
	bin := filepath.Join(dir, "check-agent")
	if err := os.WriteFile(bin, []byte(checkAgent), 0o755); err != nil {
		return nil, err
	}
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	defer ok.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "host service") }))
	defer other.Close()
	sock := filepath.Join(dir, "host.sock")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		return nil, err
	}
	defer ul.Close()
	if err := os.Chmod(sock, 0o777); err != nil {
		return nil, err
	}
	go func() {
		for {
			c, err := ul.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ok.Listener.Addr().(*net.TCPAddr).Port
	otherPort := other.Listener.Addr().(*net.TCPAddr).Port
	home, _ := os.UserHomeDir()
	hidden := []string{dir, sock, "/home", "/root", "/var", "/srv", "/etc/shadow", "/etc/ssh"}
	if home != "" && home != "/" {
		hidden = append(hidden, home)
	}
	if wd, err := os.Getwd(); err == nil && wd != "/" {
		hidden = append(hidden, wd)
	}
	var clis []string
	var ro []string
	if agentsDir != "" {
		for _, n := range []string{AgentCodex, AgentClaude} {
			p := filepath.Join(agentsDir, "node_modules", ".bin", n)
			if _, err := os.Stat(p); err == nil {
				clis = append(clis, checkTree+"/node_modules/.bin/"+n)
			}
		}
		if len(clis) == 0 {
			return nil, fmt.Errorf("agent sandbox check: no codex or claude under %s/node_modules/.bin (scripts/install-agents.sh installs them)", agentsDir)
		}
		abs, err := filepath.Abs(agentsDir)
		if err != nil {
			return nil, err
		}
		ro = append(ro, abs)
	}
	run := func(baseURL string, proxy int) (map[string]any, time.Duration, error) {
		argv := []string{bin, strconv.Itoa(port), strconv.Itoa(otherPort), sock, strconv.Itoa(proxy), strings.Join(clis, ",")}
		c := New(Config{Command: append(argv, hidden...), BaseURL: baseURL, Timeout: 2 * time.Minute, Getenv: func(string) string { return "" },
			Sandbox: SandboxConfig{Mode: SandboxBubblewrap}})
		if err := c.sandboxReady(); err != nil {
			return nil, 0, err
		}
		// The CLIs' --version runs through the check agent: their tree
		// is bound the way an agent call binds it.
		if len(ro) > 0 {
			c.cfg.Sandbox.extraBinds = [][2]string{{ro[0], checkTree}}
		}
		start := time.Now()
		resp, err := c.Chat(ctx, &llm.Request{Messages: []llm.Message{{Role: llm.RoleSystem, Content: "check"}, {Role: llm.RoleUser, Content: "check"}}})
		if err != nil {
			return nil, time.Since(start), err
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(resp.Content), &r); err != nil {
			return nil, time.Since(start), fmt.Errorf("agent sandbox check: the probe printed %q", resp.Content)
		}
		return r, time.Since(start), nil
	}
	r, el, err := run(ok.URL+"/v1", 0)
	if err != nil {
		return nil, err
	}
	str := func(k string) string { s, _ := r[k].(string); return s }
	var out []SandboxProbe
	add := func(name string, control, held bool, detail string) {
		out = append(out, SandboxProbe{Name: name, Control: control, Held: held, Detail: detail, Elapsed: el})
	}
	add("agent: model endpoint reachable (control)", true, strings.HasPrefix(str("endpoint"), "HTTP/1.0 200"), str("endpoint"))
	add("agent: another host TCP port", false, strings.HasPrefix(str("other"), "blocked"), str("other"))
	add("agent: outside network (192.0.2.1:80)", false, strings.HasPrefix(str("outside"), "blocked"), str("outside"))
	add("agent: host AF_UNIX socket", false, strings.HasPrefix(str("unix"), "blocked"), str("unix"))
	vis, _ := r["visible"].([]any)
	add("agent: host files (home, /root, /var, work dirs, cwd)", false, len(vis) == 0, fmt.Sprintf("visible: %v", vis))
	wr, _ := r["written"].([]any)
	add("agent: writes outside its work dir", false, len(wr) == 0, fmt.Sprintf("written: %v", wr))
	nested, _ := r["nested"].(bool)
	add("agent: nested bwrap for the CLI's tool sandbox (control)", true, nested, "")
	for _, cli := range clis {
		k := "version " + filepath.Base(cli)
		add("agent: "+filepath.Base(cli)+" --version inside (control)", true, str(k) != "" && !strings.HasPrefix(str(k), "failed"), str(k))
	}
	// An https endpoint: the CONNECT proxy refuses any other target.
	r, el, err = run("https://api.example.com/v1", proxyPort)
	if err != nil {
		return nil, err
	}
	add("agent: egress proxy to another host", false, strings.Contains(str("proxy"), " 403 "), str("proxy"))
	// The memory cap: a stand-in whose two processes fill 2 x 48 MiB
	// under a 64 MiB cap for the probe (calls get DefaultAgentResidentMB).
	balloon := New(Config{Command: []string{"/usr/bin/python3", "-c", checkBalloon}, Timeout: time.Minute, Getenv: func(string) string { return "" },
		Sandbox: SandboxConfig{Mode: SandboxBubblewrap, Limits: sandbox.Limits{ResidentMB: checkBalloonCapMB}}})
	start := time.Now()
	_, berr := balloon.Chat(ctx, &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "check"}}})
	el = time.Since(start)
	detail := "not killed"
	if berr != nil {
		detail = berr.Error()
	}
	add(fmt.Sprintf("agent: memory cap (%d MiB for the probe; %d MiB a call)", checkBalloonCapMB, DefaultAgentResidentMB), false,
		berr != nil && strings.Contains(berr.Error(), "memory cap"), detail)
	return out, nil
}

// checkBalloon holds 96 MiB in two processes for up to 30 s.
const checkBalloon = `import os, time
x = b"x" * (48 << 20)
if os.fork() == 0:
    y = b"y" * (48 << 20)
time.sleep(30)
print("not killed")
`

const checkBalloonCapMB = 64
