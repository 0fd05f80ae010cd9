package ui

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/pkg/pricing"
	"github.com/skillfleet/skillfleet/pkg/usage"
)

func TestLoadRunLiveThenFinished(t *testing.T) {
	dir := t.TempDir()
	r := newFakeRun(t, dir, 4)
	r.step()
	r.step()
	v, err := LoadRun(dir, pricing.Default())
	if err != nil {
		t.Fatal(err)
	}
	if v.Finished || v.LastStep != 2 || v.TotalSteps != 4 {
		t.Fatalf("finished=%v last=%d total=%d, want unfinished 2/4", v.Finished, v.LastStep, v.TotalSteps)
	}
	if got := v.Selection.X; len(got) != 3 || got[0] != 0 || got[2] != 2 {
		t.Errorf("selection x = %v, want [0 1 2]", got)
	}
	if v.ETASeconds == nil || *v.ETASeconds != 4 {
		t.Errorf("eta = %v, want 2 steps × 2 s", v.ETASeconds)
	}
	if len(v.Steps) != 2 || v.Steps[0].Merged != 2 || v.Steps[0].Ranked != 1 || v.Steps[0].Applied != 1 {
		t.Errorf("steps = %+v", v.Steps)
	}
	// Step 2 was rejected: its ranked edit is in the buffer.
	if len(v.Rejected) != 1 || v.Rejected[0].Step != 2 || !strings.Contains(string(v.Rejected[0].Edits[0]), "check the units") {
		t.Errorf("rejected buffer = %+v", v.Rejected)
	}
	if got := v.SpendOver.Tokens["rollout"]; len(got) != 2 || got[0] != 1100 || got[1] != 1100+2100 {
		t.Errorf("cumulative rollout tokens = %v, want [1100 3200]", got)
	}
	if v.SpendOver.USD != nil || v.Spend.Source != "step records" {
		t.Errorf("live spend without models: usd=%v source=%s", v.SpendOver.USD, v.Spend.Source)
	}
	var merge *FailureRow
	for i := range v.Failures {
		if v.Failures[i].Stage == "merge" {
			merge = &v.Failures[i]
		}
	}
	if merge == nil || merge.Retries != 2 {
		t.Errorf("failures = %+v, want merge retries 2", v.Failures)
	}

	r.finish()
	v, err = LoadRun(dir, pricing.Default())
	if err != nil {
		t.Fatal(err)
	}
	if !v.Finished || v.Test["best"].Hard != 0.5 || v.ETASeconds != nil {
		t.Errorf("finished=%v test=%v eta=%v", v.Finished, v.Test, v.ETASeconds)
	}
	if len(v.Spend.Rows) != 2 || v.Spend.TotalUSD == nil || *v.Spend.TotalUSD <= 0 {
		t.Errorf("spend rows %+v total %v, want two priced rows", v.Spend.Rows, v.Spend.TotalUSD)
	}
	for _, f := range v.Failures {
		if f.Stage == "merge" && fmt.Sprint(f.Causes) != "[{rate_limited 1} {stall 2}]" {
			t.Errorf("merge failure causes %v, want rate_limited 1, stall 2", f.Causes)
		}
	}
	if len(v.SpendOver.USD) != 2 || v.SpendOver.USD[1] == nil || *v.SpendOver.USD[1] <= *v.SpendOver.USD[0] {
		t.Errorf("cumulative $ = %v, want two rising values", v.SpendOver.USD)
	}
	if v.Promoted != nil {
		t.Errorf("promoted = %+v for a run that ended on its best", v.Promoted)
	}
}

// TestLoadRunFinalPromotion: a run whose final skill was promoted over its
// best has the promotion in its view, after the last step, from the last
// current score to the summary's best, and the header's best is that one.
func TestLoadRunFinalPromotion(t *testing.T) {
	dir := t.TempDir()
	r := newFakeRun(t, dir, 3)
	for range 3 {
		r.step()
	}
	r.finishPromoted(0.9)
	v, err := LoadRun(dir, pricing.Default())
	if err != nil {
		t.Fatal(err)
	}
	want := Promotion{X: 3.5, Step: 3, Score: 0.9, From: r.score(3)}
	if v.Promoted == nil || *v.Promoted != want {
		t.Fatalf("promoted = %+v, want %+v", v.Promoted, want)
	}
	if v.Best != 0.9 || v.BestStep != 3 {
		t.Errorf("best %v at step %d, want the promoted 0.9 at 3", v.Best, v.BestStep)
	}
	if n := len(v.Selection.X); n != 4 || v.Selection.X[n-1] != 3 {
		t.Errorf("selection x = %v: the promotion is not a step", v.Selection.X)
	}
}

