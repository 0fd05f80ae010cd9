package exec_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/backends/exec"
	"github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// TestSandboxedRealAgents runs the pinned Codex CLI and Claude Code inside
// the sandbox (the default: no option set) against sim-llm (reached through the sandbox's forwarder):
// the skill is found in the sandbox's work directory and opened with the
// agent's own tool, the answer and usage are right, a long task is read
// from task.md with a shell command, and the kept work directory (copied
// back from the sandbox) holds the agent's files but not the key.
func TestSandboxedRealAgents(t *testing.T) {
	for _, agent := range []string{exec.AgentCodex, exec.AgentClaude} {
		t.Run(agent, func(t *testing.T) {
			t.Parallel()
			s, url := simFor(t, sim.ServerOptions{})
			c, root := agentClient(t, agent, url, nil)
			if _, err := c.CheckVersion(t.Context()); err != nil {
				t.Fatal(err)
			}
			skill, q, gold := simTask(t)
			resp, err := c.Chat(t.Context(), simRequest(skill, q))
			if err != nil {
				t.Fatalf("%v; request log %+v", err, s.RequestLog())
			}
			log := s.RequestLog()
			if got := simbench.ExtractAnswer(resp.Content); got != gold {
				t.Fatalf("answer %q (reply %q), want %q; request log %+v", got, resp.Content, gold, log)
			}
			if len(log) != 2 || log[0].Action != "read_skill" || log[1].Action != "answer" || log[1].ToolResults != 1 {
				t.Fatalf("request log %+v, want one skill read then the answer", log)
			}
			if agent == exec.AgentCodex && !strings.Contains(log[0].ToolCalls[0], "/work/"+c.SkillPath()) {
				t.Fatalf("codex read %q, want the sandbox's /work/%s", log[0].ToolCalls[0], c.SkillPath())
			}
			st := s.Stats()
			if resp.Usage.InputTokens != st.InputTokens || resp.Usage.OutputTokens != st.OutputTokens {
				t.Fatalf("usage %+v, sim-llm counted %d in / %d out", resp.Usage, st.InputTokens, st.OutputTokens)
			}
			long, _ := agentClient(t, agent, url, func(cfg *exec.Config) { cfg.TaskInlineMax = 64; cfg.WorkRoot = root })
			resp, err = long.Chat(t.Context(), simRequest(skill, q))
			if err != nil {
				t.Fatalf("task via task.md: %v; request log %+v", err, s.RequestLog()[2:])
			}
			if got := simbench.ExtractAnswer(resp.Content); got != gold {
				t.Fatalf("task via task.md: answer %q, want %q; log %+v", got, gold, s.RequestLog()[2:])
			}
			var actions []string
			for _, e := range s.RequestLog()[2:] {
				actions = append(actions, e.Action)
			}
			if strings.Join(actions, ",") != "read_skill,read_file,answer" {
				t.Fatalf("task via task.md: actions %v, want read_skill, read_file, answer", actions)
			}
			if n := noKeyIn(t, root); n < 3 {
				t.Fatalf("the kept work directories hold %d files", n)
			}
			m, _ := filepath.Glob(filepath.Join(root, "*", c.SkillPath()))
			if len(m) != 2 {
				t.Fatalf("kept skills %v, want one per call", m)
			}
		})
	}
}

