package synth

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/skillfleet/skillfleet/internal/atomicfile"
)

// OfficeQA's world: one synthetic Treasury-style bulletin per question, a
// text file under docs/transformed/ and its parsed pages under
// docs/jsons/, reached through the benchmark's glob/read/grep tools. Each
// bulletin has a debt table and, far below it, errata lines that correct
// some table lines. A question about "the corrected amount" needs
// the world's tool rule (grep the bulletin for errata first); the others
// are unit, rounding and format rules that OfficeQA's normalisation keeps.
var officeqaRules = []string{
	"units_km", "rounding_tens", "approx_prefix", "off_by_one", "doubled", "times_ten",
	"digits_reversed", "percent_sign", "decimals", "negative_sign", "truncated",
}

// OfficeQAErrata is the id of OfficeQA's tool rule.
const OfficeQAErrata = "oq_errata_first"

// OfficeQA phrasing, shared with the simulated model.
const (
	OfficeQAAsk     = "What figure does table FD-2 give for %s in %s?"
	OfficeQAConcern = " The figure concerns %s."
	OfficeQARow     = "%s | %s | %s"
	OfficeQAErrLine = "ERRATA: in table FD-2, line %d should read %s."
)

// officeqaWorldRules are the OfficeQA world's own rules.
var officeqaWorldRules = []Rule{{
	ID: OfficeQAErrata, Category: "errata", Cue: "the corrected amount",
	Text: "For the corrected amount, grep the bulletin for errata before reading its tables.",
	Paraphrases: []string{
		"When a question wants the corrected amount, first grep the document for errata.",
		"Grep each bulletin for errata first if the question wants the corrected amount.",
	},
	Stems: []string{"errata", "grep"}, Vague: "Bulletins are sometimes revised.",
	Harmful: "Trust the printed tables; later notes in a bulletin are unreliable.", HarmfulStems: []string{"later notes"},
	Description: "The printed table figure was given, not the one the bulletin's errata correct it to.",
	Wrong:       func(g string) string { return rotate(g) },
}}

// rotate moves the first character to the end ("4821" -> "8214"): the
// printed figure that an erratum corrects.
func rotate(s string) string {
	if len(s) < 2 {
		return s + "0"
	}
	return s[1:] + s[:1]
}

// officeqaFiller is prose between the table and the errata, long enough
// that the errata lie beyond a default read of 80 lines.
var officeqaFiller = []string{
	"Receipts and outlays are reported on a cash basis unless stated otherwise.",
	"Figures for the latest month are preliminary and may be revised.",
	"Marketable securities are shown at face value.",
	"Holdings of government accounts are excluded from the public debt totals.",
	"Seasonal factors are not applied to the series in this section.",
}