func TestLoadRunNotARunDir(t *testing.T) {
	_, err := LoadRun(t.TempDir(), nil)
	if err == nil || !strings.Contains(err.Error(), "events.jsonl") {
		t.Fatalf("err = %v, want one naming events.jsonl", err)
	}
}

func TestDiff(t *testing.T) {
	got := Diff("a\nb\nc\nd\n", "a\nc\nx\nd\n")
	var b strings.Builder
	for _, l := range got {
		b.WriteString(l.Op + l.Text + ",")
	}
	if b.String() != " a,-b, c,+x, d," {
		t.Errorf("diff = %s", b.String())
	}
	if d := Diff("", "new\n"); len(d) != 1 || d[0].Op != "+" {
		t.Errorf("diff from empty = %v", d)
	}
}

func TestCheckBind(t *testing.T) {
	for _, c := range []struct {
		addr, token string
		insecure    bool
		ok          bool
	}{
		{"127.0.0.1:0", "", false, true},
		{"localhost:8080", "", false, true},
		{"[::1]:8080", "", false, true},
		{"0.0.0.0:8080", "", false, false},
		{":8080", "", false, false},
		{"192.168.1.5:8080", "", false, false},
		{"0.0.0.0:8080", "s3cret", false, true},
		{"0.0.0.0:8080", "", true, true},
		{"nonsense", "", false, false},
	} {
		err := CheckBind(c.addr, c.token, c.insecure)
		if (err == nil) != c.ok {
			t.Errorf("CheckBind(%q, token=%v, insecure=%v) = %v, want ok=%v", c.addr, c.token != "", c.insecure, err, c.ok)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("message is not one line: %q", err)
		}
	}
}

// TestLiveSpendFromProgressFile: while a run is live, spend per stage ×
// role × model comes from progress.json (written by ProgressFile), and the
// spend curve is priced with the models it names.
func TestLiveSpendFromProgressFile(t *testing.T) {
	dir := t.TempDir()
	r := newFakeRun(t, dir, 4)
	r.step()
	pf := NewProgressFile(dir, 10*time.Millisecond)
	pf.SetSpend(func() any {
		return []ProgressRow{
			NewProgressRow("rollout", "target", "gpt-4o-mini", usage.Totals{Calls: 8, Tasks: 8, Input: 1000, Output: 100}),
			NewProgressRow("merge", "optimizer", "gpt-4o-mini", usage.Totals{Calls: 1, Input: 500, Output: 50, Retries: 1, Causes: usage.Causes{Stall: 1}}),
		}
	})
	pf.Update(Progress{Head: "epoch 1/1 step 2/4", Epoch: 1, Epochs: 1, Step: 2, Steps: 4, Stage: "rollout", Done: 3, Total: 8})
	if err := pf.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, ProgressFileName))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), `"failed_calls"`) {
		t.Errorf("progress.json keeps zero counters: %s", data)
	}
	v, err := LoadRun(dir, pricing.Default())
	if err != nil {
		t.Fatal(err)
	}
	if !v.Live || v.Progress == nil || v.Progress.Done != 3 || v.Progress.Spend != nil {
		t.Fatalf("live=%v progress=%+v", v.Live, v.Progress)
	}
	if v.Spend.Source != "progress.json" || len(v.Spend.Rows) != 2 || v.Spend.TotalUSD == nil || *v.Spend.TotalUSD <= 0 {
		t.Errorf("spend %+v", v.Spend)
	}
	if len(v.SpendOver.USD) != 1 || v.SpendOver.USD[0] == nil || *v.SpendOver.USD[0] <= 0 {
		t.Errorf("spend curve $ %v, want the step priced", v.SpendOver.USD)
	}
	for _, f := range v.Failures {
		if f.Stage == "merge" && (f.Retries != 1 || len(f.Causes) != 1 || f.Causes[0].Cause != "stall") {
			t.Errorf("merge failures %+v", f)
		}
	}
}

