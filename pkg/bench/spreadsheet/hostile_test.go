package spreadsheet

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The hostile-program suite (issue 24): the probes of probes.go, one per
// attack class, through the scoring path. Each must end with an allowed
// typed outcome and leave no trace on the host (ProbeHost.traces: files,
// gold, listeners, environment, survivors); here also: the hook really
// was off, the worker's and the scorer's memory stayed bounded, and
// nothing is left in the temporary directory.

func newProbeHost(t *testing.T) *ProbeHost {
	t.Helper()
	findPython(t)
	h, err := NewProbeHost()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

func TestHostile(t *testing.T) {
	h := newProbeHost(t)
	watch := filepath.Join(t.TempDir(), "tmpdir")
	if err := os.Mkdir(watch, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", watch) // the worker's temp files (scoring) go here
	e := newEnv(t, h.Root, map[string]any{"work_mb": 16, "exec_timeout": "60s", "compare_seconds": 10})
	if e.box.Isolation() != "bubblewrap" {
		t.Fatalf("isolation %q", e.box.Isolation())
	}
	ctx := context.Background()
	if r, err := h.Control(ctx, e); err != nil || !r.Held {
		t.Fatalf("control: %v %+v", err, r)
	}
	var before syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &before); err != nil {
		t.Fatal(err)
	}
	for _, p := range Probes {
		t.Run(p.Class, func(t *testing.T) {
			r, err := h.Run(ctx, e, p)
			if err != nil {
				t.Fatal(err)
			}
			cr := r.Case
			t.Logf("outcome %s in %s (scorer %s, peak RSS %d MiB): %s", cr.Outcome, r.Elapsed.Round(time.Millisecond),
				cr.Score.Elapsed.Round(time.Millisecond), cr.Score.PeakRSS>>20, firstLine(cr.Detail))
			if !r.Held {
				t.Errorf("got through: %s\n%s", r.Why, cr.Run.Output)
			}
			if cr.Outcome == OutcomePass {
				t.Error("a hostile program scored")
			}
			if !strings.Contains(cr.Run.Output, "HOOK-OFF") {
				t.Errorf("the hook was not switched off, so the kernel layer was not tested alone:\n%s", cr.Run.Output)
			}
			if cr.Score.PeakRSS > 1536<<20 {
				t.Errorf("the scorer's peak RSS %d MiB is past its limit", cr.Score.PeakRSS>>20)
			}
		})
	}
	var after syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &after); err != nil {
		t.Fatal(err)
	}
	t.Logf("worker peak RSS: %d MiB before the suite, %d MiB after (zip bombs included)", before.Maxrss>>10, after.Maxrss>>10)
	if after.Maxrss > 512<<10 {
		t.Errorf("worker peak RSS %d MiB: the scorer's memory is not bounded", after.Maxrss>>10)
	}
	if ents, _ := os.ReadDir(watch); len(ents) > 0 {
		var names []string
		for _, x := range ents {
			names = append(names, x.Name())
		}
		t.Errorf("left in the temporary directory: %v", names)
	}
}

// TestHostileCrossRun: an attacker running next to a victim can neither
// see, change nor kill it; the victim scores.
func TestHostileCrossRun(t *testing.T) {
	h := newProbeHost(t)
	e := newEnv(t, h.Root, map[string]any{"exec_timeout": "60s"})
	r, err := h.CrossRun(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Held {
		t.Errorf("got through: %s\n%s", r.Why, r.Case.Run.Output)
	}
	out := strings.TrimSpace(r.Case.Run.Output)
	t.Logf("attacker: %s", out[strings.LastIndex(out, "\n")+1:])
	if !strings.Contains(out, "SEEN [] KILLED 0") {
		t.Errorf("the attacker saw processes outside its own sandbox: %s", out)
	}
}

// TestHostileNonRoot runs TestHostile and TestHostileCrossRun again as an
// unprivileged worker (uid 4242), whose sandbox rests on unprivileged user
// namespaces.
func TestHostileNonRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("already not root: TestHostile itself is the non-root run")
	}
	findPython(t)
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) is needed to drop to an unprivileged user")
	}
	const uid = 4242
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "spreadsheet.test")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(home, uid, uid); err != nil {
		t.Fatal(err)
	}
	for d := dir; d != "/" && strings.HasPrefix(d, os.TempDir()); d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755) // traversable by the worker, where this test may change it
	}
	wd, _ := os.Getwd()
	cmd := exec.Command(setpriv, "--reuid", fmt.Sprint(uid), "--regid", fmt.Sprint(uid), "--clear-groups", "--",
		bin, "-test.run", "^TestHostile(CrossRun)?$", "-test.count", "1", "-test.v", "-test.timeout", "10m")
	cmd.Dir = wd
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + home, "CI=" + os.Getenv("CI")}
	out, err := cmd.CombinedOutput()
	text := string(out)
	if strings.Contains(text, "sandbox unavailable") && os.Getenv("CI") == "" {
		t.Skipf("user namespaces are not available to an unprivileged user here:\n%s", text)
	}
	if err != nil || !strings.Contains(text, "--- PASS: TestHostile ") || !strings.Contains(text, "--- PASS: TestHostileCrossRun") || strings.Contains(text, "--- SKIP") {
		t.Fatalf("as uid %d: %v\n%s", uid, err, text)
	}
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, "peak RSS") || strings.Contains(l, "attacker:") {
			t.Log(strings.TrimSpace(l))
		}
	}
}
