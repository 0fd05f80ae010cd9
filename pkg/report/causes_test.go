package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRetryCausesLine: the failure causes of tokens.json, summed over the
// stages, appear in the text report; a run without failures has no line.
func TestRetryCausesLine(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "demo"))); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "tokens.json")
	var tok map[string]any
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &tok); err != nil {
		t.Fatal(err)
	}
	by := tok["by_stage"].(map[string]any)
	by["gate"].(map[string]any)["failure_causes"] = map[string]any{"server_5xx": 12, "stall": 2}
	by["reflect"] = map[string]any{"calls": 3, "failure_causes": map[string]any{"server_5xx": 1, "transport": 4, "rate_limited": 1500}}
	data, _ = json.Marshal(tok)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if want := "failed and retried call attempts by cause: rate_limited 1,500 stall 2 server_5xx 13 transport 4\n"; !strings.Contains(buf.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, buf.String())
	}
	buf.Reset()
	if err := setup(t, "demo").WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "by cause") {
		t.Error("a run without failed calls shows causes")
	}
}

// TestHedgedSpendLine: the losing attempts of hedged tasks (the stage
// "hedged" of tokens.json) get a line with their share of the calls.
func TestHedgedSpendLine(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "demo"))); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "tokens.json")
	var tok map[string]any
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &tok); err != nil {
		t.Fatal(err)
	}
	by := tok["by_stage"].(map[string]any)
	calls := 0.0
	for _, v := range by {
		calls += v.(map[string]any)["calls"].(float64)
	}
	h := int(calls) / 9
	by["hedged"] = map[string]any{"calls": h, "input_tokens": 1000, "failure_causes": map[string]any{"hedged": h}}
	data, _ = json.Marshal(tok)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("hedging: %d calls on the losing attempts of hedged tasks (%.1f%% of the calls)\n", h, 100*float64(h)/(calls+float64(h))); !strings.Contains(buf.String(), "hedging: ") || !strings.Contains(buf.String(), want) {
		t.Errorf("report lacks the hedging line with %q:\n%s", want, buf.String())
	}
}