// TestLoaderReusesAndExpires: a poll that finds no file changed returns
// the last view without rebuilding it; a live run whose progress.json
// stops being written turns not live once liveWindow has passed, with no
// file changing; a new progress.json makes it live again.
func TestLoaderReusesAndExpires(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := newFakeRun(t, dir, 10)
	r.step()
	now := time.Now()
	pf := NewProgressFile(dir, time.Hour)
	pf.Update(Progress{Head: "epoch 1/1 step 2/10", Step: 2, Steps: 10, Stage: "rollout", Total: 8})
	if err := pf.Close(); err != nil {
		t.Fatal(err)
	}
	l := newRunLoader(dir, nil)
	l.now = func() time.Time { return now }
	v1, base, changed, err := l.load()
	if err != nil || !base || !changed || !v1.Live {
		t.Fatalf("first load: live %t, base changed %t, changed %t, err %v; want a live view, all new", v1 != nil && v1.Live, base, changed, err)
	}
	v2, base, changed, err := l.load()
	if err != nil || base || changed || v2 != v1 {
		t.Fatalf("load with no file changed: base changed %t, changed %t, same view %t, err %v; want the last view", base, changed, v2 == v1, err)
	}
	now = now.Add(liveWindow + time.Second)
	v3, base, changed, err := l.load()
	if err != nil || base || !changed || v3.Live {
		t.Fatalf("load after progress.json went stale: live %t, base changed %t, changed %t, err %v; want not live, a live-part change", v3.Live, base, changed, err)
	}
	if len(v3.Notes) == 0 || !strings.Contains(v3.Notes[len(v3.Notes)-1], "not running") {
		t.Errorf("stale run's notes %q: want one saying it is not running", v3.Notes)
	}
	if _, _, changed, _ := l.load(); changed {
		t.Error("a stale run with no file changed: changed again")
	}
	pf = NewProgressFile(dir, time.Hour)
	pf.Update(Progress{Head: "epoch 1/1 step 2/10", Step: 2, Steps: 10, Stage: "gate", Total: 8})
	if err := pf.Close(); err != nil {
		t.Fatal(err)
	}
	now = time.Now()
	if v4, _, changed, err := l.load(); err != nil || !changed || !v4.Live {
		t.Errorf("after progress.json was written again: live %t, changed %t, err %v; want live", v4 != nil && v4.Live, changed, err)
	}
}

// TestProgressRewrittenInPlace: progress.json is rewritten in place, a
// shorter record truncating the longer one before it; a reader that
// catches it half-written keeps the last good record and takes the next
// one.
func TestProgressRewrittenInPlace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	newFakeRun(t, dir, 10)
	path := filepath.Join(dir, ProgressFileName)
	pf := NewProgressFile(dir, time.Hour)
	pf.Update(Progress{Head: "a long head naming the baseline evaluation of the run", Stage: "baseline", Total: 200})
	pf.flush()
	long, _ := os.ReadFile(path)
	pf.Update(Progress{Head: "short", Stage: "gate", Done: 3, Total: 8})
	pf.flush()
	short, _ := os.ReadFile(path)
	if len(short) >= len(long) {
		t.Fatalf("the shorter record left %d bytes, the longer had %d: not truncated", len(short), len(long))
	}
	if p, ok := ReadProgress(dir); !ok || p.Head != "short" || p.Done != 3 {
		t.Fatalf("ReadProgress after the shorter record = %+v, %t", p, ok)
	}
	l := newRunLoader(dir, nil)
	if v, _, _, err := l.load(); err != nil || v.Progress == nil || v.Progress.Head != "short" {
		t.Fatalf("load: %v, %v", v, err)
	}
	// Half a record, as a reader may catch it mid-write.
	if err := os.WriteFile(path, long[:len(long)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	if v, _, _, err := l.load(); err != nil || v.Progress == nil || v.Progress.Head != "short" {
		t.Fatalf("load of a half-written progress.json: progress %+v, err %v; want the last good record", v.Progress, err)
	}
	pf.Update(Progress{Head: "next", Stage: "gate", Done: 4, Total: 8})
	pf.flush()
	if err := pf.Close(); err != nil {
		t.Fatal(err)
	}
	if v, _, changed, err := l.load(); err != nil || !changed || v.Progress == nil || v.Progress.Head != "next" {
		t.Fatalf("load after the next write: progress %+v, changed %t, err %v", v.Progress, changed, err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if v, _, _, err := l.load(); err != nil || v.Progress != nil {
		t.Fatalf("load with progress.json gone: progress %+v, err %v; want none", v.Progress, err)
	}
}
