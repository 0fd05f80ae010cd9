package ui

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func serve(t *testing.T, o Options, dirs ...string) *Server {
	t.Helper()
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.Poll == 0 {
		o.Poll = 50 * time.Millisecond
	}
	s, err := Serve(t.Context(), o, dirs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func get(t *testing.T, url string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// sseViews reads "view" events from an event stream.
func sseViews(t *testing.T, ctx context.Context, url string) <-chan RunView {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	out := make(chan RunView, 16)
	go func() {
		defer resp.Body.Close()
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		event := ""
		var v RunView
		for sc.Scan() {
			line := sc.Text()
			data := []byte(strings.TrimPrefix(line, "data: "))
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && event == "base":
				if json.Unmarshal(data, &v.RunBase) == nil {
					out <- v
				}
			case strings.HasPrefix(line, "data: ") && event == "live":
				v.RunLive = RunLive{}
				if json.Unmarshal(data, &v.RunLive) == nil {
					out <- v
				}
			}
		}
	}()
	return out
}

func TestEventsFollowTheRunDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "myrun")
	r := newFakeRun(t, dir, 5)
	r.step()
	s := serve(t, Options{}, dir)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	views := sseViews(t, ctx, "http://"+s.Addr()+"/run/myrun/events")
	<-views // base
	first := <-views
	if first.LastStep != 1 || len(first.Selection.X) != 2 {
		t.Fatalf("first view: step %d, %d points", first.LastStep, len(first.Selection.X))
	}
	r.step()
	r.step()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case v, ok := <-views:
			if !ok {
				t.Fatal("stream ended")
			}
			if v.LastStep == 3 {
				if len(v.Selection.X) != 4 {
					t.Fatalf("step 3 view has %d selection points", len(v.Selection.X))
				}
				return
			}
		case <-deadline:
			t.Fatal("no view for step 3 within 10s")
		}
	}
}

func TestPagesAndFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "myrun")
	r := newFakeRun(t, dir, 3)
	r.skill = "# Skill <script>alert(1)</script>\n"
	r.write("skills/skill_v0000.md", r.skill)
	r.step()
	s := serve(t, Options{}, dir)
	base := "http://" + s.Addr()

	resp, _ := get(t, base+"/")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/run/myrun/" {
		t.Errorf("/ with one run: %d → %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, body := get(t, base+"/run/myrun/")
	if resp.StatusCode != 200 || !strings.Contains(body, `data-page="run"`) {
		t.Fatalf("run page: %d %s", resp.StatusCode, body)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("CSP = %q", csp)
	}
	for _, a := range []string{"/assets/uPlot.iife.min.js", "/assets/ui.js", "/assets/ui.css", "/assets/uPlot.min.css"} {
		if resp, body := get(t, base+a); resp.StatusCode != 200 || len(body) < 100 {
			t.Errorf("%s: %d, %d bytes", a, resp.StatusCode, len(body))
		}
	}
	// The skill is served as text, never HTML.
	resp, body = get(t, base+"/run/myrun/skill/best?download=1")
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") || !strings.Contains(body, "<script>") {
		t.Errorf("skill: %q %q", ct, body)
	}
	if cd := resp.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment") {
		t.Errorf("download disposition %q", cd)
	}
	resp, body = get(t, base+"/run/myrun/step/1")
	var d StepDetail
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &d) != nil {
		t.Fatalf("step 1: %d %s", resp.StatusCode, body)
	}
	if len(d.Merged) != 2 || len(d.Ranked) != 1 || len(d.Apply) != 1 || d.PayloadKey != "edits" {
		t.Errorf("step detail %+v", d)
	}
	var added []string
	for _, l := range d.Diff {
		if l.Op == "+" {
			added = append(added, l.Text)
		}
	}
	if len(added) != 1 || added[0] != "check the units" {
		t.Errorf("diff adds %q", added)
	}
	if resp, _ := get(t, base+"/run/nope/api"); resp.StatusCode != 404 {
		t.Errorf("unknown run: %d", resp.StatusCode)
	}
	if resp, _ := get(t, base+"/run/myrun/step/99"); resp.StatusCode != 404 {
		t.Errorf("missing step: %d", resp.StatusCode)
	}
}

