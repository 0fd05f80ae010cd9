package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/internal/ui/uitest"
)

// envUINetnsChild marks the copy of this test that runs inside the
// loopback-only network namespace.
const envUINetnsChild = "SKILLFLEET_UI_NETNS_CHILD"

// TestUIPageLoadsWithOnlyLoopback: the test binary runs itself again in
// a new network namespace (unshare --net) that has a loopback interface
// and nothing else — no route, no name server. There a sim training run
// serves --ui and headless Chromium, with the system's own name
// resolution, opens the Run page: it renders fully (the three charts
// drawn, the steps, the skill, the spend table) with every request
// answered and none beyond loopback.
func TestUIPageLoadsWithOnlyLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes and a browser")
	}
	if os.Getenv(envUINetnsChild) == "1" {
		uiLoopbackOnlyPage(t)
		return
	}
	uitest.Chromium(t)
	t.Parallel() // the namespace has its own ports; this process only waits
	unavailable := func(err error) {
		if os.Getenv(EnvRequireNetns) != "" {
			t.Fatalf("network namespaces are required ($%s is set) but cannot be created: %v", EnvRequireNetns, err)
		}
		t.Skipf("skipping: a network namespace cannot be created here (needs root and util-linux unshare): %v", err)
	}
	if out, err := exec.Command("unshare", "--net", "--", "ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		unavailable(fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out))))
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--net", "--", "sh", "-c", `ip link set lo up && exec "$@"`, "sh",
		self, "-test.run=^TestUIPageLoadsWithOnlyLoopback$", "-test.count=1", "-test.v"}
	cmd := exec.Command("unshare", args...)
	cmd.Env = append(os.Environ(), envUINetnsChild+"=1", uitest.RequireEnv+"=1")
	out, err := cmd.CombinedOutput()
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, ".go:") {
			t.Log("namespace: " + strings.TrimSpace(l))
		}
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: TestUIPageLoadsWithOnlyLoopback") {
		t.Fatalf("the test inside the namespace failed: %v\n%s", err, out)
	}
}

// uiLoopbackOnlyPage is the part inside the namespace.
func uiLoopbackOnlyPage(t *testing.T) {
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, i := range ifs {
		names = append(names, i.Name)
	}
	if len(ifs) != 1 || ifs[0].Flags&net.FlagLoopback == 0 || ifs[0].Flags&net.FlagUp == 0 {
		t.Fatalf("want only loopback, up: interfaces %v", names)
	}
	// Nothing beyond loopback is reachable: no route at all.
	for _, addr := range []string{"192.0.2.1:80", "[2001:db8::1]:80"} {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err == nil {
			c.Close()
			t.Fatalf("dialled %s from a loopback-only namespace", addr)
		}
		if !strings.Contains(err.Error(), "unreachable") {
			t.Fatalf("dial %s: %v, want network unreachable", addr, err)
		}
	}
	if _, err := net.LookupHost("example.com"); err == nil {
		t.Fatal("example.com resolved in a loopback-only namespace")
	}
	t.Logf("interfaces %v; 192.0.2.1 and 2001:db8::1 unreachable; example.com does not resolve", names)

	b := uitest.New(t, uitest.RealResolver())
	sim := simServer(t, "--latency", "80ms")
	addr := freeAddr(t)
	p := uiTrain(t, filepath.Join(t.TempDir(), "run"), sim, addr)
	waitHTTP(t, "http://"+addr+"/run/run/", p)
	if err := b.Navigate("http://" + addr + "/run/run/"); err != nil {
		t.Fatal(err)
	}
	// Two decisions recorded, so that every chart has points to draw.
	ready := `document.documentElement.dataset.conn === "open" && Number(document.documentElement.dataset.step) >= 2 &&
		document.querySelectorAll("#steps tr.row").length >= 2 && document.querySelector("#skill-current .md") !== null &&
		document.querySelector("#step-detail pre.diff") !== null`
	if err := b.WaitFor(ready, 3*time.Minute); err != nil {
		t.Fatalf("%v\n%s", err, p.stderr.String())
	}
	for _, id := range []string{"chart-selection", "chart-rollout", "chart-spend"} {
		// Count the canvas pixels painted: axes, grid and lines.
		painted, err := uitest.Eval[int](b, fmt.Sprintf(`(function () {
			var c = document.querySelector("#%s canvas");
			if (!c || !c.width || !c.height) return -1;
			var d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data, n = 0;
			for (var i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
			return n;
		})()`, id))
		if err != nil {
			t.Fatal(err)
		}
		points := pageDataset(t, b, id)
		t.Logf("%s: %d painted pixels, %s points", id, painted, points)
		if painted < 1000 || points == "" || points == "0" || points == "1" {
			t.Errorf("%s is not drawn: %d painted pixels, %q points", id, painted, points)
		}
	}
	if ok, err := uitest.Eval[bool](b, `typeof uPlot === "function" && document.styleSheets.length >= 2 &&
		Array.prototype.every.call(document.styleSheets, function (s) { return s.cssRules.length > 0; })`); err != nil || !ok {
		t.Errorf("uPlot or a stylesheet did not load (err %v)", err)
	}
	if rows, _ := uitest.Eval[int](b, `document.querySelectorAll("#spend tr").length`); rows < 2 {
		t.Errorf("the spend table has %d rows", rows)
	}
	if errs, _ := uitest.Eval[string](b, `document.documentElement.dataset.errors || ""`); errs != "" {
		t.Errorf("script errors: %s", errs)
	}
	if f := b.Failed(); len(f) > 0 {
		t.Errorf("failed requests: %v", f)
	}
	if nl := b.NonLoopback(); len(nl) > 0 {
		t.Errorf("requests beyond loopback: %v", nl)
	}
	if len(b.Requests()) < 5 {
		t.Errorf("only %d requests logged: %v", len(b.Requests()), b.Requests())
	}
	t.Logf("%d requests, every one answered, all to loopback", len(b.Requests()))
}

func pageDataset(t *testing.T, b *uitest.Browser, id string) string {
	t.Helper()
	s, err := uitest.Eval[string](b, fmt.Sprintf(`document.getElementById(%q).dataset.points || ""`, id))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