// hostDir is a directory a root worker's sandbox (uid nobody) can read,
// removed at the end of the test.
func hostDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "skillfleet-sbtest-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// probeAgent is a stand-in CLI (Python from /usr) that reports what it
// can see and reach as one JSON object; argv: endpoint port, other
// port, a host AF_UNIX socket, host paths that must stay out of view.
const probeAgent = `#!/usr/bin/python3
import json, os, socket, sys
port, other, sock = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
r = {"cwd": os.getcwd(), "root": sorted(os.listdir("/")), "work": sorted(os.listdir(".")),
     "env": sorted(k for k in os.environ), "uid": os.getuid()}
r["skill"] = open(".agents/skills/skillfleet-target/SKILL.md").read()
def tcp(p, host="127.0.0.1"):
    try:
        s = socket.create_connection((host, p), timeout=3)
        s.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")
        d = s.recv(200).decode(errors="replace")
        s.close()
        return "ok " + d.split("\r\n")[0]
    except Exception as e:
        return "blocked " + type(e).__name__
r["endpoint"] = tcp(port)
r["other_port"] = tcp(other)
r["outside_ip"] = tcp(port, "10.255.255.1")
try:
    u = socket.socket(socket.AF_UNIX); u.settimeout(3); u.connect(sock); r["unix"] = "ok"
except Exception as e:
    r["unix"] = "blocked " + type(e).__name__
try:
    u = socket.socket(socket.AF_UNIX); u.settimeout(3); u.connect("\0" + os.path.basename(os.path.dirname(sock)) + "-abstract"); r["abstract"] = "ok"
except Exception as e:
    r["abstract"] = "blocked " + type(e).__name__
seen = {}
for p in sys.argv[4:]:
    try:
        seen[p] = "visible " + ",".join(os.listdir(p))
    except Exception as e:
        seen[p] = "hidden " + type(e).__name__
r["host_paths"] = seen
w = {}
for p in ["/opt/agent/bin/x", "/usr/x", "/etc/x", "/x"]:
    try:
        open(p, "w").write("x"); w[p] = "WROTE"
    except Exception as e:
        w[p] = "refused " + type(e).__name__
r["writes"] = w
open("made-by-agent.txt", "w").write("kept\n")
print(json.dumps(r))
`

