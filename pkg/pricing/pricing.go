// Package pricing turns token counts into US dollars with a price table:
// per model, USD per million input, cached-input, cache-write and output
// tokens, loaded from a YAML file (configs/prices.yaml is the shipped,
// dated default; Default returns a copy of it built into the binary).
//
// A model name is matched exactly, then by the longest table entry that is
// a prefix of it: an entry "gpt-4o" matches a dated snapshot of it
// ("gpt-4o-2024-08-06", "claude-opus-4@20250514"), and an entry ending in
// "*" ("sim-*") matches every name that starts with what precedes the "*".
// Nothing else is matched: "gpt-4o" does not price "gpt-4o-mini" nor
// "gpt-5" price "gpt-5.2". A model that matches nothing is reported as
// unpriced, never guessed.
package pricing

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Price is one model's price in USD per 1,000,000 tokens.
type Price struct {
	// Input is the price of uncached prompt tokens.
	Input float64 `yaml:"input"`
	// CachedInput is the price of prompt tokens read from the provider's
	// cache; nil means the provider gives no discount (Input applies).
	CachedInput *float64 `yaml:"cached_input"`
	// CacheWrite is the price of prompt tokens written to the cache; nil
	// means Input applies.
	CacheWrite *float64 `yaml:"cache_write"`
	// Output is the price of completion tokens, reasoning included.
	Output float64 `yaml:"output"`
	Note   string  `yaml:"note"`
}

// Tokens are the counts one price applies to. Input includes CacheRead
// and CacheWrite (as pkg/llm and the GenAI conventions count them); Output
// includes reasoning tokens.
type Tokens struct {
	Input      int64
	CacheRead  int64
	CacheWrite int64
	Output     int64
}

// Cost is the USD cost of t at p.
func (p Price) Cost(t Tokens) float64 {
	cached, write := p.Input, p.Input
	if p.CachedInput != nil {
		cached = *p.CachedInput
	}
	if p.CacheWrite != nil {
		write = *p.CacheWrite
	}
	uncached := max(t.Input-t.CacheRead-t.CacheWrite, 0)
	usd := float64(uncached)*p.Input + float64(t.CacheRead)*cached + float64(t.CacheWrite)*write + float64(t.Output)*p.Output
	return usd / 1e6
}

// Table is a loaded price table. It is immutable and safe for concurrent use.
type Table struct {
	asOf     string
	currency string
	source   string
	models   map[string]Price
	// keys sorted longest first, for prefix matching.
	keys []string
}

// file is the YAML shape of a price table.
type file struct {
	AsOf     string           `yaml:"as_of"`
	Currency string           `yaml:"currency"`
	Models   map[string]Price `yaml:"models"`
}

// ErrUnknownModel is returned when no table entry matches a model name.
var ErrUnknownModel = errors.New("no price for model")

//go:embed prices.yaml
var defaultPrices []byte

// Default returns the price table built into the binary, a copy of
// configs/prices.yaml.
func Default() *Table {
	t, err := Parse(defaultPrices, "built-in configs/prices.yaml")
	if err != nil {
		panic(err) // a test keeps the embedded file valid
	}
	return t
}

// Load reads a price table from a YAML file.
func Load(path string) (*Table, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("prices: %w", err)
	}
	return Parse(data, path)
}

// LoadOrDefault is the table in path, or the built-in one when path is
// empty.
func LoadOrDefault(path string) (*Table, error) {
	if path == "" {
		return Default(), nil
	}
	return Load(path)
}

// Parse reads a price table; source names it in messages.
func Parse(data []byte, source string) (*Table, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var f file
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("prices %s: %w", source, err)
	}
	if f.AsOf == "" {
		return nil, fmt.Errorf("prices %s: as_of is missing: say when the prices were checked (YYYY-MM-DD)", source)
	}
	if _, err := time.Parse(time.DateOnly, f.AsOf); err != nil {
		return nil, fmt.Errorf("prices %s: as_of %q is not a YYYY-MM-DD date", source, f.AsOf)
	}
	if f.Currency == "" {
		f.Currency = "USD"
	}
	if f.Currency != "USD" {
		return nil, fmt.Errorf("prices %s: currency %q is not supported (USD only)", source, f.Currency)
	}
	t := &Table{asOf: f.AsOf, currency: f.Currency, source: source, models: map[string]Price{}}
	for name, p := range f.Models {
		key := normalize(name)
		if key == "" || key == "*" {
			return nil, fmt.Errorf("prices %s: an entry has an empty model name", source)
		}
		if strings.Contains(strings.TrimSuffix(key, "*"), "*") {
			return nil, fmt.Errorf("prices %s: model %q: \"*\" may only end a name", source, key)
		}
		if _, dup := t.models[key]; dup {
			return nil, fmt.Errorf("prices %s: model %q is listed twice", source, key)
		}
		for what, v := range map[string]*float64{"input": &p.Input, "output": &p.Output, "cached_input": p.CachedInput, "cache_write": p.CacheWrite} {
			if v != nil && (*v < 0 || math.IsNaN(*v) || math.IsInf(*v, 0)) {
				return nil, fmt.Errorf("prices %s: model %q: %s price %v is not a non-negative number", source, key, what, *v)
			}
		}
		t.models[key] = p
		t.keys = append(t.keys, key)
	}
	// Longest stem first; at equal length an exact entry before a "*" one.
	sort.Slice(t.keys, func(i, j int) bool {
		si, wi := strings.CutSuffix(t.keys[i], "*")
		sj, wj := strings.CutSuffix(t.keys[j], "*")
		if len(si) != len(sj) {
			return len(si) > len(sj)
		}
		if wi != wj {
			return !wi
		}
		return t.keys[i] < t.keys[j]
	})
	return t, nil
}