func TestStopNeedsToken(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "myrun")
	newFakeRun(t, dir, 3)
	post := func(url string, hdr ...string) int {
		req, _ := http.NewRequest(http.MethodPost, url, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	open := serve(t, Options{}, dir)
	if code := post("http://" + open.Addr() + "/run/myrun/stop"); code != http.StatusForbidden {
		t.Errorf("stop without a configured token: %d, want 403", code)
	}
	if _, err := os.Stat(filepath.Join(dir, "STOP")); err == nil {
		t.Fatal("STOP written without a token")
	}

	s := serve(t, Options{Token: "tok-123"}, dir)
	base := "http://" + s.Addr()
	if resp, body := get(t, base+"/run/myrun/api"); resp.StatusCode != http.StatusUnauthorized || strings.Contains(body, "tok-123") {
		t.Errorf("api without token: %d %q", resp.StatusCode, body)
	}
	if resp, _ := get(t, base+"/run/myrun/api?token=wrong"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", resp.StatusCode)
	}
	resp, _ := get(t, base+"/run/myrun/?token=tok-123")
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 || !resp.Cookies()[0].HttpOnly {
		t.Fatalf("token visit: %d cookies %v", resp.StatusCode, resp.Cookies())
	}
	if resp, _ := get(t, base+"/run/myrun/api", "Cookie", "skillfleet_ui=tok-123"); resp.StatusCode != 200 {
		t.Errorf("api with cookie: %d", resp.StatusCode)
	}
	if code := post(base+"/run/myrun/stop", "Authorization", "Bearer tok-123", "Origin", "http://evil.example"); code != http.StatusForbidden {
		t.Errorf("cross-origin stop: %d", code)
	}
	if code := post(base+"/run/myrun/stop", "Authorization", "Bearer tok-123"); code != 200 {
		t.Fatalf("stop with token: %d", code)
	}
	if _, err := os.Stat(filepath.Join(dir, "STOP")); err != nil {
		t.Fatalf("STOP not written: %v", err)
	}
}

func TestServeRefusesOpenBind(t *testing.T) {
	_, err := Serve(t.Context(), Options{Addr: "0.0.0.0:0"}, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), TokenEnv) {
		t.Fatalf("err = %v", err)
	}
}

