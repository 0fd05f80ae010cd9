package pricing

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const testTable = `
as_of: "2026-01-02"
currency: USD
models:
  sim-*: {input: 0, output: 0}
  gpt-4o: {input: 2.5, cached_input: 1.25, output: 10}
  gpt-4o-mini: {input: 0.15, cached_input: 0.075, output: 0.6}
  claude-sonnet-4-5: {input: 3, cached_input: 0.3, cache_write: 3.75, output: 15}
  Local-Model: {input: 1, output: 2}
  prefix-*: {input: 7, output: 7}
  gemini-x: {input: 1, output: 1}
`

func setup(t *testing.T) *Table {
	t.Helper()
	tab, err := Parse([]byte(testTable), "test")
	if err != nil {
		t.Fatalf("Parse() = %v", err)
	}
	return tab
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestLookup(t *testing.T) {
	t.Parallel()
	tab := setup(t)
	tests := []struct {
		model   string
		wantKey string
		wantOK  bool
	}{
		{"gpt-4o", "gpt-4o", true},
		{"GPT-4o", "gpt-4o", true},
		{" gpt-4o ", "gpt-4o", true},
		{"gpt-4o-2024-08-06", "gpt-4o", true},
		{"gpt-4o-mini", "gpt-4o-mini", true},
		{"gpt-4o-mini-2024-07-18", "gpt-4o-mini", true},
		{"claude-sonnet-4-5-20250929", "claude-sonnet-4-5", true},
		{"claude-sonnet-4-5@20250929", "claude-sonnet-4-5", true},
		{"gemini-x-001", "gemini-x", true},
		{"sim-target", "sim-*", true},
		{"sim-optimizer", "sim-*", true},
		{"local-model", "local-model", true},
		{"prefix-anything", "prefix-*", true},
		{"simple", "", false},               // not "sim-"
		{"gpt-4", "", false},                // shorter than every entry
		{"gpt-4ox", "", false},              // another name
		{"gpt-4o-audio-preview", "", false}, // another model, not a snapshot
		{"gpt-4o-mini-tts", "", false},      // likewise
		{"claude-sonnet-4-5-1", "", false},  // a newer version is not a snapshot
		{"gpt-4o.1", "", false},             // nor is a dotted version
		{"gpt-4o-2024", "", false},          // an incomplete date
		{"claude-opus-4", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		key, _, ok := tab.Lookup(tt.model)
		if key != tt.wantKey || ok != tt.wantOK {
			t.Errorf("Lookup(%q) = %q, %v; want %q, %v", tt.model, key, ok, tt.wantKey, tt.wantOK)
		}
	}
}

func TestCost(t *testing.T) {
	t.Parallel()
	tab := setup(t)
	tests := []struct {
		name  string
		model string
		tok   Tokens
		want  float64
	}{
		{"plain", "gpt-4o", Tokens{Input: 1_000_000, Output: 1_000_000}, 12.5},
		{"cached reads at the cached price", "gpt-4o", Tokens{Input: 1_000_000, CacheRead: 400_000, Output: 0}, 0.6*2.5 + 0.4*1.25},
		{"cache writes at their own price", "claude-sonnet-4-5", Tokens{Input: 1_000_000, CacheRead: 500_000, CacheWrite: 100_000, Output: 10_000},
			0.4*3 + 0.5*0.3 + 0.1*3.75 + 0.01*15},
		{"no cached price means input price", "local-model", Tokens{Input: 2_000_000, CacheRead: 1_000_000, Output: 500_000}, 2*1 + 0.5*2},
		{"sim is free", "sim-target", Tokens{Input: 9e9, Output: 9e9}, 0},
		{"small call", "gpt-4o-mini", Tokens{Input: 1200, Output: 300}, (1200*0.15 + 300*0.6) / 1e6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tab.CostTokens(tt.model, tt.tok)
			if err != nil || !near(got, tt.want) {
				t.Errorf("CostTokens(%q, %+v) = %v, %v; want %v", tt.model, tt.tok, got, err, tt.want)
			}
		})
	}
	if got, err := tab.Cost("gpt-4o", 1_000_000, 1_000_000, 0); err != nil || !near(got, 1.25) {
		t.Errorf("Cost(all cached) = %v, %v; want 1.25", got, err)
	}
	if _, err := tab.Cost("mystery-model", 10, 0, 10); !errors.Is(err, ErrUnknownModel) {
		t.Errorf("Cost(unknown) error = %v, want ErrUnknownModel", err)
	}
}

func TestPriceBreakdown(t *testing.T) {
	t.Parallel()
	tab := setup(t)
	rows := []Row{
		{Stage: "rollout", Role: "target", Model: "gpt-4o-mini", Calls: 10, Input: 1_000_000, Output: 100_000},
		{Stage: "reflect", Role: "optimizer", Model: "gpt-4o", Calls: 2, Input: 200_000, CacheRead: 100_000, Output: 20_000},
		{Stage: "gate", Role: "target", Model: "my-azure-deployment", Calls: 4, Input: 5000, Output: 100},
		{Stage: "merge", Role: "target", Model: "my-azure-deployment", Calls: 1, Input: 10, Output: 1},
		{Stage: "reflect", Role: "optimizer", Model: "", Calls: 0},
		{Stage: "test_best", Role: "target", Model: "", Calls: 1, Input: 3, Output: 3},
	}
	b := tab.Price(rows)
	wantRollout := 0.15 + 0.1*0.6
	wantReflect := 0.1*2.5 + 0.1*1.25 + 0.02*10
	if !near(b.ByStage["rollout"], wantRollout) || !near(b.ByStage["reflect"], wantReflect) || !near(b.Total, wantRollout+wantReflect) {
		t.Errorf("ByStage = %v, Total = %v; want rollout %v, reflect %v", b.ByStage, b.Total, wantRollout, wantReflect)
	}
	if !near(b.ByModel["gpt-4o"], wantReflect) {
		t.Errorf("ByModel[gpt-4o] = %v, want %v", b.ByModel["gpt-4o"], wantReflect)
	}
	wantUnpriced := []Unpriced{{Model: "(unnamed)", Calls: 1, Tokens: 6}, {Model: "my-azure-deployment", Calls: 5, Tokens: 5111}}
	if diff := cmp.Diff(wantUnpriced, b.Unpriced); diff != "" {
		t.Errorf("Unpriced (-want +got):\n%s", diff)
	}
	if b.Complete() {
		t.Error("Complete() = true with unpriced models")
	}
	if len(b.Lines) != len(rows) || b.Lines[2].Priced || !b.Lines[4].Priced || b.Lines[1].PriceKey != "gpt-4o" {
		t.Errorf("Lines = %+v", b.Lines)
	}
	if _, ok := b.ByStage["gate"]; ok {
		t.Errorf("ByStage has gate, priced by nobody: %v", b.ByStage)
	}
}

func TestPriceTokensJSON(t *testing.T) {
	t.Parallel()
	tab := setup(t)
	data := []byte(`{"rows":[{"stage":"rollout","role":"target","model":"sim-target","tasks":3,"calls":3,"input_tokens":100,"output_tokens":10,"cache_read_tokens":0},
	{"stage":"reflect","role":"optimizer","model":"gpt-4o","calls":1,"input_tokens":1000000,"output_tokens":0,"cache_read_tokens":1000000}],
	"by_stage":{},"total":{}}`)
	b, err := tab.PriceTokensJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	if !b.Complete() || !near(b.Total, 1.25) || b.Lines[0].Calls != 3 {
		t.Errorf("PriceTokensJSON() = %+v, want complete, $1.25, 3 calls on line 0", b)
	}
	if _, err := tab.PriceTokensJSON([]byte("{")); err == nil {
		t.Error("PriceTokensJSON(bad json) = nil error")
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, yaml, want string
	}{
		{"no date", "models: {a: {input: 1, output: 1}}", "as_of is missing"},
		{"bad date", `as_of: "last week"` + "\nmodels: {a: {input: 1, output: 1}}", "not a YYYY-MM-DD"},
		{"currency", `as_of: "2026-01-01"` + "\ncurrency: EUR\nmodels: {a: {input: 1, output: 1}}", "USD only"},
		{"negative", `as_of: "2026-01-01"` + "\nmodels: {a: {input: -1, output: 1}}", "non-negative"},
		{"negative cached", `as_of: "2026-01-01"` + "\nmodels: {a: {input: 1, cached_input: -2, output: 1}}", "cached_input"},
		{"duplicate by case", `as_of: "2026-01-01"` + "\nmodels: {A: {input: 1, output: 1}, a: {input: 2, output: 2}}", "listed twice"},
		{"inner star", `as_of: "2026-01-01"` + "\nmodels: {\"a*b\": {input: 1, output: 1}}", "may only end"},
		{"unknown field", `as_of: "2026-01-01"` + "\nmodels: {a: {input: 1, outptu: 1}}", "outptu"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), "x.yaml")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// The built-in table is a copy of configs/prices.yaml; they must not drift.
func TestDefaultMatchesConfigs(t *testing.T) {
	t.Parallel()
	shipped, err := os.ReadFile(filepath.Join("..", "..", "configs", "prices.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(shipped, defaultPrices) {
		t.Fatal("pkg/pricing/prices.yaml differs from configs/prices.yaml: cp configs/prices.yaml pkg/pricing/prices.yaml")
	}
	tab := Default()
	if tab.AsOf() == "" {
		t.Error("Default().AsOf() is empty")
	}
	loaded, err := Load(filepath.Join("..", "..", "configs", "prices.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tab.Models(), loaded.Models()); diff != "" {
		t.Errorf("models (-default +loaded):\n%s", diff)
	}
}

func TestDefaultTable(t *testing.T) {
	t.Parallel()
	tab := Default()
	tests := []struct {
		model string
		key   string
	}{
		{"sim-target", "sim-*"},
		{"sim-optimizer", "sim-*"},
		{"gpt-4o-2024-08-06", "gpt-4o"},
		{"gpt-4o-2024-05-13", "gpt-4o-2024-05-13"},
		{"gpt-5-mini-2025-08-07", "gpt-5-mini"},
		{"gpt-5.5", "gpt-5.5"},
		{"gpt-5.5-2026-04-23", "gpt-5.5"},
		{"gpt-5.4-mini", "gpt-5.4-mini"},
		{"o3-pro", "o3-pro"},
		{"o1-mini-2024-09-12", "o1-mini"},
		{"claude-opus-4-5-20251101", "claude-opus-4-5"},
		{"claude-opus-4-20250514", "claude-opus-4"},
		{"claude-3-5-haiku-20241022", "claude-3-5-haiku"},
		{"gemini-2.5-flash-lite", "gemini-2.5-flash-lite"},
		{"gpt-5.2-2025-12-11", "gpt-5.2"},
		{"gpt-5.3-codex", "gpt-5.3-codex"},
		{"gpt-5.1-codex-mini", "gpt-5.1-codex-mini"},
		{"claude-sonnet-4-6", "claude-sonnet-4-6"},
		{"claude-sonnet-5", "claude-sonnet-5"},
	}
	for _, model := range []string{"gpt-5.3", "gpt-5.5-mini", "gpt-5.5-codex", "claude-opus-4-6", "my-azure-deployment"} {
		if key, _, ok := tab.Lookup(model); ok {
			t.Errorf("Default().Lookup(%q) = %q, want no match (an unlisted model is not guessed)", model, key)
		}
	}
	for _, tt := range tests {
		if key, _, ok := tab.Lookup(tt.model); !ok || key != tt.key {
			t.Errorf("Default().Lookup(%q) = %q, %v; want %q", tt.model, key, ok, tt.key)
		}
	}
	for _, m := range tab.Models() {
		_, p, _ := tab.Lookup(m)
		if strings.HasPrefix(m, "sim-") {
			if p.Cost(Tokens{Input: 1e6, Output: 1e6}) != 0 {
				t.Errorf("simulated model %q has a price", m)
			}
			continue
		}
		if p.Input <= 0 || p.Output <= 0 || p.Output < p.Input {
			t.Errorf("model %q: input %v output %v look wrong", m, p.Input, p.Output)
		}
		if p.CachedInput != nil && *p.CachedInput > p.Input {
			t.Errorf("model %q: cached input %v costs more than input %v", m, *p.CachedInput, p.Input)
		}
	}
	// Every row of the demo's tokens.json is priced (all simulated, $0).
	b := tab.Price([]Row{{Stage: "rollout", Model: "sim-target", Input: 10, Output: 1}, {Stage: "reflect", Model: "sim-optimizer", Input: 10, Output: 1}})
	if !b.Complete() || b.Total != 0 {
		t.Errorf("sim breakdown = %+v, want complete and $0", b)
	}
}

func TestLoadOrDefault(t *testing.T) {
	def, err := LoadOrDefault("")
	if err != nil || def.Source() != Default().Source() {
		t.Fatalf("LoadOrDefault(\"\") = %v, %v; want the built-in table", def, err)
	}
	path := filepath.Join("..", "..", "configs", "prices.yaml")
	if got, err := LoadOrDefault(path); err != nil || got.Source() != path {
		t.Errorf("LoadOrDefault(%s) = %v, %v; want that file's table", path, got, err)
	}
	if _, err := LoadOrDefault(filepath.Join(t.TempDir(), "none.yaml")); err == nil {
		t.Error("a missing file gave no error")
	}
}
