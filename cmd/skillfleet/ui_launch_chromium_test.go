package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/skillfleet/skillfleet/internal/ui"
	"github.com/skillfleet/skillfleet/internal/ui/uitest"
)

// shoot writes a PNG of the page to the test's artifacts and, for docs
// when SKILLFLEET_UI_SCREENSHOT_DIR is set, to that directory too
// (docs/img).
func shoot(t *testing.T, b *uitest.Browser, name string, docs bool) {
	t.Helper()
	p := filepath.Join(t.ArtifactDir(), name)
	if err := b.Screenshot(p, false); err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("SKILLFLEET_UI_SCREENSHOT_DIR"); dir != "" && docs {
		data, _ := os.ReadFile(p)
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// setField sets a form field's value as a user would and fires its
// change event.
func setField(t *testing.T, b *uitest.Browser, name, value string) {
	t.Helper()
	expr := fmt.Sprintf(`(function(){var i=document.getElementById(%q); i.value=%q; i.dispatchEvent(new Event("change")); return true})()`, "f-"+name, value)
	if _, err := uitest.Eval[bool](b, expr); err != nil {
		t.Fatal(err)
	}
}

func click(t *testing.T, b *uitest.Browser, selector string) {
	t.Helper()
	if _, err := uitest.Eval[bool](b, fmt.Sprintf(`(function(){document.querySelector(%q).click(); return true})()`, selector)); err != nil {
		t.Fatal(err)
	}
}

func text(t *testing.T, b *uitest.Browser, id string) string {
	t.Helper()
	s, err := uitest.Eval[string](b, fmt.Sprintf(`(document.getElementById(%q)||{}).textContent||""`, id))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestUILaunchFromBrowser: on `skillfleet ui --ui-launch`, headless
// Chromium picks configs/demo.yaml, sees its YAML, sets a bad learning
// rate and sees the loader's error next to that field, sets the learning
// rate and the epochs, sees the estimate follow, launches, lands on the
// run's live view, stops the run from the page and resumes it, and
// watches it finish; the run dir's config.yaml holds the chosen values.
// The model is sim-llm with latency, so that the run is still going when
// it is stopped.
func TestUILaunchFromBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes and a browser")
	}
	b := uitest.New(t)
	if err := chromedp.Do(b.Ctx, chromedp.EmulateViewport(1200, 820)); err != nil {
		t.Fatal(err)
	}
	root := repoRoot(t)
	sim := simServer(t, "--latency", "150ms")
	runs := filepath.Join(t.TempDir(), "runs")
	addr := freeAddr(t)
	p := startCmdIn(t, root, binary, "ui", "--addr", addr, "--ui-launch", "--configs", "configs", "--runs", runs,
		"--launch-flag=--no-fsync",
		"--launch-set", "runtime.sim_llm=false", "--launch-set", "runtime.idle_fill=false",
		"--launch-set", "model.target_base_url="+sim, "--launch-set", "model.optimizer_base_url="+sim)
	base := "http://" + addr + "/"
	waitHTTP(t, base, p)

	if err := b.Navigate(base + "new/"); err != nil {
		t.Fatal(err)
	}
	if err := b.WaitFor(`document.documentElement.dataset.ready === "1" && document.documentElement.dataset.preview === "demo.yaml" && Number(document.documentElement.dataset.checks) >= 1`, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := pageInt(t, b, "configs"); n < 10 {
		t.Errorf("the picker offers %d configs", n)
	}
	if prev := text(t, b, "preview"); !strings.Contains(prev, "preset: demo") {
		t.Errorf("the preview does not show configs/demo.yaml:\n%s", prev)
	}
	lr, _ := uitest.Eval[string](b, `document.getElementById("f-learning_rate").value`)
	ep, _ := uitest.Eval[string](b, `document.getElementById("f-num_epochs").value`)
	if lr != "4" || ep != "3" {
		t.Errorf("the form shows learning rate %q and epochs %q, want demo.yaml's 4 and 3", lr, ep)
	}
	if est := text(t, b, "estimate"); !strings.Contains(est, "3 epochs") || !strings.Contains(est, "total") {
		t.Errorf("estimate of the file as it is:\n%s", est)
	}

	// A bad value is shown next to its field, and launching is refused.
	checks := pageInt(t, b, "checks")
	setField(t, b, "learning_rate", "lots")
	if err := b.WaitFor(fmt.Sprintf(`Number(document.documentElement.dataset.checks) > %d && document.getElementById("err-learning_rate").textContent !== ""`, checks), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if e := text(t, b, "err-learning_rate"); !strings.Contains(e, "integer") {
		t.Errorf("learning rate error %q, want the loader's type error", e)
	}
	if e := text(t, b, "err-num_epochs"); e != "" {
		t.Errorf("an error shown next to the epochs: %q", e)
	}
	shoot(t, b, "dashboard-new-run-error.png", true)
	click(t, b, "#btn-launch")
	if err := b.WaitFor(`document.documentElement.dataset.launch === "refused"`, 30*time.Second); err != nil {
		t.Fatal(err)
	}

	// Good values: the estimate follows.
	checks = pageInt(t, b, "checks")
	setField(t, b, "learning_rate", "3")
	setField(t, b, "num_epochs", "2")
	if err := b.WaitFor(fmt.Sprintf(`Number(document.documentElement.dataset.checks) > %d && document.documentElement.dataset.checkOk === "1" && document.getElementById("estimate").textContent.includes("2 epochs")`, checks), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if sets, _ := uitest.Eval[string](b, `document.documentElement.dataset.sets`); sets != "optimizer.learning_rate=3 train.num_epochs=2" {
		t.Errorf("the form gives --set %q", sets)
	}
	if e := text(t, b, "err-learning_rate"); e != "" {
		t.Errorf("the learning rate's error stayed: %q", e)
	}
	click(t, b, "#btn-preflight")
	if err := b.WaitFor(`document.documentElement.dataset.preflight === "ok"`, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	shoot(t, b, "dashboard-new-run.png", true)

	// Launch: the page opens the run's live view.
	click(t, b, "#btn-launch")
	if err := b.WaitFor(`document.body.dataset.page === "run" && document.documentElement.dataset.conn === "open"`, time.Minute); err != nil {
		t.Fatalf("%v\n%s", err, p.stderr.String())
	}
	runName, _ := uitest.Eval[string](b, `document.body.dataset.name`)
	runDir := filepath.Join(runs, runName)
	if !regexp.MustCompile(`^demo-\d{8}-\d{6}$`).MatchString(runName) {
		t.Errorf("run named %q", runName)
	}
	if err := b.WaitFor(`Number(document.documentElement.dataset.step) >= 1`, 3*time.Minute); err != nil {
		t.Fatalf("%v\nlaunch.log:\n%s", err, fileText(t, filepath.Join(runDir, "launch.log")))
	}
	// The launched run keeps progress.json: the live view shows the
	// wave's tasks.
	if err := b.WaitFor(`!!document.querySelector("#status .bar")`, time.Minute); err != nil {
		t.Errorf("no progress bar on the launched run's page: %v", err)
	}
	if _, err := os.Stat(filepath.Join(runDir, "progress.json")); err != nil {
		t.Errorf("the launched run keeps no progress.json: %v", err)
	}
	shoot(t, b, "dashboard-launched-run-live.png", false)

	// Stop it from the new-run page's list, then resume it.
	if err := b.Navigate(base + "new/"); err != nil {
		t.Fatal(err)
	}
	row := fmt.Sprintf(`document.querySelector('#jobs tr[data-name=%q]')`, runName)
	if err := b.WaitFor(row+` && `+row+`.dataset.state === "running"`, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	click(t, b, fmt.Sprintf(`#jobs tr[data-name=%q] button.stop`, runName))
	if err := b.WaitFor(row+`.dataset.state === "stopped"`, 3*time.Minute); err != nil {
		t.Fatalf("%v\nlaunch.log:\n%s", err, fileText(t, filepath.Join(runDir, "launch.log")))
	}
	var stoppedAt int
	if data, err := os.ReadFile(filepath.Join(runDir, "events.jsonl")); err == nil {
		stoppedAt = strings.Count(string(data), "\n")
	}
	if _, err := os.Stat(filepath.Join(runDir, "summary.json")); err == nil {
		t.Fatal("the run finished before the stop took effect; nothing was resumed")
	}
	runID := fileText(t, filepath.Join(runDir, "run_id"))
	click(t, b, fmt.Sprintf(`#jobs tr[data-name=%q] button.resume`, runName))
	if err := b.WaitFor(row+`.dataset.state === "running" || `+row+`.dataset.state === "finished"`, 30*time.Second); err != nil {
		t.Fatal(err)
	}

	// The run's live view shows it to its end.
	if err := b.Navigate(base + "run/" + runName + "/"); err != nil {
		t.Fatal(err)
	}
	if err := b.WaitFor(`document.documentElement.dataset.finished === "true"`, 5*time.Minute); err != nil {
		t.Fatalf("%v\nlaunch.log:\n%s", err, fileText(t, filepath.Join(runDir, "launch.log")))
	}
	log := fileText(t, filepath.Join(runDir, "launch.log"))
	if strings.Count(log, "dashboard: skillfleet train") != 2 || !strings.Contains(log, "dashboard: run stopped") || !strings.Contains(log, "dashboard: run finished") {
		t.Errorf("launch.log does not show a stopped then a resumed attempt:\n%s", log)
	}
	if id := fileText(t, filepath.Join(runDir, "run_id")); id != runID {
		t.Errorf("run_id %q after the resume, %q before: the second attempt did not resume the run", id, runID)
	}
	cfg := fileText(t, filepath.Join(runDir, "config.yaml"))
	if !regexp.MustCompile(`(?m)^\s+learning_rate: 3$`).MatchString(cfg) || !regexp.MustCompile(`(?m)^\s+num_epochs: 2$`).MatchString(cfg) {
		t.Errorf("config.yaml does not hold learning_rate 3 and num_epochs 2:\n%s", cfg)
	}
	t.Logf("run %s: stopped after %d events, resumed, finished", runName, stoppedAt)
	shoot(t, b, "dashboard-launched-run.png", true)
	if errs, _ := uitest.Eval[string](b, `document.documentElement.dataset.errors || ""`); errs != "" {
		t.Errorf("script errors: %s", errs)
	}
	if nl := b.NonLoopback(); len(nl) > 0 {
		t.Errorf("requests beyond loopback: %v", nl)
	}
}

func fileText(t *testing.T, p string) string {
	t.Helper()
	data, _ := os.ReadFile(p)
	return string(data)
}

// TestUILaunchRefusedWithoutFlag: `skillfleet ui` without --ui-launch has
// no new-run page, and a launch posted from the browser is refused with
// the flag named; nothing is written.
func TestUILaunchRefusedWithoutFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes and a browser")
	}
	b := uitest.New(t)
	root := repoRoot(t)
	runs := filepath.Join(t.TempDir(), "runs")
	addr := freeAddr(t)
	p := startCmdIn(t, root, binary, "ui", "--addr", addr, "--runs", runs, filepath.Join(root, "pkg", "report", "testdata", "priced"))
	base := "http://" + addr + "/"
	waitHTTP(t, base, p)
	if err := b.Navigate(base + "new/"); err != nil {
		t.Fatal(err)
	}
	page, _ := uitest.Eval[string](b, `document.body.textContent`)
	if !strings.Contains(page, "--ui-launch") {
		t.Errorf("/new/ without the flag shows %q, want the refusal naming --ui-launch", page)
	}
	if ok, _ := uitest.Eval[bool](b, `document.getElementById("btn-launch") === null`); !ok {
		t.Error("the new-run form is served without the flag")
	}
	if err := b.Navigate(base); err != nil {
		t.Fatal(err)
	}
	if ok, _ := uitest.Eval[bool](b, `document.querySelector('a[href="/new/"]') === null`); !ok {
		t.Error("the dashboard links to a new-run page it does not have")
	}
	if _, err := uitest.Eval[bool](b, `(window.__r = null, fetch("/new/launch", {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify({config: "demo.yaml", fields: {}})}).then(function (r) { return r.text().then(function (t) { window.__r = r.status + " " + t; }); }), true)`); err != nil {
		t.Fatal(err)
	}
	if err := b.WaitFor(`window.__r !== null`, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	got, _ := uitest.Eval[string](b, `window.__r`)
	if !strings.HasPrefix(got, "403 ") || !strings.Contains(got, "--ui-launch") {
		t.Errorf("a launch posted from the page: %q, want 403 naming --ui-launch", got)
	}
	if _, err := os.Stat(runs); err == nil {
		t.Errorf("a refused launch created %s", runs)
	}
}

// launchPost posts a launch action as the page does.
func launchPost(t *testing.T, url, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// launchedState is the state the new-run page's list gives job name.
func launchedState(t *testing.T, base, name string) string {
	t.Helper()
	resp, err := http.Get(base + "new/jobs")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct{ Jobs []ui.JobView }
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	for _, j := range v.Jobs {
		if j.Name == name {
			return j.State + " " + j.Message
		}
	}
	return ""
}

// TestUILaunchCampaign: the page's actions launch configs/campaigns/sim-demo.yaml
// with one epoch in every cell, stop it once a cell is done, resume it,
// and it finishes with every training cell's config.yaml holding the
// epoch count;
// the campaign's page is served. A bad value is refused by field, said
// once for all the cells.
func TestUILaunchCampaign(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	root := repoRoot(t)
	runs := filepath.Join(t.TempDir(), "runs")
	addr := freeAddr(t)
	p := startCmdIn(t, root, binary, "ui", "--addr", addr, "--ui-launch", "--configs", "configs", "--runs", runs,
		"--campaign-flag=--max-active-runs=1")
	base := "http://" + addr + "/"
	waitHTTP(t, base, p)
	code, out := launchPost(t, base+"new/launch", `{"config":"campaigns/sim-demo.yaml","fields":{"num_epochs":"0"}}`)
	if code != http.StatusUnprocessableEntity || strings.Count(out, "got 0") != 1 {
		t.Errorf("campaign with 0 epochs: %d %s, want 422 with the error once", code, out)
	}
	code, out = launchPost(t, base+"new/launch", `{"config":"campaigns/sim-demo.yaml","fields":{"num_epochs":"1"},"name":"camp"}`)
	if code != 200 || !strings.Contains(out, `"href":"/campaign/camp/"`) {
		t.Fatalf("launch: %d %s", code, out)
	}
	dir := filepath.Join(runs, "camp")
	wait := func(what string, timeout time.Duration, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(timeout); !ok(); time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("waited %s for %s; state %q\nlaunch.log:\n%s", timeout, what, launchedState(t, base, "camp"), fileText(t, filepath.Join(dir, "launch.log")))
			}
		}
	}
	wait("a cell done", 3*time.Minute, func() bool { return strings.Contains(fileText(t, filepath.Join(dir, "launch.log")), ": done (test") })
	if code, out := launchPost(t, base+"new/jobs/camp/stop", `{}`); code != 200 {
		t.Fatalf("stop: %d %s", code, out)
	}
	wait("the campaign stopped", 3*time.Minute, func() bool { return strings.HasPrefix(launchedState(t, base, "camp"), "stopped") })
	if code, out := launchPost(t, base+"new/jobs/camp/resume", `{}`); code != 200 {
		t.Fatalf("resume: %d %s", code, out)
	}
	wait("the campaign finished", 5*time.Minute, func() bool { return strings.HasPrefix(launchedState(t, base, "camp"), "finished") })
	log := fileText(t, filepath.Join(dir, "launch.log"))
	if !strings.Contains(log, "dashboard: campaign stopped") || !strings.Contains(log, "4 cells (4 done)") {
		t.Errorf("launch.log does not show a stopped campaign resumed to its end:\n%s", log)
	}
	// The eval-only cell (demo-s1-again) trains nothing and writes no
	// config.yaml.
	cfgs, _ := filepath.Glob(filepath.Join(dir, "cells", "*", "config.yaml"))
	if len(cfgs) != 3 {
		t.Errorf("%d training cells' config.yaml, want 3", len(cfgs))
	}
	for _, c := range cfgs {
		if !regexp.MustCompile(`(?m)^\s+num_epochs: 1$`).MatchString(fileText(t, c)) {
			t.Errorf("%s does not hold num_epochs 1", c)
		}
	}
	resp, err := http.Get(base + "campaign/camp/api")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("the campaign's page: %d", resp.StatusCode)
	}
}

// TestUILaunchOnExternalFleet: with --nats the dashboard's runs have no
// workers of their own; a worker process on that NATS serves the
// launched run to its end.
func TestUILaunchOnExternalFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	root := repoRoot(t)
	url := startNatsd(t)
	runs := filepath.Join(t.TempDir(), "runs")
	addr := freeAddr(t)
	p := startCmdIn(t, root, binary, "ui", "--addr", addr, "--ui-launch", "--configs", "configs", "--runs", runs, "--nats", url,
		"--launch-flag=--no-fsync")
	base := "http://" + addr + "/"
	waitHTTP(t, base, p)
	code, out := launchPost(t, base+"new/launch", `{"config":"demo.yaml","fields":{"num_epochs":"1"},"name":"ext"}`)
	if code != 200 {
		t.Fatalf("launch: %d %s", code, out)
	}
	dir := filepath.Join(runs, "ext")
	// The run waits for a worker; none of its own is started.
	for deadline := time.Now().Add(time.Minute); !strings.Contains(fileText(t, filepath.Join(dir, "launch.log")), "start workers with"); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the launched run did not wait for external workers:\n%s", fileText(t, filepath.Join(dir, "launch.log")))
		}
	}
	if st := launchedState(t, base, "ext"); !strings.HasPrefix(st, "running") {
		t.Fatalf("state %q before any worker", st)
	}
	startFleetWorker(t, url, "16")
	for deadline := time.Now().Add(4 * time.Minute); !strings.HasPrefix(launchedState(t, base, "ext"), "finished"); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("state %q\n%s", launchedState(t, base, "ext"), fileText(t, filepath.Join(dir, "launch.log")))
		}
	}
	log := fileText(t, filepath.Join(dir, "launch.log"))
	if !strings.Contains(log, "--nats "+url+" --workers 0") {
		t.Errorf("the run was not started on the external fleet:\n%s", log)
	}
}