// TestSandboxedAgentView runs a stand-in CLI in the sandbox (no real CLI
// needed) and checks what it sees: its work directory with the skill and
// task, nothing of the host (the run's work root, a dataset directory,
// another call's work directory), only the model endpoint on the network
// (not another host port, not the outside, not a host AF_UNIX socket),
// no write outside its work directory, and an environment of only what
// the backend allows. The kept work directory gets its file back. It runs
// with no sandbox option: the default.
func TestSandboxedAgentView(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(hostDir(t), "probe-agent")
	if err := os.WriteFile(bin, []byte(probeAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	endpoint := healthServer(t)
	other := healthServer(t)
	sockDir := hostDir(t)
	ul, err := net.Listen("unix", filepath.Join(sockDir, "host.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	if err := os.Chmod(filepath.Join(sockDir, "host.sock"), 0o777); err != nil {
		t.Fatal(err)
	}
	// An abstract AF_UNIX socket (no file: only the network namespace
	// keeps it apart) under the name the probe derives.
	abstract := "@" + filepath.Base(sockDir) + "-abstract"
	al, err := net.Listen("unix", abstract)
	if err != nil {
		t.Fatal(err)
	}
	defer al.Close()
	if c, err := net.Dial("unix", abstract); err != nil {
		t.Fatalf("the abstract socket does not answer on the host: %v", err)
	} else {
		c.Close()
	}
	dataset := hostDir(t)
	if err := os.WriteFile(filepath.Join(dataset, "gold.txt"), []byte("gold"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := hostDir(t)
	if err := os.MkdirAll(filepath.Join(root, "skillfleet-exec-other"), 0o755); err != nil {
		t.Fatal(err)
	}

	c := exec.New(exec.Config{
		Command: []string{bin, strconv.Itoa(endpoint), strconv.Itoa(other), filepath.Join(sockDir, "host.sock"), root, dataset, "/root", "/home", "/work/main"},
		BaseURL: "http://127.0.0.1:" + strconv.Itoa(endpoint) + "/v1", Env: []string{"SKILLFLEET_TEST_MARK"},
		WorkRoot: root, KeepWorkDir: true, Timeout: time.Minute, // the sandbox is the default
		Getenv: env(map[string]string{"SKILLFLEET_TEST_MARK": "m1", "SECRET_NOT_ALLOWED": "s3cr3t", "PATH": os.Getenv("PATH")}),
	})
	if _, err := c.CheckVersion(t.Context()); err != nil {
		skipOrFail(t, err)
	}
	resp, err := c.Chat(t.Context(), req("<skill>\n# Probe skill\n</skill>", "probe"))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Cwd, Skill, Endpoint, Unix, Abstract string
		OtherPort                            string `json:"other_port"`
		OutsideIP                            string `json:"outside_ip"`
		Root, Work, Env                      []string
		UID                                  int
		HostPaths                            map[string]string `json:"host_paths"`
		Writes                               map[string]string
	}
	if err := json.Unmarshal([]byte(resp.Content), &r); err != nil {
		t.Fatalf("probe output %q: %v", resp.Content, err)
	}
	if r.Cwd != "/work" || r.UID != 65534 || !strings.Contains(r.Skill, "# Probe skill") || !slices.Contains(r.Work, "task.md") {
		t.Errorf("work view: cwd %q uid %d work %v skill %q", r.Cwd, r.UID, r.Work, r.Skill)
	}
	for _, n := range r.Root {
		if !slices.Contains([]string{"bin", "dev", "etc", "lib", "lib64", "opt", "proc", "run", "sbin", "tmp", "usr", "work"}, n) {
			t.Errorf("unexpected /%s in the sandbox's root %v", n, r.Root)
		}
	}
	if !strings.HasPrefix(r.Endpoint, "ok HTTP/1.0 200") {
		t.Errorf("the model endpoint: %s", r.Endpoint)
	}
	for what, got := range map[string]string{"another host port": r.OtherPort, "the outside": r.OutsideIP, "a host AF_UNIX socket": r.Unix, "a host abstract AF_UNIX socket": r.Abstract} {
		if !strings.HasPrefix(got, "blocked") {
			t.Errorf("%s is reachable: %s", what, got)
		}
	}
	for p, got := range r.HostPaths {
		if !strings.HasPrefix(got, "hidden") {
			t.Errorf("host path %s is %s", p, got)
		}
	}
	for p, got := range r.Writes {
		if !strings.HasPrefix(got, "refused") {
			t.Errorf("write to %s: %s", p, got)
		}
	}
	want := []string{"HOME", "LANG", "PATH", "PWD", "SKILLFLEET_TEST_MARK", "TMPDIR"}
	if !slices.Equal(r.Env, want) {
		t.Errorf("environment %v, want %v", r.Env, want)
	}
	kept, _ := filepath.Glob(filepath.Join(root, "skillfleet-exec-*", "made-by-agent.txt"))
	if len(kept) != 1 {
		t.Errorf("kept work directory: made-by-agent.txt copied back %d times", len(kept))
	}
}

func skipOrFail(t *testing.T, err error) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(err)
	}
	t.Skip(err)
}

// healthServer is a host TCP listener answering any request with 200.
func healthServer(t *testing.T) int {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	t.Cleanup(ts.Close)
	return ts.Listener.Addr().(*net.TCPAddr).Port
}

// TestSandboxedAgentTimeoutKillsAll: a stand-in CLI that starts
// children in sessions of their own and hangs times out; no process of
// the sandbox survives (looked up by a marker in their command lines).
func TestSandboxedAgentTimeoutKillsAll(t *testing.T) {
	t.Parallel()
	marker := "sbmark" + strconv.Itoa(os.Getpid()) + strconv.FormatInt(time.Now().UnixNano(), 36)
	bin := filepath.Join(hostDir(t), "hang-agent")
	body := "#!/bin/sh\nsetsid sh -c 'sleep 301; :' " + marker + " &\n(sh -c 'sleep 302; :' " + marker + " &)\nsh -c 'sleep 303; :' " + marker + "\n"
	if err := os.WriteFile(bin, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	c := exec.New(exec.Config{Command: []string{bin}, Timeout: 3 * time.Second, Getenv: env(nil)})
	if _, err := c.CheckVersion(t.Context()); err != nil {
		skipOrFail(t, err)
	}
	seen := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 25; i++ {
			seen = max(seen, len(procsWith(marker)))
			time.Sleep(100 * time.Millisecond)
		}
	}()
	_, err := c.Chat(t.Context(), req("<skill>\nx\n</skill>", "hang"))
	<-done
	if llm.KindOf(err) != llm.KindTimeout {
		t.Fatalf("err %v, want a timeout", err)
	}
	if seen < 3 {
		t.Fatalf("saw %d marked processes while it ran, want 3", seen)
	}
	time.Sleep(300 * time.Millisecond)
	if left := procsWith(marker); len(left) > 0 {
		t.Fatalf("processes %v survive the timeout", left)
	}
}

// procsWith lists live processes whose command line holds s.
func procsWith(s string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(s)) {
			out = append(out, pid)
		}
	}
	return out
}