func normalize(model string) string { return strings.ToLower(strings.TrimSpace(model)) }

// snapshotSuffix matches what a provider appends to a model name to pin a
// dated snapshot or revision of the same model: "-20250514",
// "-2024-08-06", "@20250514", "-001", "-v1:0".
var snapshotSuffix = regexp.MustCompile(`^[-@_](\d{8}|\d{4}-\d{2}-\d{2}|\d{3}|v\d+(:\d+)?)$`)

// prefixOf reports whether entry key matches name by prefix.
func prefixOf(key, name string) bool {
	if stem, ok := strings.CutSuffix(key, "*"); ok {
		return strings.HasPrefix(name, stem)
	}
	return strings.HasPrefix(name, key) && snapshotSuffix.MatchString(name[len(key):])
}

// AsOf is the date the table says its prices were checked.
func (t *Table) AsOf() string { return t.asOf }

// Source names where the table came from (a path, or the built-in copy).
func (t *Table) Source() string { return t.source }

// Models lists the table's entries, sorted.
func (t *Table) Models() []string {
	out := append([]string(nil), t.keys...)
	sort.Strings(out)
	return out
}

// Lookup finds model's price: the exact entry, else the longest entry that
// is a prefix of model (a snapshot of the entry's model, or a "*" entry).
// key is the entry that matched.
func (t *Table) Lookup(model string) (key string, p Price, ok bool) {
	name := normalize(model)
	if name == "" {
		return "", Price{}, false
	}
	if p, ok := t.models[name]; ok {
		return name, p, true
	}
	for _, k := range t.keys {
		if prefixOf(k, name) {
			return k, t.models[k], true
		}
	}
	return "", Price{}, false
}

// Cost is the USD cost of a call's tokens: input includes cachedInput.
func (t *Table) Cost(model string, input, cachedInput, output int64) (float64, error) {
	return t.CostTokens(model, Tokens{Input: input, CacheRead: cachedInput, Output: output})
}

// CostTokens is the USD cost of tok at model's price.
func (t *Table) CostTokens(model string, tok Tokens) (float64, error) {
	_, p, ok := t.Lookup(model)
	if !ok {
		return 0, fmt.Errorf("%w %q in %s", ErrUnknownModel, model, t.source)
	}
	return p.Cost(tok), nil
}

// Row is one line of a tokens.json-like breakdown; its JSON tags read the
// rows of the run dir's tokens.json.
type Row struct {
	Stage      string `json:"stage"`
	Role       string `json:"role"`
	Model      string `json:"model"`
	Calls      int64  `json:"calls"`
	Input      int64  `json:"input_tokens"`
	Output     int64  `json:"output_tokens"`
	CacheRead  int64  `json:"cache_read_tokens"`
	CacheWrite int64  `json:"cache_write_tokens"`
}

// Tokens returns the row's counts.
func (r Row) Tokens() Tokens {
	return Tokens{Input: r.Input, CacheRead: r.CacheRead, CacheWrite: r.CacheWrite, Output: r.Output}
}

// Line is one priced row.
type Line struct {
	Row
	// PriceKey is the table entry that priced the row ("" if none did).
	PriceKey string
	USD      float64
	Priced   bool
}

// Unpriced is a model the table has no price for, with what it used.
type Unpriced struct {
	Model  string
	Calls  int64
	Tokens int64 // input + output
}

// Breakdown is a priced set of rows. Totals cover priced rows only; when
// Unpriced is not empty they are lower bounds.
type Breakdown struct {
	Lines    []Line
	ByStage  map[string]float64
	ByModel  map[string]float64
	Total    float64
	Unpriced []Unpriced
	AsOf     string
	Source   string
}

// Complete reports whether every row with tokens was priced.
func (b Breakdown) Complete() bool { return len(b.Unpriced) == 0 }

// Price prices rows. Rows without tokens are kept but need no price.
func (t *Table) Price(rows []Row) Breakdown {
	b := Breakdown{ByStage: map[string]float64{}, ByModel: map[string]float64{}, AsOf: t.asOf, Source: t.source}
	unpriced := map[string]*Unpriced{}
	for _, r := range rows {
		ln := Line{Row: r}
		if key, p, ok := t.Lookup(r.Model); ok {
			ln.PriceKey, ln.Priced, ln.USD = key, true, p.Cost(r.Tokens())
			b.ByStage[r.Stage] += ln.USD
			b.ByModel[r.Model] += ln.USD
			b.Total += ln.USD
		} else if r.Input != 0 || r.Output != 0 {
			name := r.Model
			if name == "" {
				name = "(unnamed)"
			}
			u := unpriced[name]
			if u == nil {
				u = &Unpriced{Model: name}
				unpriced[name] = u
			}
			u.Calls += r.Calls
			u.Tokens += r.Input + r.Output
		} else {
			ln.Priced = true // nothing to price
		}
		b.Lines = append(b.Lines, ln)
	}
	for _, u := range unpriced {
		b.Unpriced = append(b.Unpriced, *u)
	}
	sort.Slice(b.Unpriced, func(i, j int) bool { return b.Unpriced[i].Model < b.Unpriced[j].Model })
	return b
}

// PriceTokensJSON prices the rows of a tokens.json file.
func (t *Table) PriceTokensJSON(data []byte) (Breakdown, error) {
	var f struct {
		Rows []Row `json:"rows"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return Breakdown{}, fmt.Errorf("tokens.json: %w", err)
	}
	return t.Price(f.Rows), nil
}
