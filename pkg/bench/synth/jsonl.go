package synth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/skillfleet/skillfleet/internal/atomicfile"
)

// The jsonl world: your own data, as the jsonl benchmark reads it: one
// items.jsonl per split whose objects carry a ledger record, a question
// and the answer, rendered by the config's prompt_template and scored by
// the exact scorer. Its rules are answer-format, unit and rounding rules (symbols,
// quotes, padding, signs, units), which the exact scorer sees.
var jsonlRules = []string{
	"currency_symbol", "percent_sign", "quoted", "trailing_period", "zero_pad", "approx_prefix",
	"negative_sign", "units_km", "rounding_tens", "off_by_one", "hex", "decimals",
}

// JSONL phrasing, shared with the simulated model.
const (
	JSONLRecord   = "Ledger line %d of the %s depot. Value on file: %s."
	JSONLValue    = "Value on file: "
	JSONLQuestion = "Which value should be reported for this line?"
	JSONLConcern  = " The line concerns %s."
	// JSONLTemplate is the prompt_template of configs/synth/jsonl.yaml.
	JSONLTemplate = "{{.record}}\n\n{{.question}}"
)

// JSONLItem is one item of the jsonl world.
type JSONLItem struct {
	ID       string `json:"id"`
	Record   string `json:"record"`
	Question string `json:"question"`
	Answer   string `json:"answer"`
	TaskType string `json:"task_type"`
}

func writeJSONL(dir string, size Size, seed int64) (*Manifest, error) {
	active := pickRules(newRNG("jsonl", size, seed, "rules"), jsonlRules, size.Rules)
	items := splits(size, func(split string, i int) JSONLItem {
		r := newRNG("jsonl", size, seed, fmt.Sprintf("%s/%d", split, i))
		rules := itemRules(r, active)
		gold := Value(r)
		q := JSONLQuestion
		for _, id := range rules {
			ru, _ := LookupRule(id)
			q += fmt.Sprintf(JSONLConcern, ru.Cue)
		}
		return JSONLItem{ID: fmt.Sprintf("synth-jsonl-%s-%04d", split, i+1),
			Record:   fmt.Sprintf(JSONLRecord, 10+r.IntN(890), pick(r, entityNames), gold),
			Question: q, Answer: gold, TaskType: taskType(rules)}
	})
	counts := map[string]int{}
	for _, sp := range []string{"train", "val", "test"} {
		var buf bytes.Buffer
		for _, it := range items[sp] {
			b, err := json.Marshal(it)
			if err != nil {
				return nil, err
			}
			buf.Write(b)
			buf.WriteByte('\n')
		}
		if err := atomicfile.Write(filepath.Join(dir, sp, "items.jsonl"), buf.Bytes()); err != nil {
			return nil, err
		}
		counts[sp] = len(items[sp])
	}
	seedFile, err := writeSeedSkill(dir, SeedSkill("Reporting ledger values", jsonlGeneral, active, newRNG("jsonl", size, seed, "seed-skill")))
	if err != nil {
		return nil, err
	}
	return &Manifest{Counts: counts, ItemFields: []string{"id", "record", "question", "answer", "task_type"},
		Rules: active, SeedSkill: seedFile,
		Notes: "A synthetic world (a test double), not real data. Render with prompt_template " +
			strings.ReplaceAll(JSONLTemplate, "\n", `\n`) + " and the exact scorer (configs/synth/jsonl.yaml)."}, nil
}

const jsonlGeneral = "Report the value on file for the ledger line the task shows.\n\n## General\n- Read the whole record before you answer.\n- Put only the final answer inside the answer tags."