// TestSandboxedRealAgentsHTTPS: an endpoint off the loopback is reached
// only through the worker's CONNECT proxy (HTTPS_PROXY inside the
// sandbox). sim-llm serves TLS as "example.com" (httptest's certificate,
// trusted through option sandbox_ca_file); the proxy's upstream dial is
// pointed at it. Both real CLIs honour the proxy: the call succeeds
// through a tunnel, and whatever else they try is refused.
func TestSandboxedRealAgentsHTTPS(t *testing.T) {
	ts := httptest.NewUnstartedServer(nil)
	srv := sim.NewServer(sim.New(sim.Options{Epsilon: -1, HarmSpill: -1, LengthBudget: -1}), sim.ServerOptions{APIKey: plantedKey})
	ts.Config.Handler = srv
	caPEM, leaf := testPKI(t, "example.com")
	ts.TLS = &tls.Config{Certificates: []tls.Certificate{leaf}}
	ts.StartTLS()
	t.Cleanup(ts.Close)
	port := ts.Listener.Addr().(*net.TCPAddr).Port
	ca := filepath.Join(hostDir(t), "ca.pem")
	if err := os.WriteFile(ca, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	endpoint := "example.com:" + strconv.Itoa(port)
	t.Cleanup(exec.SetProxyDial(func(target string) (net.Conn, error) {
		if target != endpoint {
			return nil, errors.New("test: no dial to " + target)
		}
		return net.Dial("tcp", ts.Listener.Addr().String())
	}))
	for _, agent := range []string{exec.AgentCodex, exec.AgentClaude} {
		t.Run(agent, func(t *testing.T) {
			t.Parallel()
			c, _ := agentClient(t, agent, "https://"+endpoint+"/v1", func(cfg *exec.Config) {
				cfg.Sandbox.CAFile = ca
				cfg.Timeout = time.Minute
			})
			skill, q, gold := simTask(t)
			resp, err := c.Chat(t.Context(), simRequest(skill, q))
			tunnels, refused := c.ProxyStats()
			if err != nil {
				t.Fatalf("%v (proxy: %d tunnels, refused %v)", err, tunnels, refused)
			}
			if got := simbench.ExtractAnswer(resp.Content); got != gold {
				t.Fatalf("answer %q, want %q", got, gold)
			}
			if tunnels == 0 {
				t.Fatalf("proxy: no tunnel to %s", endpoint)
			}
			// Whatever else the CLI tried (Codex checks for updates on
			// github.com and chatgpt.com) was refused.
			for _, r := range refused {
				if strings.Contains(r, endpoint) {
					t.Fatalf("the endpoint was refused: %v", refused)
				}
			}
			t.Logf("%d tunnels to %s; refused: %v", tunnels, endpoint, refused)
		})
	}
}

// testPKI makes a CA and a certificate for host signed by it.
func testPKI(t *testing.T, host string) (caPEM []byte, leaf tls.Certificate) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "skillfleet test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), tls.Certificate{Certificate: [][]byte{der, caDER}, PrivateKey: key}
}

