package materialize

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// monthlyFile is LiveMathematicianBench's monthly file name.
var monthlyFile = regexp.MustCompile(`^qa_(\d{6})_final\.json$`)

// LiveMath writes runnable LiveMathematicianBench splits: for each id of
// the manifest (SkillOpt's data/livemathematicianbench_id_split,
// "<month>:<no>"), the question numbered no of that month's
// qa_<month>_final.json in the source, as {id, month, no, paper_link,
// theorem, sketch, theorem_type, question, choices, correct_choice}. A
// question's multiple-choice part may sit under "mcq"; choices may be
// {label, text} objects, bare texts (labelled A, B, ...) or a label → text
// map; the correct choice an object or a label.
func LiveMath(manifestDir string, sources []string, out string) (Counts, error) {
	return byID(manifestDir, sources, out, byIDSpec{
		benchmark: "LiveMathematicianBench",
		key: func(file string, row map[string]any) (string, bool) {
			month := strings.TrimSpace(text(row["month"]))
			if month == "" {
				if m := monthlyFile.FindStringSubmatch(filepath.Base(file)); m != nil {
					month = m[1]
				}
			}
			no, ok := idString(row["no"])
			return month + ":" + no, ok && month != ""
		},
		fields: []string{"id", "month", "no", "paper_link", "theorem", "sketch", "theorem_type", "question", "choices", "correct_choice"},
		item:   liveMathItem,
	})
}

var choiceLabels = []string{"A", "B", "C", "D", "E", "F", "G"}

func liveMathItem(id string, row map[string]any) (map[string]any, error) {
	mcq, _ := row["mcq"].(map[string]any)
	pick := func(k string) any {
		if v, ok := mcq[k]; ok && v != nil {
			return v
		}
		return row[k]
	}
	question := strings.TrimSpace(text(pick("question")))
	if question == "" {
		return nil, fmt.Errorf("field question (or mcq.question) is missing or empty")
	}
	var choices []map[string]any
	switch cs := pick("choices").(type) {
	case []any:
		for i, c := range cs {
			label, body := "", ""
			if m, ok := c.(map[string]any); ok {
				label, body = strings.TrimSpace(text(m["label"])), strings.TrimSpace(text(m["text"]))
				if body == "" {
					body = strings.TrimSpace(text(m["content"]))
				}
			} else {
				body = strings.TrimSpace(text(c))
			}
			if label == "" && i < len(choiceLabels) {
				label = choiceLabels[i]
			}
			if body != "" {
				choices = append(choices, map[string]any{"label": label, "text": body})
			}
		}
	case map[string]any:
		for _, label := range slices.Sorted(func(yield func(string) bool) {
			for k := range cs {
				if !yield(k) {
					return
				}
			}
		}) {
			if body := strings.TrimSpace(text(cs[label])); body != "" {
				choices = append(choices, map[string]any{"label": strings.TrimSpace(label), "text": body})
			}
		}
	}
	if len(choices) < 2 {
		return nil, fmt.Errorf("field choices (or mcq.choices): want at least two choices")
	}
	var label, body string
	switch c := pick("correct_choice").(type) {
	case map[string]any:
		label, body = text(c["label"]), strings.TrimSpace(text(c["text"]))
	default:
		label = text(c)
	}
	label = strings.TrimRight(strings.ToUpper(strings.TrimSpace(label)), ".):")
	found := false
	for _, c := range choices {
		if c["label"] == label {
			found = true
			if body == "" {
				body = c["text"].(string)
			}
		}
	}
	if label == "" || (!found && body == "") {
		return nil, fmt.Errorf("field correct_choice: %q names none of the choices", label)
	}
	if !found {
		choices = append(choices, map[string]any{"label": label, "text": body})
		slices.SortFunc(choices, func(a, b map[string]any) int { return strings.Compare(a["label"].(string), b["label"].(string)) })
	}
	var types []any
	switch t := row["theorem_type"].(type) {
	case []any:
		for _, e := range t {
			if s := strings.TrimSpace(text(e)); s != "" {
				types = append(types, s)
			}
		}
	default:
		if s := strings.TrimSpace(text(t)); s != "" {
			types = append(types, s)
		}
	}
	month, _, _ := strings.Cut(id, ":")
	item := map[string]any{
		"id": id, "month": month, "no": row["no"], "question": question, "choices": choices,
		"correct_choice": map[string]any{"label": label, "text": body},
	}
	for _, f := range []string{"paper_link", "theorem", "sketch"} {
		if s := strings.TrimSpace(text(row[f])); s != "" {
			item[f] = s
		}
	}
	if len(types) > 0 {
		item["theorem_type"] = types
	}
	return item, nil
}
