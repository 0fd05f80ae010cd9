// Package scorecorpus reads the corpus of SkillOpt's scorer results
// (pkg/bench/score/testdata/README.md): the inputs of SkillOpt's answer
// scorers and what SkillOpt returned, one JSON object a line. The scorer
// tests check skillfleet against it and the fuzz tests take their seeds
// from it.
package scorecorpus

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/bench/score"
)

// Env names an uncompressed JSONL corpus to use instead of the copy in
// pkg/bench/score/testdata.
const Env = "SKILLFLEET_SCORER_CORPUS"

// Case is one line of the corpus: the inputs of one scorer call and
// SkillOpt's result (or the error it raised).
type Case struct {
	ID      int            `json:"id"`
	Mode    string         `json:"mode"`
	Scorer  string         `json:"scorer"`
	Text    string         `json:"text"`
	S       string         `json:"s"`
	Pred    string         `json:"pred"`
	Gold    string         `json:"gold"`
	Golds   []string       `json:"golds"`
	Raw     string         `json:"raw"`
	Choices []score.Choice `json:"choices"`
	Correct score.Choice   `json:"correct"`

	SkillOpt      json.RawMessage `json:"skillopt"`
	SkillOptError json.RawMessage `json:"skillopt_error"`

	// Line is the case's line number in the file.
	Line int `json:"-"`
}

// Path is $SKILLFLEET_SCORER_CORPUS when set, else def (the compressed
// copy, relative to the calling test's package).
func Path(def string) string {
	if p := os.Getenv(Env); p != "" {
		return p
	}
	return def
}

// Load reads a corpus file, gzip-compressed when its name ends in ".gz".
// A malformed line, or a case without a scorer or a result, is an error
// naming the file and line.
func Load(path string) ([]Case, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		r = zr
	}
	var cases []Case
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var c Case
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if c.Scorer == "" || (c.SkillOpt == nil && c.SkillOptError == nil) {
			return nil, fmt.Errorf("%s:%d: case %d has no scorer or no skillopt result", path, n, c.ID)
		}
		c.Line = n
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("%s: no cases", path)
	}
	return cases, nil
}

// Inputs returns the distinct values of one input field ("text", "s",
// "pred", "gold", "raw") over the cases of the given scorers, in file
// order, at most limit from each scorer (0: all).
func Inputs(cases []Case, field string, limit int, scorers ...string) []string {
	seen := map[string]bool{}
	taken := map[string]int{}
	var out []string
	for _, c := range cases {
		ok := false
		for _, s := range scorers {
			ok = ok || c.Scorer == s
		}
		if !ok {
			continue
		}
		var v string
		switch field {
		case "text":
			v = c.Text
		case "s":
			v = c.S
		case "pred":
			v = c.Pred
		case "gold":
			v = c.Gold
		case "raw":
			v = c.Raw
		default:
			panic("scorecorpus: unknown field " + field)
		}
		if seen[v] || (limit > 0 && taken[c.Scorer] >= limit) {
			continue
		}
		seen[v] = true
		taken[c.Scorer]++
		out = append(out, v)
	}
	return out
}