// BenchmarkAgentSandboxOverhead: the per-call cost of the sandbox for an
// agent call (a stand-in CLI that prints its answer; the model endpoint
// forwarded into the sandbox), against the same call unsandboxed.
func BenchmarkAgentSandboxOverhead(b *testing.B) {
	d, err := os.MkdirTemp("", "skillfleet-sbbench-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(d)
	if err := os.Chmod(d, 0o755); err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(d, "agent")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\ncat .agents/skills/*/SKILL.md >/dev/null && echo answer\n"), 0o755); err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(http.NotFoundHandler())
	defer ts.Close()
	mk := func(mode string) *exec.Client {
		return exec.New(exec.Config{Command: []string{bin}, BaseURL: ts.URL + "/v1", Getenv: env(nil), Sandbox: exec.SandboxConfig{Mode: mode}})
	}
	boxed, direct := mk(exec.SandboxBubblewrap), mk(exec.SandboxNone)
	if _, err := boxed.CheckVersion(b.Context()); err != nil {
		b.Skip(err)
	}
	var tb, td []time.Duration
	for b.Loop() {
		for _, x := range []struct {
			c *exec.Client
			d *[]time.Duration
		}{{boxed, &tb}, {direct, &td}} {
			start := time.Now()
			r, err := x.c.Chat(b.Context(), req("<skill>\ns\n</skill>", "t"))
			if err != nil || r.Content != "answer" {
				b.Fatal(r, err)
			}
			*x.d = append(*x.d, time.Since(start))
		}
	}
	med := func(d []time.Duration) time.Duration {
		slices.Sort(d)
		return d[len(d)/2]
	}
	b.ReportMetric(float64(med(tb).Microseconds())/1000, "ms-sandboxed-median")
	b.ReportMetric(float64((med(tb)-med(td)).Microseconds())/1000, "ms-overhead-median")
}

// TestCheckSandbox: the agent probes of `skillfleet sandbox check` all
// hold on this host, with the real CLIs' --version run inside when they
// are installed.
func TestCheckSandbox(t *testing.T) {
	t.Parallel()
	dir, _ := filepath.Abs(filepath.Join("..", "..", ".tools", "agents"))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".bin", "codex")); err != nil {
		dir = ""
	}
	probes, err := exec.CheckSandbox(t.Context(), dir)
	if err != nil {
		skipOrFail(t, err)
	}
	want := 9
	if dir != "" {
		want += 2
	}
	if len(probes) != want {
		t.Errorf("%d probes, want %d", len(probes), want)
	}
	for _, p := range probes {
		t.Logf("%-70s held=%v %6s %s", p.Name, p.Held, p.Elapsed.Round(time.Millisecond), p.Detail)
		if !p.Held {
			t.Errorf("%s: got through (%s)", p.Name, p.Detail)
		}
	}
}

// TestSandboxedRealAgentTimeout: a sandboxed real CLI whose model never
// answers (sim-llm stalls) times out; its processes (found by the mark in
// their environment: the launcher, the native binary, the sandbox's own)
// were running and none survives.
func TestSandboxedRealAgentTimeout(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("reads other users' /proc/PID/environ: root only")
	}
	for _, agent := range []string{exec.AgentCodex, exec.AgentClaude} {
		t.Run(agent, func(t *testing.T) {
			t.Parallel()
			_, url := simFor(t, sim.ServerOptions{FaultRateStall: 1, StallFor: time.Minute})
			c, _ := agentClient(t, agent, url, func(cfg *exec.Config) { cfg.Timeout = 12 * time.Second })
			mark := "mark-" + strconv.Itoa(os.Getpid()) + "-" + t.Name()
			skill, q, _ := simTask(t)
			seen := map[int]bool{}
			done := make(chan struct{})
			stop := make(chan struct{})
			go func() {
				defer close(done)
				for {
					select {
					case <-stop:
						return
					case <-time.After(100 * time.Millisecond):
					}
					for _, p := range procsWithEnv(mark) {
						seen[p] = true
					}
				}
			}()
			_, err := c.Chat(t.Context(), simRequest(skill, q))
			close(stop)
			<-done
			if llm.KindOf(err) != llm.KindTimeout {
				t.Fatalf("err = %v, want a timeout", err)
			}
			if len(seen) < 2 {
				t.Fatalf("saw %d processes of the agent while it ran, want the launcher and the native binary", len(seen))
			}
			time.Sleep(300 * time.Millisecond)
			if left := procsWithEnv(mark); len(left) > 0 {
				t.Fatalf("processes %v of the sandboxed agent survive the timeout (seen %d)", left, len(seen))
			}
		})
	}
}

// procsWithEnv lists live processes whose environment holds s.
func procsWithEnv(s string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(b, []byte(s)) {
			out = append(out, pid)
		}
	}
	return out
}

// TestSandboxIsTheDefault: an agent configured with no sandbox option
// runs sandboxed or not at all. Where bubblewrap is missing (a binary
// name not on PATH stands for a host without it), the client refuses at
// start and at every call with one line naming the package and the
// opt-out; a program the sandbox's user cannot reach (a root worker's
// t.TempDir()) and a loopback endpoint below port 1024 are refused up
// front too. Option sandbox=none runs the agent on the host, logged.
func TestSandboxIsTheDefault(t *testing.T) {
	t.Parallel()
	bin := script(t, "[ \"$1\" = --version ] && { echo 'codex-cli 0.169.0'; exit 0; }\necho '{\"type\":\"item.completed\",\"item\":{\"type\":\"agent_message\",\"text\":\"ran on '\"$PWD\"'\"}}'\necho '{\"type\":\"turn.completed\"}'")
	mk := func(t *testing.T, opts map[string]string, mod func(*exec.Config)) *exec.Client {
		t.Helper()
		o := map[string]string{"agent": "codex", "bin": bin, "base_url": "http://127.0.0.1:" + strconv.Itoa(healthServer(t)) + "/v1"}
		for k, v := range opts {
			o[k] = v
		}
		cfg, err := exec.ConfigFromOptions("m", o)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Getenv = env(nil)
		if mod != nil {
			mod(&cfg)
		}
		return exec.New(cfg)
	}
	t.Run("default runs sandboxed", func(t *testing.T) {
		t.Parallel()
		resp, err := mk(t, nil, nil).Chat(t.Context(), req("<skill>\ns\n</skill>", "t"))
		if err != nil {
			skipOrFail(t, err)
		}
		if resp.Content != "ran on /work" {
			t.Errorf("reply %q, want the agent to run in the sandbox's /work", resp.Content)
		}
	})
	t.Run("no bubblewrap", func(t *testing.T) {
		t.Parallel()
		c := mk(t, nil, func(cfg *exec.Config) { cfg.Sandbox.Bwrap = "skillfleet-no-such-bwrap" })
		_, err := c.CheckVersion(t.Context())
		if err == nil {
			t.Fatal("CheckVersion() = nil without bubblewrap, want a refusal")
		}
		msg := err.Error()
		for _, want := range []string{"bubblewrap", "apt-get install bubblewrap", "sandbox=none"} {
			if !strings.Contains(msg, want) || strings.Contains(msg, "\n") {
				t.Errorf("refusal %q: want one line naming %q", msg, want)
			}
		}
		if _, err := c.Chat(t.Context(), req("", "t")); llm.KindOf(err) != llm.KindInvalidRequest || !strings.Contains(err.Error(), "bubblewrap") {
			t.Errorf("Chat() = %v, want the same refusal as invalid_request", err)
		}
	})
	t.Run("program the sandbox cannot reach", func(t *testing.T) {
		t.Parallel()
		if os.Geteuid() != 0 {
			t.Skip("a non-root worker's sandbox runs as the worker's own user")
		}
		private := filepath.Join(t.TempDir(), "agent")
		if err := os.WriteFile(private, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		_, err := mk(t, map[string]string{"bin": private}, nil).CheckVersion(t.Context())
		if err == nil || !strings.Contains(err.Error(), "others cannot enter") || !strings.Contains(err.Error(), filepath.Dir(filepath.Dir(private))) {
			t.Errorf("CheckVersion() = %v, want a refusal naming the directory", err)
		}
	})
	t.Run("loopback endpoint below 1024", func(t *testing.T) {
		t.Parallel()
		_, err := mk(t, map[string]string{"base_url": "http://127.0.0.1:9/v1"}, nil).CheckVersion(t.Context())
		if err == nil || !strings.Contains(err.Error(), "port 9, below 1024") {
			t.Errorf("CheckVersion() = %v, want a refusal naming the port", err)
		}
	})
	t.Run("explicit opt-out is logged", func(t *testing.T) {
		t.Parallel()
		var logged []string
		c := mk(t, map[string]string{"sandbox": "none"}, func(cfg *exec.Config) {
			cfg.Sandbox.Logf = func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }
		})
		resp, err := c.Chat(t.Context(), req("<skill>\ns\n</skill>", "t"))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Content == "ran on /work" || !strings.HasPrefix(resp.Content, "ran on /") {
			t.Errorf("reply %q, want the agent on the host", resp.Content)
		}
		if _, err := c.Chat(t.Context(), req("<skill>\ns\n</skill>", "t")); err != nil {
			t.Fatal(err)
		}
		if len(logged) != 1 || !strings.Contains(logged[0], "WITHOUT the sandbox") || !strings.Contains(logged[0], bin) {
			t.Errorf("logged %q, want one warning naming the agent", logged)
		}
	})
}

// memSample is one process's memory figures from /proc/PID/status, in KiB.
type memSample struct {
	name                            string
	vmPeak, vmHWM, vmData, unbacked int64 // unbacked: RssAnon + RssShmem
}

// procMem reads name, VmPeak, VmHWM and VmData of pid.
func procMem(pid int) (memSample, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return memSample{}, false
	}
	var m memSample
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		n := int64(0)
		if len(f) > 0 {
			n, _ = strconv.ParseInt(f[0], 10, 64)
		}
		switch k {
		case "Name":
			m.name = strings.TrimSpace(v)
		case "VmPeak":
			m.vmPeak = n
		case "VmHWM":
			m.vmHWM = n
		case "VmData":
			m.vmData = n
		case "RssAnon", "RssShmem":
			m.unbacked += n
		}
	}
	return m, true
}

// TestRealAgentMemory measures what the real CLIs need in the sandbox
// (the figures behind agentLimits' memory caps): one call each against
// sim-llm, the skill read with the agent's shell tool and the answer,
// sampling every process of the call (found by the mark in their
// environment) for its peak address space (VmPeak, what RLIMIT_AS
// bounds), its peak resident set (VmHWM) and its data segment (VmData,
// what RLIMIT_DATA bounds), and the tree's summed resident set. The call
// must pass under the default caps. Opt-in: SKILLFLEET_AGENT_E2E=1.
func TestRealAgentMemory(t *testing.T) {
	if os.Getenv("SKILLFLEET_AGENT_E2E") != "1" {
		t.Skip("measures the real CLIs (two calls, ~20 CPU-s): set SKILLFLEET_AGENT_E2E=1")
	}
	if os.Geteuid() != 0 {
		t.Skip("reads other users' /proc/PID/environ: root only")
	}
	for _, agent := range []string{exec.AgentCodex, exec.AgentClaude} {
		t.Run(agent, func(t *testing.T) {
			s, url := simFor(t, sim.ServerOptions{})
			c, _ := agentClient(t, agent, url, nil)
			mark := "mark-" + strconv.Itoa(os.Getpid()) + "-" + t.Name()
			skill, q, gold := simTask(t)
			peak := map[string]memSample{} // by process name: the maxima
			var treeRSS, treeAnon int64
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				for {
					select {
					case <-stop:
						return
					case <-time.After(50 * time.Millisecond):
					}
					var sum, anon int64
					for _, pid := range procsWithEnv(mark) {
						m, ok := procMem(pid)
						if !ok {
							continue
						}
						anon += m.unbacked
						b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "statm"))
						if f := strings.Fields(string(b)); len(f) > 1 {
							rss, _ := strconv.ParseInt(f[1], 10, 64)
							sum += rss * int64(os.Getpagesize()) >> 10
						}
						p := peak[m.name]
						p.name = m.name
						p.vmPeak, p.vmHWM, p.vmData = max(p.vmPeak, m.vmPeak), max(p.vmHWM, m.vmHWM), max(p.vmData, m.vmData)
						peak[m.name] = p
					}
					treeRSS, treeAnon = max(treeRSS, sum), max(treeAnon, anon)
				}
			}()
			resp, err := c.Chat(t.Context(), simRequest(skill, q))
			close(stop)
			<-done
			if err != nil {
				t.Fatalf("%v; request log %+v", err, s.RequestLog())
			}
			if got := simbench.ExtractAnswer(resp.Content); got != gold {
				t.Fatalf("answer %q, want %q", got, gold)
			}
			for _, p := range peak {
				t.Logf("%-16s VmPeak %6d MiB  VmHWM %5d MiB  VmData %6d MiB", p.name, p.vmPeak>>10, p.vmHWM>>10, p.vmData>>10)
			}
			t.Logf("tree resident peak %d MiB, not file-backed %d MiB (what the cap counts; sampled every 50 ms)", treeRSS>>10, treeAnon>>10)
			if len(peak) < 2 {
				t.Fatalf("sampled %d processes, want the launcher and the agent", len(peak))
			}
		})
	}
}

// TestSandboxedAgentMemoryCap: an agent whose processes hold more than
// option sandbox_memory_mb resident (a CLI and its tool command, 80 MiB
// each, under a 128 MiB cap) is killed and the call fails naming the
// cap; the same agent under the default cap answers.
func TestSandboxedAgentMemoryCap(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	bin := filepath.Join(hostDir(t), "hungry-agent")
	prog := "#!/usr/bin/python3\nimport os, time\nx = b'x' * (80 << 20)\nif os.fork() == 0:\n    y = b'y' * (80 << 20)\n    time.sleep(30)\n    os._exit(0)\ntime.sleep(3)\nprint('answer')\n"
	if err := os.WriteFile(bin, []byte(prog), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		opt  string
		fail bool
	}{{"128", true}, {"", false}} {
		opts := map[string]string{"command": `["` + bin + `"]`, "timeout": "1m"}
		if tc.opt != "" {
			opts["sandbox_memory_mb"] = tc.opt
		}
		cfg, err := exec.ConfigFromOptions("m", opts)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Getenv = env(nil)
		resp, err := exec.New(cfg).Chat(t.Context(), req("<skill>\ns\n</skill>", "t"))
		switch {
		case tc.fail && (llm.KindOf(err) != llm.KindServer || !strings.Contains(err.Error(), "memory cap") || !strings.Contains(err.Error(), "128 MiB")):
			t.Errorf("cap %s MiB: Chat() = %+v, %v; want a server error naming the 128 MiB memory cap", tc.opt, resp, err)
		case !tc.fail && (err != nil || resp.Content != "answer"):
			t.Errorf("default cap: Chat() = %+v, %v; want the answer", resp, err)
		case tc.fail:
			t.Logf("cap %s MiB: %v", tc.opt, err)
		}
	}
}
