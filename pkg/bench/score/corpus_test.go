package score_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"sync"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/bench/docvqa"
	"github.com/skillfleet/skillfleet/pkg/bench/livemath"
	"github.com/skillfleet/skillfleet/pkg/bench/officeqa"
	"github.com/skillfleet/skillfleet/pkg/bench/score"
	"github.com/skillfleet/skillfleet/pkg/bench/score/scorecorpus"
	"github.com/skillfleet/skillfleet/pkg/bench/searchqa"
)

// corpusEnv names an uncompressed JSONL corpus to use instead of the
// copy in testdata.
const corpusEnv = scorecorpus.Env

type corpusCase = scorecorpus.Case

// loadCorpus reads the corpus named by $SKILLFLEET_SCORER_CORPUS, else
// testdata/skillopt-scores.jsonl.gz.
func loadCorpus(t testing.TB) (cases []corpusCase, path string) {
	t.Helper()
	path = scorecorpus.Path("testdata/skillopt-scores.jsonl.gz")
	corpusOnce.Do(func() { corpusCases, corpusErr = scorecorpus.Load(path) })
	if corpusErr != nil {
		t.Fatal(corpusErr)
	}
	return corpusCases, path
}

// The corpus is read once for all the tests and fuzz seeds.
var (
	corpusOnce  sync.Once
	corpusCases []corpusCase
	corpusErr   error
)

// options are the named deviations; the zero value is SkillOpt's scoring.
type options struct {
	gold   docvqa.GoldOptions
	office officeqa.ScoreOptions
}

type emF1 struct {
	EM float64 `json:"em"`
	F1 float64 `json:"f1"`
}

// run computes skillfleet's result for a case, in the shape SkillOpt's
// result has in the corpus.
func run(c corpusCase, opt options) (any, error) {
	switch c.Scorer {
	case "sq_extract", "lm_extract":
		return score.ExtractAnswer(c.Text), nil
	case "sq_norm":
		return score.NormalizeSQuAD(c.S), nil
	case "sq_em":
		return score.ExactMatch(c.Pred, c.Golds), nil
	case "sq_f1":
		return score.F1(c.Pred, c.Golds), nil
	case "sq_subem":
		return score.SubEM(c.Pred, c.Golds), nil
	case "sq_e2e":
		_, em, f1 := searchqa.Evaluate(c.Text, c.Golds)
		return emF1{em, f1}, nil
	case "lm_choice":
		_, label, valid, hard := livemath.Evaluate(c.Text, c.Choices, c.Correct.Label)
		out := map[string]any{"hard": hard, "label": nil}
		if valid {
			out["label"] = label
		}
		return out, nil
	case "dv_extract":
		return score.ExtractAnswerRfind(c.Text), nil
	case "dv_anls":
		return score.ANLS(c.Pred, c.Golds), nil
	case "dv_e2e":
		_, anls := docvqa.Evaluate(c.Text, c.Golds)
		return anls, nil
	case "dv_gold":
		g := docvqa.ParseAnswers(c.Raw, opt.gold)
		if g == nil {
			g = []string{}
		}
		return g, nil
	case "dv_goldanls":
		_, anls := docvqa.Evaluate(c.Text, docvqa.ParseAnswers(c.Raw, opt.gold))
		return anls, nil
	case "oq_extract":
		return officeqa.ExtractAnswer(c.Text), nil
	case "oq_norm":
		return officeqa.Normalise(c.S), nil
	case "oq_score":
		em, f1 := officeqa.Score(c.Pred, c.Gold)
		return emF1{em, f1}, nil
	case "oq_e2e":
		_, em, f1 := officeqa.Evaluate(c.Text, c.Gold, opt.office)
		return emF1{em, f1}, nil
	}
	return nil, fmt.Errorf("unknown scorer %q", c.Scorer)
}

// equal compares two JSON values, numbers within 1e-9.
func equal(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && math.Abs(x-y) <= 1e-9
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equal(v, w) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}

// outcome runs a case and reports whether it equals SkillOpt's result.
func outcome(t *testing.T, c corpusCase, opt options) (got, want any, ok bool) {
	t.Helper()
	res, err := run(c, opt)
	if err != nil {
		t.Fatalf("line %d (case %d): %v", c.Line, c.ID, err)
	}
	// Through JSON, so both sides have the same shapes.
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatalf("line %d (case %d): %v", c.Line, c.ID, err)
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(c.SkillOpt, &want); err != nil {
		t.Fatalf("line %d (case %d): skillopt: %v", c.Line, c.ID, err)
	}
	return got, want, equal(got, want)
}

