package synth

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/skillfleet/skillfleet/internal/atomicfile"
)

// DocVQA's world: a scanned depot form (a PNG page drawn in a bitmap
// font) with several numbered fields; the question asks for one field's
// value. Its rules are format, unit and reading rules, which ANLS sees.
var docvqaRules = []string{
	"units_km", "rounding_tens", "approx_prefix", "negative_sign", "digits_reversed", "truncated",
	"quoted", "zero_pad", "currency_symbol", "off_by_one", "times_ten", "doubled",
}

// DocVQA phrasing, shared with the simulated model.
const (
	DocVQAAsk     = "What is printed in the %s field of the form?"
	DocVQAConcern = " The field holds %s."
	DocVQAField   = "%s: %s"
)

// docvqaFields are the labels of a form's numbered fields.
var docvqaFields = []string{"REF", "VALUE", "CODE", "COUNT", "LOT", "UNIT"}

// DocVQAColumns are the CSV columns of the world's items (SkillOpt's).
var DocVQAColumns = []string{"questionId", "question", "answer", "image_path", "topic", "docId",
	"ucsf_document_id", "ucsf_document_page_no", "source_split"}

func writeDocVQA(dir string, size Size, seed int64) (*Manifest, error) {
	active := pickRules(newRNG("docvqa", size, seed, "rules"), docvqaRules, size.Rules)
	type row struct {
		cells []string
		page  []string
		image string
	}
	doc := 1000
	rows := splits(size, func(split string, i int) row {
		r := newRNG("docvqa", size, seed, fmt.Sprintf("%s/%d", split, i))
		rules := itemRules(r, active)
		fields := append([]string(nil), docvqaFields...)
		r.Shuffle(len(fields), func(a, b int) { fields[a], fields[b] = fields[b], fields[a] })
		fields = fields[:3+r.IntN(3)]
		asked := pick(r, fields)
		gold := ""
		entity := pick(r, entityNames)
		page := []string{fmt.Sprintf("%s DEPOT - FORM %d", entity, 10+r.IntN(90)), ""}
		for _, f := range fields {
			v := Value(r)
			if f == asked {
				gold = v
			}
			page = append(page, fmt.Sprintf(DocVQAField, f, v))
		}
		page = append(page, "", "SIGNED: CLERK "+strconv.Itoa(1+r.IntN(40)))
		q := fmt.Sprintf(DocVQAAsk, asked)
		for _, id := range rules {
			ru, _ := LookupRule(id)
			q += fmt.Sprintf(DocVQAConcern, ru.Cue)
		}
		doc++
		image := fmt.Sprintf("documents/doc%05d_p1.png", doc)
		id := fmt.Sprintf("synth-docvqa-%s-%04d", split, i+1)
		imageCell := image
		if i%2 == 1 {
			// SkillOpt's released CSV gives some documents only as a
			// "document_path:" suffix of the question (spec §4.2); the
			// loader moves it to image_path.
			q, imageCell = q+" document_path:"+image, ""
		}
		return row{page: page, image: image, cells: []string{id, q, "['" + gold + "']", imageCell, taskType(rules),
			strconv.Itoa(doc), fmt.Sprintf("synth%05d", doc), "1", split}}
	})
	counts := map[string]int{}
	for _, sp := range []string{"train", "val", "test"} {
		var buf bytes.Buffer
		w := csv.NewWriter(&buf)
		_ = w.Write(DocVQAColumns)
		for _, rw := range rows[sp] {
			_ = w.Write(rw.cells)
			png, err := RenderPage(rw.page)
			if err != nil {
				return nil, err
			}
			if err := atomicfile.Write(filepath.Join(dir, rw.image), png); err != nil {
				return nil, err
			}
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
	seedFile, err := writeSeedSkill(dir, SeedSkill("Reading values off scanned forms", docvqaGeneral, active, newRNG("docvqa", size, seed, "seed-skill")))
	if err != nil {
		return nil, err
	}
	return &Manifest{Counts: counts, ItemFields: DocVQAColumns, Rules: active, SeedSkill: seedFile,
		Notes: "A synthetic world (a test double), not real benchmark data. image_path (or the question's document_path: suffix, on every second item) is relative to this directory."}, nil
}

const docvqaGeneral = "Find the field the question names on the page and copy its value.\n\n## General\n- Read the whole page before you answer.\n- Put only the final answer inside the answer tags."