func writeOfficeQA(dir string, size Size, seed int64) (*Manifest, error) {
	active := append([]string{OfficeQAErrata}, pickRules(newRNG("officeqa", size, seed, "rules"), officeqaRules, max(size.Rules-1, 1))...)
	periods := []string{"2019-03", "2019-06", "2019-09", "2019-12", "2020-03", "2020-06"}
	kinds := []string{"notes", "bonds", "bills"}
	type row struct{ cells []string }
	docs := filepath.Join(dir, "docs")
	var werr error
	rows := splits(size, func(split string, i int) row {
		r := newRNG("officeqa", size, seed, fmt.Sprintf("%s/%d", split, i))
		rules := itemRules(r, active)
		stem := fmt.Sprintf("bulletin_synth_%s_%04d", split, i+1)
		period := pick(r, periods)
		names := append([]string(nil), entityNames...)
		r.Shuffle(len(names), func(a, b int) { names[a], names[b] = names[b], names[a] })
		nRows := 6 + r.IntN(5)
		asked := r.IntN(nRows)
		gold := Value(r)
		needErrata := hasRule(rules, OfficeQAErrata)
		var lines []string
		add := func(s string) int { lines = append(lines, s); return len(lines) }
		add(fmt.Sprintf("TREASURY BULLETIN (SYNTHETIC) - ISSUE %s", period))
		add("")
		add("SECTION FD. FEDERAL DEBT")
		add("TABLE FD-2. DEBT HELD BY THE PUBLIC BY SERIES (MILLIONS OF DOLLARS)")
		add("Series | Period | Amount")
		var series string
		askedLine, errata := 0, []string{}
		for k := range nRows {
			name := names[k] + " " + kinds[k%len(kinds)]
			v := Value(r)
			if k == asked {
				series, v = name, gold
				if needErrata {
					v = rotate(gold)
				}
			}
			n := add(fmt.Sprintf(OfficeQARow, name, period, v))
			switch {
			case k == asked:
				askedLine = n
			case r.Chance(0.3):
				errata = append(errata, fmt.Sprintf(OfficeQAErrLine, n, Value(r)))
			}
		}
		tableEnd := len(lines)
		for len(lines) < 90 {
			add(pick(r, officeqaFiller))
		}
		if needErrata {
			errata = append(errata, fmt.Sprintf(OfficeQAErrLine, askedLine, gold))
		}
		r.Shuffle(len(errata), func(a, b int) { errata[a], errata[b] = errata[b], errata[a] })
		errStart := len(lines)
		for _, e := range errata {
			add(e)
		}
		text := strings.Join(lines, "\n") + "\n"
		if err := atomicfile.Write(filepath.Join(docs, "transformed", stem+".txt"), []byte(text)); err != nil && werr == nil {
			werr = err
		}
		pages := map[string]any{"pages": []map[string]any{
			{"page": 1, "text": strings.Join(lines[:3], "\n")},
			{"page": 2, "text": strings.Join(lines[3:tableEnd], "\n")},
			{"page": 3, "text": strings.Join(lines[tableEnd:errStart], "\n")},
			{"page": 4, "text": strings.Join(lines[errStart:], "\n")},
		}}
		if err := atomicfile.WriteJSON(filepath.Join(docs, "jsons", stem+".json"), pages); err != nil && werr == nil {
			werr = err
		}
		q := fmt.Sprintf(OfficeQAAsk, series, period)
		for _, id := range rules {
			ru, _ := LookupRule(id)
			q += fmt.Sprintf(OfficeQAConcern, ru.Cue)
		}
		files, _ := json.Marshal([]string{stem + ".txt"})
		return row{cells: []string{fmt.Sprintf("synth-officeqa-%s-%04d", split, i+1), q, gold, taskType(rules),
			string(files), fmt.Sprintf("https://example.org/synthetic-treasury/%s.pdf?page=2", stem), split}}
	})
	if werr != nil {
		return nil, werr
	}
	counts := map[string]int{}
	header := []string{"uid", "question", "ground_truth", "category", "source_files", "source_docs", "split"}
	for _, sp := range []string{"train", "val", "test"} {
		var buf bytes.Buffer
		w := csv.NewWriter(&buf)
		_ = w.Write(header)
		for _, rw := range rows[sp] {
			_ = w.Write(rw.cells)
		}
		w.Flush()
		if err := w.Error(); err != nil {
			return nil, err
		}
		if err := atomicfile.Write(filepath.Join(dir, sp, "items.csv"), buf.Bytes()); err != nil {
			return nil, err
		}
		counts[sp] = len(rows[sp])
	}
	seedFile, err := writeSeedSkill(dir, SeedSkill("Answering questions from Treasury bulletins", officeqaGeneral, active, newRNG("officeqa", size, seed, "seed-skill")))
	if err != nil {
		return nil, err
	}
	return &Manifest{Counts: counts, ItemFields: header, Rules: active, SeedSkill: seedFile,
		Notes: "A synthetic world (a test double), not real benchmark data. The corpus is docs/ (transformed/ text, jsons/ parsed pages): set env.docs_dir: docs."}, nil
}

func hasRule(rules []string, id string) bool {
	for _, r := range rules {
		if r == id {
			return true
		}
	}
	return false
}

const officeqaGeneral = "Find the table row the question names in the bulletin and report its figure.\n\n## General\n- Search the document before you answer.\n- Put only the final answer inside the answer tags."
