package ui

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/pkg/config"
)

// launchConfigs writes a configs directory: a run config on the repo's
// default base with the demo's settings, a campaign file, a price table
// and a base file (the last two are not offered).
func launchConfigs(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	base, err := os.ReadFile(filepath.Join(root, "configs", "_base_", "default.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	write("_base_/default.yaml", string(base))
	write("demo.yaml", `_base_: _base_/default.yaml
model: {backend: openai_compatible, optimizer: sim-optimizer, target: sim-target, reasoning_effort: ""}
train: {num_epochs: 3, batch_size: 20, seed: 42}
optimizer: {learning_rate: 4, min_learning_rate: 2, lr_scheduler: cosine}
env: {name: sim, preset: demo, seed: 7, skill_init: `+filepath.Join(root, "configs", "skills", "sim_demo_seed.md")+`}
runtime: {sim_llm: true, workers: 2}
`)
	write("campaigns/two.yaml", "name: two\nmatrix:\n  configs: [../demo.yaml]\n  seeds: [1, 2]\n")
	write("prices.yaml", "models:\n  x: {input: 1, output: 2}\n")
	return dir
}

func postJSON(t *testing.T, url, body string, hdr ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestLaunchOffByDefault: without Launch the page and every action answer
// 403 naming the flag, and the index does not offer it.
func TestLaunchOffByDefault(t *testing.T) {
	dir := t.TempDir()
	newFakeRun(t, dir, 1)
	s := serve(t, Options{}, dir)
	for _, path := range []string{"new/", "new/configs", "new/config?name=demo.yaml"} {
		resp, body := get(t, s.URL()+path)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "--ui-launch") {
			t.Errorf("GET /%s: %d %q, want 403 naming --ui-launch", path, resp.StatusCode, body)
		}
	}
	for _, path := range []string{"new/check", "new/preflight", "new/launch", "new/jobs/x/stop", "new/jobs/x/resume"} {
		code, body := postJSON(t, s.URL()+path, `{"config":"demo.yaml"}`)
		if code != http.StatusForbidden || !strings.Contains(body, "--ui-launch") {
			t.Errorf("POST /%s: %d %q, want 403 naming --ui-launch", path, code, body)
		}
	}
	if _, body := get(t, s.URL()+"run/"+filepath.Base(dir)+"/"); strings.Contains(body, "/new/") {
		t.Error("a page of a server without launching links to the new-run page")
	}
}

// TestLaunchConfigsAndCheck: the picker lists run and campaign configs
// (not bases or price tables); a preview holds the file and the form's
// values; a check maps each field to its --set key, puts the loader's
// error next to its field, and refuses paths outside the directory.
func TestLaunchConfigsAndCheck(t *testing.T) {
	cfgs := launchConfigs(t)
	l := &Launch{ConfigsDir: cfgs, RunsDir: t.TempDir(), Load: config.Load,
		Estimate: func(w io.Writer, cfg *config.Config) error {
			_, err := io.WriteString(w, "epochs "+itoaField(cfg.Train.NumEpochs))
			return err
		}}
	s := serve(t, Options{Launch: l})
	resp, body := get(t, s.URL()+"new/configs")
	if resp.StatusCode != 200 {
		t.Fatalf("configs: %d %s", resp.StatusCode, body)
	}
	var list struct {
		Configs []ConfigEntry `json:"configs"`
		Fields  []FormField   `json:"fields"`
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatal(err)
	}
	want := []ConfigEntry{{"campaigns/two.yaml", "campaign"}, {"demo.yaml", "run"}}
	if len(list.Configs) != len(want) || list.Configs[0] != want[0] || list.Configs[1] != want[1] {
		t.Errorf("configs %v, want %v", list.Configs, want)
	}
	if len(list.Fields) != len(FormFields) {
		t.Errorf("%d fields, want %d", len(list.Fields), len(FormFields))
	}
	_, body = get(t, s.URL()+"new/config?name=demo.yaml")
	var pv ConfigPreview
	if err := json.Unmarshal([]byte(body), &pv); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(pv.YAML, "lr_scheduler: cosine") || pv.Values["learning_rate"] != "4" || pv.Values["num_epochs"] != "3" || pv.Values["use_gate"] != "true" || pv.Error != "" {
		t.Errorf("preview %+v", pv)
	}
	if resp, _ := get(t, s.URL()+"new/config?name=../../etc/passwd"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("preview outside the configs directory: %d, want 404", resp.StatusCode)
	}

	check := func(body string) CheckResult {
		t.Helper()
		code, out := postJSON(t, s.URL()+"new/check", body)
		if code != 200 {
			t.Fatalf("check %s: %d %s", body, code, out)
		}
		var r CheckResult
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := check(`{"config":"demo.yaml","fields":{"learning_rate":"2","num_epochs":"1","batch_size":"20","use_gate":"false"}}`)
	if !r.OK || strings.Join(r.Sets, " ") != "optimizer.learning_rate=2 train.num_epochs=1 evaluation.use_gate=false" || r.Estimate != "epochs 1" {
		t.Errorf("good check: %+v", r)
	}
	r = check(`{"config":"demo.yaml","fields":{"learning_rate":"many"}}`)
	if r.OK || !strings.Contains(r.FieldErrors["learning_rate"], "want integer") || r.Estimate != "" {
		t.Errorf("bad learning rate: %+v", r)
	}
	r = check(`{"config":"demo.yaml","fields":{"lr_scheduler":"zigzag"}}`)
	if r.OK || !strings.Contains(r.FieldErrors["lr_scheduler"], `"zigzag"`) {
		t.Errorf("bad scheduler: %+v", r)
	}
	r = check(`{"config":"demo.yaml","fields":{"num_epochs":"0"}}`)
	if r.OK || !strings.Contains(r.FieldErrors["num_epochs"], "must be > 0") {
		t.Errorf("zero epochs: %+v", r)
	}
	r = check(`{"config":"demo.yaml","fields":{"epochs":"2"}}`)
	if r.OK || r.FieldErrors["epochs"] == "" {
		t.Errorf("unknown field: %+v", r)
	}
	r = check(`{"config":"../demo.yaml","fields":{}}`)
	if r.OK || !strings.Contains(r.Error, "not inside the configs directory") {
		t.Errorf("config outside the directory: %+v", r)
	}
}

// TestLaunchActionsNeedSameOriginJSONOnLoopback: without a JSON body, from
// another origin, or under a Host that is not a loopback name, a launch
// action is refused before anything runs.
func TestLaunchActionsNeedSameOriginJSONOnLoopback(t *testing.T) {
	var ran atomic.Int32
	l := &Launch{ConfigsDir: launchConfigs(t), RunsDir: t.TempDir(), Load: config.Load,
		Run: func(context.Context, Job, io.Writer) error { ran.Add(1); return nil }}
	s := serve(t, Options{Launch: l})
	body := `{"config":"demo.yaml","fields":{}}`
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"new/launch", strings.NewReader(body))
	req.Header.Set("Content-Type", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain launch: %d", resp.StatusCode)
	}
	for _, hdr := range [][]string{
		{"Origin", "http://evil.example"},
		{"Sec-Fetch-Site", "cross-site"},
		{"Host", "rebound.example"},
	} {
		if code, out := postJSON(t, s.URL()+"new/launch", body, hdr...); code != http.StatusForbidden {
			t.Errorf("launch with %s %s: %d %s, want 403", hdr[0], hdr[1], code, out)
		}
	}
	if ran.Load() != 0 {
		t.Errorf("a refused launch ran %d jobs", ran.Load())
	}
}

// TestLaunchBindNeedsTLSAndToken: launching beyond loopback is refused
// without TLS and a token, --ui-insecure notwithstanding.
func TestLaunchBindNeedsTLSAndToken(t *testing.T) {
	l := &Launch{ConfigsDir: t.TempDir(), RunsDir: t.TempDir(), Load: config.Load}
	for _, c := range []struct {
		token    string
		insecure bool
	}{{"", false}, {"", true}, {"tok", false}} {
		_, err := Serve(t.Context(), Options{Addr: "0.0.0.0:0", Token: c.token, Insecure: c.insecure, Launch: l})
		if err == nil || !strings.Contains(err.Error(), "TLS") {
			t.Errorf("token %q insecure %v: %v, want a refusal naming TLS", c.token, c.insecure, err)
		}
	}
	if err := CheckLaunchBind("0.0.0.0:8080", "tok", true); err != nil {
		t.Errorf("TLS and a token: %v", err)
	}
	if err := CheckLaunchBind("127.0.0.1:8080", "", false); err != nil {
		t.Errorf("loopback: %v", err)
	}
}

// TestLaunchStopResume: a launched job runs in the background, is served
// as a run, stops on request (the run's STOP file) and resumes on its
// directory with the same settings; launch.json records the job.
func TestLaunchStopResume(t *testing.T) {
	runs := t.TempDir()
	var attempts atomic.Int32
	l := &Launch{ConfigsDir: launchConfigs(t), RunsDir: runs, Load: config.Load,
		Run: func(ctx context.Context, j Job, out io.Writer) error {
			attempts.Add(1)
			io.WriteString(out, "attempt with "+strings.Join(j.Sets, " ")+"\n")
			// Stand-in for a run's phase boundaries: the STOP file is
			// checked every few milliseconds.
			for i := 0; i < 100; i++ {
				if _, err := os.Stat(filepath.Join(j.Out, "STOP")); err == nil {
					os.Remove(filepath.Join(j.Out, "STOP"))
					return errors.Join(Stopped, errors.New("STOP file found"))
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(20 * time.Millisecond):
				}
			}
			return os.WriteFile(filepath.Join(j.Out, "summary.json"), []byte("{}"), 0o644)
		}}
	s := serve(t, Options{Launch: l})
	code, out := postJSON(t, s.URL()+"new/launch", `{"config":"demo.yaml","fields":{"num_epochs":"2"},"name":"r1"}`)
	if code != 200 {
		t.Fatalf("launch: %d %s", code, out)
	}
	var jv JobView
	if err := json.Unmarshal([]byte(out), &jv); err != nil {
		t.Fatal(err)
	}
	if jv.Href != "/run/r1/" || jv.State != "running" || jv.Dir != filepath.Join(runs, "r1") {
		t.Errorf("launched %+v", jv)
	}
	if code, out := postJSON(t, s.URL()+"new/launch", `{"config":"demo.yaml","fields":{},"name":"r1"}`); code != http.StatusConflict || !strings.Contains(out, "exists") {
		t.Errorf("second launch on r1: %d %s", code, out)
	}
	var rec Job
	if data, err := os.ReadFile(filepath.Join(runs, "r1", LaunchFile)); err != nil || json.Unmarshal(data, &rec) != nil || strings.Join(rec.Sets, " ") != "train.num_epochs=2" {
		t.Errorf("launch.json: %+v %v", rec, err)
	}
	state := func() string {
		_, body := get(t, s.URL()+"new/jobs")
		var v struct{ Jobs []JobView }
		_ = json.Unmarshal([]byte(body), &v)
		if len(v.Jobs) != 1 {
			t.Fatalf("jobs: %s", body)
		}
		return v.Jobs[0].State
	}
	if code, out := postJSON(t, s.URL()+"new/jobs/r1/stop", `{}`); code != 200 {
		t.Fatalf("stop: %d %s", code, out)
	}
	waitState := func(want string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); state() != want; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("state %s, want %s", state(), want)
			}
		}
	}
	waitState("stopped")
	if code, _ := postJSON(t, s.URL()+"new/jobs/r1/stop", `{}`); code != http.StatusConflict {
		t.Errorf("stop of a stopped job: %d, want 409", code)
	}
	if code, out := postJSON(t, s.URL()+"new/jobs/r1/resume", `{}`); code != 200 {
		t.Fatalf("resume: %d %s", code, out)
	}
	waitState("finished")
	if attempts.Load() != 2 {
		t.Errorf("%d attempts, want 2", attempts.Load())
	}
	if code, _ := postJSON(t, s.URL()+"new/jobs/r1/resume", `{}`); code != http.StatusConflict {
		t.Errorf("resume of a finished job: %d, want 409", code)
	}
	if log, _ := os.ReadFile(filepath.Join(runs, "r1", LaunchLog)); strings.Count(string(log), "attempt with train.num_epochs=2") != 2 {
		t.Errorf("launch.log:\n%s", log)
	}
	if resp, _ := get(t, s.URL()+"run/r1/"); resp.StatusCode != 200 {
		t.Errorf("the launched run is not served: %d", resp.StatusCode)
	}
}

