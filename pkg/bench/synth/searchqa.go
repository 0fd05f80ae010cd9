package synth

import (
	"fmt"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/bench/searchqa"
)

// SearchQA's world: a question about one register's figure, the figure
// stated in one of several search-result documents. Its rules are answer
// format, unit and rounding rules whose wrong answers survive SQuAD
// normalisation (so exact match sees them).
var searchqaRules = []string{
	"units_km", "rounding_tens", "digits_reversed", "approx_prefix", "off_by_one", "doubled",
	"swapped_digits", "spaced_digits", "hex", "rounding_hundreds", "truncated", "times_ten", "answer_label",
}

// SearchQA phrasing, shared with the simulated model.
const (
	SearchQAAsk     = "What figure does the %s register record?"
	SearchQAFact    = "The %s register records the figure %s for this entry."
	SearchQAConcern = "The entry concerns %s."
)

func writeSearchQA(dir string, size Size, seed int64) (*Manifest, error) {
	active := pickRules(newRNG("searchqa", size, seed, "rules"), searchqaRules, size.Rules)
	items := splits(size, func(split string, i int) searchqa.Item {
		r := newRNG("searchqa", size, seed, fmt.Sprintf("%s/%d", split, i))
		rules := itemRules(r, active)
		names := append([]string(nil), entityNames...)
		r.Shuffle(len(names), func(a, b int) { names[a], names[b] = names[b], names[a] })
		entity, gold := names[0], Value(r)
		var q strings.Builder
		fmt.Fprintf(&q, SearchQAAsk, entity)
		for _, id := range rules {
			ru, _ := LookupRule(id)
			q.WriteString(" " + fmt.Sprintf(SearchQAConcern, ru.Cue))
		}
		nDocs := 3 + r.IntN(3)
		at := r.IntN(nDocs)
		var docs []string
		for d := range nDocs {
			name, val := names[1+d], Value(r)
			if d == at {
				name, val = entity, gold
			}
			docs = append(docs, fmt.Sprintf("[DOC] [TLE] %s register [PAR] %s", name, fmt.Sprintf(SearchQAFact, name, val)))
		}
		return searchqa.Item{ID: fmt.Sprintf("synth-searchqa-%s-%04d", split, i+1), Question: q.String(),
			Context: strings.Join(docs, " "), Answers: []string{gold}, TaskType: taskType(rules)}
	})
	counts, err := writeItems(dir, items)
	if err != nil {
		return nil, err
	}
	seedFile, err := writeSeedSkill(dir, SeedSkill("Answering from search results", searchqaGeneral, active, newRNG("searchqa", size, seed, "seed-skill")))
	if err != nil {
		return nil, err
	}
	return &Manifest{Counts: counts, ItemFields: []string{"id", "question", "context", "answers", "task_type"},
		Rules: active, SeedSkill: seedFile}, nil
}

const searchqaGeneral = "Find the document about the register the question names and answer with its figure.\n\n## General\n- Read every search result before you answer.\n- Put only the final answer inside the answer tags."

// taskType is an item's task type: its first rule's category, else plain.
func taskType(rules []string) string {
	if len(rules) == 0 {
		return "plain"
	}
	ru, _ := LookupRule(rules[0])
	return ru.Category
}