// TestSkillOptScorerCorpus checks every scorer against SkillOpt's own
// results on the corpus: every case must be equal (numbers within 1e-9).
// Set SKILLFLEET_SCORER_CORPUS to an uncompressed JSONL file of the same
// format to run on another corpus.
func TestSkillOptScorerCorpus(t *testing.T) {
	cases, path := loadCorpus(t)
	total, bad, raised := map[string]int{}, map[string]int{}, 0
	shown := 0
	for _, c := range cases {
		if c.SkillOpt == nil {
			// SkillOpt raised on this input; skillfleet's scorers never
			// raise, so there is nothing to compare.
			raised++
			continue
		}
		total[c.Scorer]++
		got, want, ok := outcome(t, c, options{})
		if ok {
			continue
		}
		bad[c.Scorer]++
		bad[c.Scorer+"/"+c.Mode]++
		if shown < 25 {
			shown++
			t.Errorf("%s line %d (case %d, %s, %s): got %#v, SkillOpt %#v\n  input: text=%q s=%q pred=%q gold=%q golds=%q raw=%q",
				path, c.Line, c.ID, c.Scorer, c.Mode, got, want, c.Text, c.S, c.Pred, c.Gold, c.Golds, c.Raw)
		}
	}
	var names []string
	for k := range total {
		names = append(names, k)
	}
	sort.Strings(names)
	sum := 0
	for _, k := range names {
		sum += bad[k]
		t.Logf("%-12s %5d cases, %4d differ (real %d, exotic %d, fuzz %d, probe %d)",
			k, total[k], bad[k], bad[k+"/real"], bad[k+"/exotic"], bad[k+"/fuzz"], bad[k+"/probe"])
	}
	t.Logf("%s: %d cases, %d differ from SkillOpt; %d where SkillOpt raised were skipped", path, len(cases), sum, raised)
	if sum > 0 {
		t.Errorf("%d of %d cases differ from SkillOpt", sum, len(cases)-raised)
	}
}

// deviationEffect is what a named deviation changes on the corpus cases of
// one scorer.
type deviationEffect struct {
	cases, changed, up, down int
	// Summed scores (ANLS, or em and f1) without and with the deviation,
	// and the counts of full scores (ANLS ≥ 0.999, em = 1).
	before, after         [2]float64
	fullBefore, fullAfter int
}

// scores returns a result's scores: ANLS (and 0), or em and f1; ok is
// false for a result that is no score (a gold list).
func scores(v any) (s [2]float64, ok bool) {
	switch x := v.(type) {
	case float64:
		return [2]float64{x, 0}, true
	case map[string]any:
		em, _ := x["em"].(float64)
		f1, _ := x["f1"].(float64)
		return [2]float64{em, f1}, true
	}
	return s, false
}

// TestNamedDeviationsOnCorpus measures each named deviation on the corpus
// (the figures docs/skillopt.md quotes) and checks what it may change.
func TestNamedDeviationsOnCorpus(t *testing.T) {
	cases, _ := loadCorpus(t)
	for _, d := range []struct {
		name    string
		scorers []string
		opt     options
		// mayRaise is false when the deviation can only lower scores.
		mayRaise bool
	}{
		{"docvqa gold_cells_as_text", []string{"dv_gold", "dv_goldanls"}, options{gold: docvqa.GoldOptions{CellsAsText: true}}, true},
		{"officeqa require_answer_tag", []string{"oq_e2e"}, options{office: officeqa.ScoreOptions{RequireAnswerTag: true}}, false},
	} {
		effects := map[string]*deviationEffect{}
		for _, c := range cases {
			if c.SkillOpt == nil || !slices.Contains(d.scorers, c.Scorer) {
				continue
			}
			e := effects[c.Scorer]
			if e == nil {
				e = &deviationEffect{}
				effects[c.Scorer] = e
			}
			e.cases++
			base, _, _ := outcome(t, c, options{})
			dev, _, _ := outcome(t, c, d.opt)
			if !equal(base, dev) {
				e.changed++
			}
			b, isScore := scores(base)
			a, _ := scores(dev)
			if !isScore {
				continue
			}
			for i := range b {
				e.before[i] += b[i]
				e.after[i] += a[i]
			}
			if b[0] >= 0.999 {
				e.fullBefore++
			}
			if a[0] >= 0.999 {
				e.fullAfter++
			}
			switch {
			case a[0]+a[1] > b[0]+b[1]+1e-9:
				e.up++
			case a[0]+a[1] < b[0]+b[1]-1e-9:
				e.down++
			}
		}
		changed := 0
		for _, s := range d.scorers {
			e := effects[s]
			if e == nil {
				continue
			}
			changed += e.changed
			n := float64(e.cases)
			switch s {
			case "dv_gold":
				t.Logf("%s on %s: %d of %d gold lists change", d.name, s, e.changed, e.cases)
			case "dv_goldanls":
				t.Logf("%s on %s: %d of %d cases change (%d up, %d down); mean ANLS %.4f → %.4f; ANLS ≥ 0.999 on %d → %d",
					d.name, s, e.changed, e.cases, e.up, e.down, e.before[0]/n, e.after[0]/n, e.fullBefore, e.fullAfter)
			default:
				t.Logf("%s on %s: %d of %d cases change (%d up, %d down); mean em %.4f → %.4f, mean f1 %.4f → %.4f; em = 1 on %d → %d",
					d.name, s, e.changed, e.cases, e.up, e.down, e.before[0]/n, e.after[0]/n, e.before[1]/n, e.after[1]/n, e.fullBefore, e.fullAfter)
			}
			if !d.mayRaise && e.up > 0 {
				t.Errorf("%s raised %d scores on %s; it may only lower them", d.name, e.up, s)
			}
		}
		if changed == 0 && os.Getenv(corpusEnv) == "" {
			t.Errorf("%s changes nothing on the corpus", d.name)
		}
	}
}
