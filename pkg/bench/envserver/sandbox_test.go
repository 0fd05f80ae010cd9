package envserver_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/envserver"
	"github.com/skillfleet/skillfleet/pkg/bench/envserver/textgame"
	"github.com/skillfleet/skillfleet/pkg/bench/registry"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/envserver/v1"
)

// sandboxPython is Debian's interpreter: a root worker's sandbox runs as
// nobody, who cannot read an interpreter under /root (pyenv).
func sandboxPython(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		python(t)
		t.Skip("no /usr/bin/python3")
	}
	return "/usr/bin/python3"
}

func startSandboxed(t *testing.T, argv, env []string) *envserver.Bridge {
	t.Helper()
	br, err := envserver.StartSandboxedBridge(t.Context(), argv, env, envserver.BridgeSandbox{})
	if err != nil {
		if strings.Contains(err.Error(), "sandbox unavailable") && os.Getenv("CI") == "" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { br.Stop() })
	return br
}

// TestALFWorldBridgeSandboxed plays the ALFWorld item of
// TestALFWorldBridge with the bridge inside the sandbox: the script, the
// stand-in textworld/alfworld modules (PYTHONPATH) and the game data are
// bound read-only, and the episode comes out the same.
func TestALFWorldBridgeSandboxed(t *testing.T) {
	py := sandboxPython(t)
	fake, _ := filepath.Abs("testdata/fakealfworld")
	data, _ := filepath.Abs("testdata/alfdata")
	script, _ := filepath.Abs("../../../scripts/alfworld_bridge.py")
	br := startSandboxed(t, []string{py, script},
		[]string{"PYTHONPATH=" + fake, "ALFWORLD_DATA=" + data, "PATH=/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE=1", "OPENAI_API_KEY=sk-not-for-the-bridge"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- textgame.Serve(ctx, ln, br) }()
	defer func() { stop(); <-done }()

	cfg, _ := json.Marshal(map[string]any{"env_server": ln.Addr().String(), "max_steps": 10})
	env, err := registry.New("alfworld", cfg)
	if err != nil {
		t.Fatal(err)
	}
	closeAtEnd(t, env)
	raw, _ := json.Marshal(map[string]string{"id": "valid_seen:0000", "gamefile": "valid_seen/pick_and_place_simple-Mug-None-Cabinet-1/trial_1/game.tw-pddl"})
	m := acts("go to countertop 1", "dance", "take mug 1 from countertop 1", "go to cabinet 1", "put mug 1 in/on cabinet 1")
	ep, err := env.Episode(ctx, m, bench.EpisodeRequest{Item: bench.Item{ID: "valid_seen:0000", Raw: raw}, Skill: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if ep.Hard != 1 || ep.NTurns != 5 || ep.FailReason != "" || ep.TaskType != "pick_and_place" {
		t.Errorf("sandboxed bridge: hard %v turns %d type %q reason %q", ep.Hard, ep.NTurns, ep.TaskType, ep.FailReason)
	}
}

// hostileBridge answers "info" with what it could see and reach, as the
// name: a stand-in for an engine that the model's text has taken over.
const hostileBridge = `
import json, os, socket, sys
r = {"uid": os.getuid(), "root": sorted(os.listdir("/")), "env": sorted(os.environ)}
for p in sys.argv[1:]:
    try:
        os.listdir(p); r[p] = "visible"
    except Exception as e:
        r[p] = "hidden"
try:
    open(os.environ["ALFWORLD_DATA"] + "/planted", "w"); r["data_write"] = "WROTE"
except Exception as e:
    r["data_write"] = "refused"
try:
    socket.create_connection(("127.0.0.1", int(os.environ["PYTHONHOSTPORT"])), timeout=2); r["net"] = "REACHED"
except Exception as e:
    r["net"] = "blocked"
for line in sys.stdin:
    print(json.dumps({"name": json.dumps(r), "games": []}), flush=True)
`

// TestSandboxedBridgeIsConfined: a bridge child taken over by hostile
// input sees only its own view: not the repository, /root, /home or the
// host's temp files; it cannot write the game data, reach a host
// listener, or read variables other than PYTHON*/ALFWORLD_*/TEXTWORLD_*.
func TestSandboxedBridgeIsConfined(t *testing.T) {
	py := sandboxPython(t)
	dir, err := os.MkdirTemp("", "bridge-hostile-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "hostile.py")
	if err := os.WriteFile(script, []byte(hostileBridge), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o777); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	repo, _ := filepath.Abs("../../..")
	br := startSandboxed(t, []string{py, script, repo, "/root", "/home", dir, os.TempDir()},
		[]string{"ALFWORLD_DATA=" + data, "PYTHONHOSTPORT=" + port, "OPENAI_API_KEY=sk-planted", "HOME=/root"})
	info, err := br.Info(t.Context(), &pb.InfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(info.Name), &r); err != nil {
		t.Fatalf("%q: %v", info.Name, err)
	}
	for _, p := range []string{repo, "/root", "/home", dir, os.TempDir()} {
		if r[p] != "hidden" && !(p == os.TempDir() && r[p] == "visible") {
			t.Errorf("%s is %v inside the sandbox", p, r[p])
		}
	}
	if r["data_write"] != "refused" || r["net"] != "blocked" || r["uid"] != float64(65534) {
		t.Errorf("data write %v, network %v, uid %v", r["data_write"], r["net"], r["uid"])
	}
	if _, err := os.Stat(filepath.Join(data, "planted")); err == nil {
		t.Error("the bridge wrote into the game data")
	}
	for _, e := range r["env"].([]any) {
		if e == "OPENAI_API_KEY" {
			t.Errorf("environment %v holds the API key's variable", r["env"])
		}
	}
}