// TestLaunchAdoptedByALaterServer: a run launched by one dashboard and
// stopped when it closed is listed by the next dashboard serving its
// directory, and resumes there with the recorded settings.
func TestLaunchAdoptedByALaterServer(t *testing.T) {
	runs := t.TempDir()
	started := make(chan Job, 2)
	l := &Launch{ConfigsDir: launchConfigs(t), RunsDir: runs, Load: config.Load,
		Run: func(ctx context.Context, j Job, out io.Writer) error {
			started <- j
			if _, err := os.Stat(filepath.Join(j.Out, "resumable")); err == nil {
				return os.WriteFile(filepath.Join(j.Out, "summary.json"), []byte("{}"), 0o644)
			}
			<-ctx.Done()
			return ctx.Err()
		}}
	ctx, cancel := context.WithCancel(t.Context())
	s1, err := Serve(ctx, Options{Addr: "127.0.0.1:0", Poll: 50 * time.Millisecond, Launch: l})
	if err != nil {
		t.Fatal(err)
	}
	if code, out := postJSON(t, s1.URL()+"new/launch", `{"config":"demo.yaml","fields":{"learning_rate":"2"},"name":"r"}`); code != 200 {
		t.Fatalf("launch: %d %s", code, out)
	}
	first := <-started
	cancel()
	s1.Close() // stops the run and waits for it
	if err := os.WriteFile(filepath.Join(runs, "r", "resumable"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	s2 := serve(t, Options{Launch: l}, filepath.Join(runs, "r"))
	_, body := get(t, s2.URL()+"new/jobs")
	if !strings.Contains(body, `"state":"stopped"`) || !strings.Contains(body, "optimizer.learning_rate=2") {
		t.Fatalf("the later server lists %s", body)
	}
	if code, out := postJSON(t, s2.URL()+"new/jobs/r/resume", `{}`); code != 200 {
		t.Fatalf("resume: %d %s", code, out)
	}
	again := <-started
	if again.Out != first.Out || strings.Join(again.Sets, " ") != strings.Join(first.Sets, " ") || again.Config != first.Config {
		t.Errorf("resumed as %+v, launched as %+v", again, first)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, body := get(t, s2.URL()+"new/jobs"); strings.Contains(body, `"state":"finished"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the resumed run did not finish")
		}
	}
}

// TestLaunchServedOverTLS: with TLS the dashboard answers HTTPS only.
func TestLaunchServedOverTLS(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	l := &Launch{ConfigsDir: launchConfigs(t), RunsDir: t.TempDir(), Load: config.Load}
	s := serve(t, Options{Launch: l, TLS: &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}}}})
	if !strings.HasPrefix(s.URL(), "https://") {
		t.Fatalf("URL %s", s.URL())
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer c.CloseIdleConnections()
	resp, err := c.Get(s.URL() + "new/configs")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("HTTPS: %d", resp.StatusCode)
	}
	if resp, err := http.Get("http://" + s.Addr() + "/new/configs"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Error("plain HTTP was served")
		}
	}
}

// TestRunPageStopWithLaunchOnly: with --ui-launch and no token the run
// page's stop is on, for same-origin pages on a loopback name only.
func TestRunPageStopWithLaunchOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	newFakeRun(t, dir, 3)
	l := &Launch{ConfigsDir: t.TempDir(), RunsDir: t.TempDir(), Load: config.Load}
	s := serve(t, Options{Launch: l}, dir)
	for _, hdr := range [][]string{{"Host", "rebound.example"}, {"Sec-Fetch-Site", "cross-site"}, {"Origin", "http://evil.example"}} {
		if code, out := postJSON(t, s.URL()+"run/r/stop", `{}`, hdr...); code != http.StatusForbidden {
			t.Errorf("stop with %s %s: %d %s, want 403", hdr[0], hdr[1], code, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "STOP")); err == nil {
		t.Fatal("a refused stop wrote the STOP file")
	}
	if code, out := postJSON(t, s.URL()+"run/r/stop", `{}`, "Sec-Fetch-Site", "same-origin"); code != 200 {
		t.Fatalf("stop: %d %s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "STOP")); err != nil {
		t.Errorf("no STOP file after the stop: %v", err)
	}
	// Without launching (and without a token) the stop stays off.
	dir2 := filepath.Join(t.TempDir(), "r2")
	newFakeRun(t, dir2, 3)
	s2 := serve(t, Options{}, dir2)
	if code, _ := postJSON(t, s2.URL()+"run/r2/stop", `{}`); code != http.StatusForbidden {
		t.Errorf("stop without launching or a token: %d, want 403", code)
	}
}
