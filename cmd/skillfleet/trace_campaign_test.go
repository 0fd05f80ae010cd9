package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/skillfleet/skillfleet/pkg/telemetry"
	usagepkg "github.com/skillfleet/skillfleet/pkg/usage"
)

// stageTokens reads a run's tokens.json by stage.
func stageTokens(t *testing.T, path string) map[string]usagepkg.Totals {
	t.Helper()
	var f struct {
		ByStage map[string]usagepkg.Totals `json:"by_stage"`
	}
	if err := json.Unmarshal(readFile(t, path), &f); err != nil {
		t.Fatal(err)
	}
	return f.ByStage
}

// inOut is a stage's input and output tokens.
type inOut struct{ In, Out int64 }

// TestCampaignTraceCoversEveryCell runs a two-cell all-in-one campaign
// (each cell trains, then measures the no-skill column) in-process with an
// in-memory span exporter: one campaign span linked both ways with one
// cell span per cell, each cell span the root of one trace that holds
// every span of the cell (training, no-skill evaluation, the workers'
// task and model-call spans, the endpoint's record spans), no span outside
// them, and per cell and stage the model-call spans' tokens equal the
// cell's tokens.json plus its no-skill run's.
func TestCampaignTraceCoversEveryCell(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a campaign")
	}
	exp := tracetest.NewInMemoryExporter()
	telemetryHook = func(o *telemetry.Options) { o.SpanExporter = keepSpans{exp} }
	defer func() { telemetryHook = nil }()
	root := repoRoot(t)
	spec := filepath.Join(t.TempDir(), "campaign.yaml")
	body := "name: traced\nmax_active_runs: 2\nno_skill: true\ncells:\n" +
		"  - name: a\n    config: " + filepath.Join(root, "configs", "demo.yaml") + "\n    set: {train.seed: 1}\n" +
		"  - name: b\n    config: " + filepath.Join(root, "configs", "demo.yaml") + "\n    set: {train.seed: 2}\n"
	if err := os.WriteFile(spec, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "camp")
	var stdout, stderr strings.Builder
	code := run([]string{"campaign", "--config", spec, "--out", out, "--workers", "2",
		"--set", "env.skill_init=" + filepath.Join(root, "configs", "skills", "sim_demo_seed.md"),
		"--set", "evaluation.early_stop=false"}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("campaign exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	checkCampaignTrace(t, exp.GetSpans(), out, []string{"a", "b"})
}

// checkCampaignTrace checks a campaign's spans against its cells' tokens.json.
func checkCampaignTrace(t *testing.T, spans tracetest.SpanStubs, out string, cells []string) {
	t.Helper()
	byID := map[trace.SpanID]tracetest.SpanStub{}
	var campaign []tracetest.SpanStub
	cellOf := map[trace.TraceID]string{}
	cellSpans := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID()] = s
		switch s.Name {
		case telemetry.SpanCampaign:
			campaign = append(campaign, s)
		case telemetry.SpanCell:
			v, _ := attrOf(s, telemetry.KeyCell)
			if _, dup := cellSpans[v.AsString()]; dup {
				t.Errorf("cell %s has two cell spans", v.AsString())
			}
			cellSpans[v.AsString()] = s
			cellOf[s.SpanContext.TraceID()] = v.AsString()
			if s.Parent.IsValid() {
				t.Errorf("cell span of %s has a parent: its trace must be its own", v.AsString())
			}
		}
	}
	if len(campaign) != 1 {
		t.Fatalf("%d campaign spans, want 1 (of %d spans)", len(campaign), len(spans))
	}
	camp := campaign[0]
	links := map[trace.SpanID]bool{}
	for _, l := range camp.Links {
		links[l.SpanContext.SpanID()] = true
	}
	for _, c := range cells {
		s, ok := cellSpans[c]
		if !ok {
			t.Fatalf("no cell span for cell %s", c)
		}
		if !links[s.SpanContext.SpanID()] {
			t.Errorf("the campaign span does not link cell %s", c)
		}
		if len(s.Links) != 1 || s.Links[0].SpanContext.SpanID() != camp.SpanContext.SpanID() {
			t.Errorf("cell %s's span links %v, want the campaign span", c, s.Links)
		}
	}
	reaches := func(s tracetest.SpanStub, root trace.SpanID) bool {
		for cur, n := s, 0; n < 64; n++ {
			if cur.SpanContext.SpanID() == root {
				return true
			}
			p, ok := byID[cur.Parent.SpanID()]
			if !ok {
				return false
			}
			cur = p
		}
		return false
	}
	tokens := map[string]map[string]inOut{}
	kinds := map[string]map[string]int{}
	for _, s := range spans {
		if s.Name == telemetry.SpanCampaign {
			continue
		}
		c, ok := cellOf[s.SpanContext.TraceID()]
		if !ok {
			t.Errorf("span %q (%s) is in no cell's trace", s.Name, s.SpanContext.TraceID())
			continue
		}
		if !reaches(s, cellSpans[c].SpanContext.SpanID()) {
			t.Errorf("span %q of cell %s is not connected to its cell span", s.Name, c)
		}
		if kinds[c] == nil {
			kinds[c], tokens[c] = map[string]int{}, map[string]inOut{}
		}
		kinds[c][s.Name]++
		if strings.HasPrefix(s.Name, "chat") || strings.HasPrefix(s.Name, telemetry.SpanTask) || s.Name == telemetry.SpanRun || s.Name == telemetry.SpanEval {
			// The docs' search for a cell's calls names the cell on the
			// span itself (Jaeger matches tags span by span).
			if v, _ := attrOf(s, telemetry.KeyCell); v.AsString() != c {
				kinds[c]["without cell"]++
			}
		}
		if strings.HasPrefix(s.Name, "chat") {
			kinds[c]["chat"]++
			st, _ := attrOf(s, telemetry.KeyStage)
			in, _ := attrOf(s, telemetry.KeyInputTokens)
			o, _ := attrOf(s, telemetry.KeyOutputTokens)
			io := tokens[c][st.AsString()]
			io.In += in.AsInt64()
			io.Out += o.AsInt64()
			tokens[c][st.AsString()] = io
		}
	}
	for _, c := range cells {
		k := kinds[c]
		t.Logf("cell %s: %d spans: %d run, %d eval, %d task, %d chat, %d report, %d record", c, sum(k),
			k[telemetry.SpanRun], k[telemetry.SpanEval], countPrefix(k, telemetry.SpanTask), k["chat"], k[telemetry.SpanReport], k[telemetry.SpanRecord])
		if k[telemetry.SpanRun] != 1 || k[telemetry.SpanEval] != 1 {
			t.Errorf("cell %s: %d run and %d eval spans, want one of each (training, no-skill measurement)", c, k[telemetry.SpanRun], k[telemetry.SpanEval])
		}
		if n := k["without cell"]; n > 0 {
			t.Errorf("cell %s: %d run, eval, task or model-call spans without skillfleet.cell=%s", c, n, c)
		}
		if countPrefix(k, telemetry.SpanTask) == 0 || k["chat"] == 0 || k[telemetry.SpanRecord] == 0 {
			t.Errorf("cell %s: no task, model-call or record spans: %v", c, k)
		}
		want := map[string]inOut{}
		for _, dir := range []string{filepath.Join(out, "cells", c), filepath.Join(out, "cells", c, "no_skill")} {
			for st, tot := range stageTokens(t, filepath.Join(dir, "tokens.json")) {
				io := want[st]
				io.In += tot.Input
				io.Out += tot.Output
				want[st] = io
			}
		}
		checkStageTokens(t, "cell "+c, tokens[c], want)
	}
}

func sum(m map[string]int) (n int) {
	for k, v := range m {
		if k != "chat" && k != "without cell" {
			n += v
		}
	}
	return n
}

func countPrefix(m map[string]int, prefix string) (n int) {
	for k, v := range m {
		if strings.HasPrefix(k, prefix) {
			n += v
		}
	}
	return n
}