func TestCampaign(t *testing.T) {
	camp := filepath.Join(t.TempDir(), "camp")
	a := newFakeRun(t, filepath.Join(camp, "cells", "a"), 2)
	a.step()
	a.step()
	a.finish()
	b := newFakeRun(t, filepath.Join(camp, "cells", "b"), 4)
	b.step()
	if err := os.WriteFile(filepath.Join(camp, CampaignFile), []byte(`{"name":"grid","cells":[
		{"name":"a","state":"done","dir":"cells/a"},{"name":"b","state":"running","dir":"cells/b"},{"name":"c","state":"queued","dir":"cells/c","seed_skill":0.2,"best_skill":0.35,"no_skill":0.1,"tokens":7}],"extra":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	s := serve(t, Options{}, camp)
	base := "http://" + s.Addr()
	resp, body := get(t, base+"/campaign/camp/api")
	var v CampaignView
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &v) != nil {
		t.Fatalf("campaign api: %d %s", resp.StatusCode, body)
	}
	if v.Name != "grid" || len(v.Cells) != 3 {
		t.Fatalf("campaign %+v", v)
	}
	ca, cb, cc := v.Cells[0], v.Cells[1], v.Cells[2]
	if ca.State != "done" || ca.TestDeltaBest == nil || *ca.TestDeltaBest != 0.3 || ca.USD == nil {
		t.Errorf("cell a %+v", ca)
	}
	if cb.Step != 1 || cb.TotalSteps != 4 || cb.ETASeconds == nil || cb.Link != "/run/camp~b/" {
		t.Errorf("cell b %+v", cb)
	}
	if cc.State != "queued" || cc.Link != "" || cc.Tokens != 7 || cc.TestDeltaNoSkill == nil || math.Abs(*cc.TestDeltaNoSkill-0.25) > 1e-9 {
		t.Errorf("cell c %+v", cc)
	}
	// A cell's run page works through the campaign.
	if resp, body := get(t, base+cb.Link+"api"); resp.StatusCode != 200 || !strings.Contains(body, `"last_step":1`) {
		t.Errorf("cell run api: %d %.200s", resp.StatusCode, body)
	}
	// A broken campaign.json is reported and the run dirs inside are listed.
	if err := os.WriteFile(filepath.Join(camp, CampaignFile), []byte(`{"cells": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	_, body = get(t, base+"/campaign/camp/api")
	if !strings.Contains(body, "campaign.json") {
		t.Errorf("broken campaign.json not noted: %.300s", body)
	}
}

func TestFleet(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "myrun")
	r := newFakeRun(t, dir, 2)
	r.step()
	r.finish()
	calls := 0
	s := serve(t, Options{Fleet: func(ctx context.Context) (*Fleet, error) {
		calls++
		return &Fleet{Workers: []FleetWorker{{ID: "w1", Host: "<b>h</b>", Concurrency: 24, InFlight: 3}}, Pending: 5,
			Queues: []QueueDepth{{Class: "crit", Waiting: 7, InDelivery: 3}}}, nil
	}}, dir)
	resp, body := get(t, "http://"+s.Addr()+"/fleet/api")
	var v FleetView
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &v) != nil {
		t.Fatalf("fleet api: %d %s", resp.StatusCode, body)
	}
	if v.Live == nil || len(v.Live.Workers) != 1 || v.Live.Workers[0].InFlight != 3 || v.Live.Queues[0].Waiting != 7 || calls == 0 {
		t.Errorf("live fleet %+v", v.Live)
	}
	if len(v.Runs) != 1 || v.Runs[0].Name != "myrun" {
		t.Fatalf("runs %+v", v.Runs)
	}
	var merge *FailureRow
	for i, f := range v.Runs[0].Failures {
		if f.Stage == "merge" {
			merge = &v.Runs[0].Failures[i]
		}
	}
	if merge == nil || merge.Retries != 2 || merge.RateLimited != 1 || len(merge.Causes) != 2 {
		t.Errorf("merge failures %+v", merge)
	}

	// Without a fleet function the page says there is none.
	s2 := serve(t, Options{}, dir)
	_, body = get(t, "http://"+s2.Addr()+"/fleet/api")
	if strings.Contains(body, `"live"`) {
		t.Errorf("fleet without a coordinator: %s", body)
	}
}

// Before any step is accepted the run has no best_skill.md: the best skill
// is then the seed, served (not a 404 the page would count as a failed
// request).
func TestBestSkillIsTheSeedUntilOneIsAccepted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "myrun")
	r := newFakeRun(t, dir, 3)
	s := serve(t, Options{}, dir)
	base := "http://" + s.Addr()
	resp, body := get(t, base+"/run/myrun/skill/best")
	if resp.StatusCode != 200 || body != r.skill {
		t.Fatalf("best before any step: %d %q, want 200 and the seed %q", resp.StatusCode, body, r.skill)
	}
	r.step()
	if _, body := get(t, base+"/run/myrun/skill/best"); body != r.skill+r.edit+"\n" {
		t.Fatalf("best after an accepted step: %q", body)
	}
	if err := os.RemoveAll(filepath.Join(dir, "skills")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "best_skill.md")); err != nil {
		t.Fatal(err)
	}
	if resp, _ := get(t, base+"/run/myrun/skill/best"); resp.StatusCode != 404 {
		t.Fatalf("no skill at all: %d, want 404", resp.StatusCode)
	}
}
