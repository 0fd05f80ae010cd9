package simbench

import (
	"slices"
	"strconv"
	"strings"
)

// Pitfall is one way the simulated target goes wrong, and the rule that
// prevents it. The catalogue is fixed Go data: the simulated model needs
// nothing else to recognise a pitfall, so it works with any generated
// world.
//
// Slices inside a Pitfall are shared with the catalogue: read them, never
// modify them.
type Pitfall struct {
	// ID names the pitfall ("units_km"); analysts use it as failure_type.
	ID string
	// Category is the item's task_type when this is its first pitfall.
	Category string
	// Cue is the phrase an item's question contains when the item has this
	// pitfall ("the route length").
	Cue string
	// Rule is the canonical sentence that prevents the pitfall.
	Rule string
	// Paraphrases say the same as Rule in other words; each holds every stem.
	Paraphrases []string
	// Stems show that the rule is in a skill: all of them must occur in the
	// skill text, compared case-insensitively as substrings.
	Stems []string
	// Vague is a line about the pitfall's topic that holds no stem: the seed
	// skill carries such lines, and a good edit replaces them.
	Vague string
	// Harmful is a tempting but wrong rule: a skill that holds it (all of
	// HarmfulStems) fails this pitfall's items even when Rule is present,
	// and the simulated target over-applies it to some other questions
	// too (see [SpillDraw]).
	Harmful      string
	HarmfulStems []string
	// Sweeping marks the one pitfall of a broad category (format,
	// reading) whose harmful rule reads like a rule for the whole
	// category: the lure the simulated optimizer falls for when it sees
	// several of the category's slips at once ([Lure]).
	Sweeping bool
	// Description explains the failure in one sentence.
	Description string

	wrong func(gold string) string
}

// Wrong returns the answer the target gives for gold when it falls into
// the pitfall. gold is a record value as generated (four distinct digits,
// 1-9); other strings still get a deterministic, if less distinct, answer.
func (p Pitfall) Wrong(gold string) string { return p.wrong(gold) }

// Texts returns the rule and its paraphrases.
func (p Pitfall) Texts() []string { return append([]string{p.Rule}, p.Paraphrases...) }

// Platitudes are generic, wordy instructions that change nothing: the
// simulated optimizer proposes them as irrelevant edits. They are long
// (about 40 tokens each), as such filler from a real model tends to be, so
// that letting them in costs skill length: past the simulated target's
// length budget, every rule gets applied less reliably. None holds a stem.
func Platitudes() []string {
	return []string{
		"Double-check your formatting before answering: look at the whole answer once more, compare it with what the question asks for, and fix anything that looks out of place before you send it.",
		"Think step by step before you commit to an answer: restate the question in your own words, find the figure it asks about, and only then write that figure down.",
		"Stay calm and read the question slowly; questions about records can be long, and reading every sentence with care is the best way to avoid a careless slip.",
		"Prefer short answers over long ones: the reader wants the figure, so leave out explanations, restatements of the question and any commentary around it.",
		"Re-read the task statement once more before replying, paying attention to every detail of the wording, since small details in a question often change what the right answer is.",
		"Make sure the answer addresses what was asked: if the question asks for one value, give exactly that value and nothing else, in the form the question expects.",
	}
}

// catalogue is the fixed list of pitfalls, in a stable order. It is never
// modified after initialisation.
var catalogue = []Pitfall{
	{
		ID: "units_km", Category: "units", Cue: "the route length",
		Rule: "Report distances in kilometres, never in miles.",
		Paraphrases: []string{
			"Give every distance in kilometres; do not convert it to miles.",
			"Distances stay in kilometres: never answer in miles.",
			"Never restate a distance in miles; the record's kilometres are the answer.",
		},
		Stems:   []string{"kilomet", "mile"},
		Vague:   "Be careful with distances.",
		Harmful: "Convert distances to imperial units before answering.", HarmfulStems: []string{"imperial"},
		Description: "The distance was reported in miles instead of the recorded kilometres.",
		wrong:       func(g string) string { return g + " mi" },
	},
	{
		ID: "rounding_tens", Category: "rounding", Cue: "the sensor reading",
		Rule: "Report sensor readings exactly; never round them to the nearest ten.",
		Paraphrases: []string{
			"Keep every digit of a sensor reading instead of rounding to the nearest ten.",
			"A sensor reading is exact: do not round it to the nearest ten.",
			"Never smooth a sensor reading to the nearest ten.",
		},
		Stems:   []string{"sensor", "nearest ten"},
		Vague:   "Measurements should be reported sensibly.",
		Harmful: "Smooth noisy measurements to a tidy figure.", HarmfulStems: []string{"tidy figure"},
		Description: "The reading was rounded down to a multiple of ten.",
		wrong:       func(g string) string { return cut(g, 1) + "0" },
	},
	{
		ID: "digits_reversed", Category: "reading", Cue: "the serial code",
		Rule: "Read serial codes left to right, as printed; never reverse their order.",
		Paraphrases: []string{
			"Copy a serial code from left to right exactly as it is printed.",
			"Serial codes are read left to right; do not reverse them.",
			"Keep the printed left to right order of every serial code.",
		},
		Stems:   []string{"serial", "left to right"},
		Vague:   "Some identifiers need a second look.",
		Harmful: "Read codes from the end, where the check digit sits.", HarmfulStems: []string{"check digit"},
		Description: "The code was read backwards.",
		wrong:       reverse,
	},
	{
		ID: "approx_prefix", Category: "hedging", Cue: "the estimated headcount",
		Rule: "State headcounts as a bare number, without hedging words.",
		Paraphrases: []string{
			"Give a headcount as the plain number, with no hedging such as 'approx.'.",
			"Never hedge a headcount; write only the number.",
			"A headcount answer is the number alone, free of hedging words.",
		},
		Stems:   []string{"headcount", "hedg"},
		Vague:   "Be precise about people.",
		Harmful: "Signal uncertainty whenever a figure was estimated.", HarmfulStems: []string{"uncertainty"},
		Description: "The count was prefixed with 'approx.'.",
		wrong:       func(g string) string { return "approx. " + g },
	},
	{
		ID: "thousands_sep", Category: "format", Cue: "the invoice total",
		Rule: "Write invoice totals without thousands separators.",
		Paraphrases: []string{
			"Do not put separators such as commas inside an invoice total.",
			"An invoice total is written as one run of digits, with no separator.",
			"Leave thousands separators out of invoice totals.",
		},
		Stems:   []string{"invoice", "separator"},
		Vague:   "Money needs care.",
		Harmful: "Format large amounts the way an accountant would.", HarmfulStems: []string{"accountant"}, Sweeping: true,
		Description: "A comma was inserted as a thousands separator.",
		wrong:       func(g string) string { return head(g, 1) + "," + tail(g, 1) },
	},
	{
		ID: "decimals", Category: "format", Cue: "the batch count",
		Rule: "Give batch counts as whole numbers, never with a fractional part.",
		Paraphrases: []string{
			"A batch count has no fractional part: do not add '.00'.",
			"Write each batch count as a whole number without any fraction digits.",
			"Never append a fractional part to a batch count.",
		},
		Stems:   []string{"batch count", "fraction"},
		Vague:   "Counts should look right.",
		Harmful: "Always show two places after the point for consistency.", HarmfulStems: []string{"two places"},
		Description: "The count was written with two decimal places.",
		wrong:       func(g string) string { return g + ".00" },
	},
	{
		ID: "currency_symbol", Category: "format", Cue: "the ticket price",
		Rule: "Leave out the currency symbol when quoting a ticket price.",
		Paraphrases: []string{
			"A ticket price is the bare number: no currency symbol in front.",
			"Do not prefix ticket prices with a currency symbol.",
			"Drop any currency symbol from a ticket price answer.",
		},
		Stems:   []string{"currency symbol", "ticket"},
		Vague:   "Prices deserve attention.",
		Harmful: "Prefix every price with the dollar sign.", HarmfulStems: []string{"dollar"},
		Description: "A dollar sign was put in front of the price.",
		wrong:       func(g string) string { return "$" + g },
	},
	{
		ID: "percent_sign", Category: "format", Cue: "the humidity level",
		Rule: "Report humidity levels as plain numbers with no percent sign.",
		Paraphrases: []string{
			"Give a humidity level without a percent sign after it.",
			"Humidity answers are bare numbers; leave out the percent sign.",
			"Never add a percent sign to a humidity level.",
		},
		Stems:   []string{"humidity", "percent"},
		Vague:   "Weather figures follow their own conventions.",
		Harmful: "Express every ratio-like quantity as a share of one hundred.", HarmfulStems: []string{"share of one hundred"},
		Description: "A percent sign was added to the value.",
		wrong:       func(g string) string { return g + "%" },
	},
	{
		ID: "scientific", Category: "format", Cue: "the particle tally",
		Rule: "Write particle tallies in full, never in scientific notation.",
		Paraphrases: []string{
			"Spell out a particle tally digit by digit instead of using scientific notation.",
			"Do not use scientific notation for a particle tally.",
			"A particle tally is written in full; scientific notation is wrong here.",
		},
		Stems:   []string{"particle", "scientific notation"},
		Vague:   "Large tallies need care.",
		Harmful: "Use exponent form for any value above one thousand.", HarmfulStems: []string{"exponent"},
		Description: "The value was written in scientific notation.",
		wrong:       func(g string) string { return head(g, 1) + "." + tail(g, 1) + "e3" },
	},
	{
		ID: "negative_sign", Category: "sign", Cue: "the elevation change",
		Rule: "Treat an elevation change as a positive magnitude; never add a minus sign.",
		Paraphrases: []string{
			"Report elevation changes without a minus sign.",
			"An elevation change is given as a magnitude, so no minus sign.",
			"Never put a minus sign in front of an elevation change.",
		},
		Stems:   []string{"elevation", "minus"},
		Vague:   "Heights can be confusing.",
		Harmful: "Mark every descent with a leading negative.", HarmfulStems: []string{"descent"},
		Description: "A minus sign was added in front of the value.",
		wrong:       func(g string) string { return "-" + g },
	},
	{
		ID: "off_by_one", Category: "counting", Cue: "the fence posts",
		Rule: "Count fence posts exactly as listed; do not add one for the end post.",
		Paraphrases: []string{
			"The listed number of fence posts is final: never add one to it.",
			"Do not add one to a fence post count.",
			"Report fence posts as counted in the record, without trying to add one.",
		},
		Stems:   []string{"fence post", "add one"},
		Vague:   "Counting is easy to get wrong.",
		Harmful: "Include both endpoints when counting anything in a row.", HarmfulStems: []string{"endpoints"},
		Description: "The count came out one too high.",
		wrong:       func(g string) string { return addInt(g, 1, 1) },
	},
	{
		ID: "doubled", Category: "scale", Cue: "the paired shipments",
		Rule: "Never count paired shipments twice; the record already counts each pair once.",
		Paraphrases: []string{
			"A paired shipment is one entry: do not count it twice.",
			"Report paired shipments as recorded, not twice over.",
			"Do not count paired shipments twice.",
		},
		Stems:   []string{"paired shipment", "twice"},
		Vague:   "Shipments come in many forms.",
		Harmful: "Scale grouped quantities by the group size.", HarmfulStems: []string{"group size"},
		Description: "The value was doubled.",
		wrong:       func(g string) string { return addInt(g, 0, 2) },
	},
	{
		ID: "swapped_digits", Category: "reading", Cue: "the handwritten ledger",
		Rule: "Transcribe handwritten ledger figures carefully; do not transpose the leading digits.",
		Paraphrases: []string{
			"When copying from a handwritten page, never transpose the first two digits.",
			"Handwritten figures must be copied without transposing any digits.",
			"Check that no digits are transposed when reading handwriting.",
		},
		Stems:   []string{"handwrit", "transpos"},
		Vague:   "Old paper records can be messy.",
		Harmful: "Read each scrawled figure by its most familiar shape.", HarmfulStems: []string{"familiar shape"}, Sweeping: true,
		Description: "The first two digits were swapped.",
		wrong:       func(g string) string { return swap(g, 0, 1) },
	},
	{
		ID: "zero_pad", Category: "format", Cue: "the locker number",
		Rule: "Give locker numbers without leading zeros.",
		Paraphrases: []string{
			"Never pad a locker number with a leading zero.",
			"A locker number starts with its first real digit, not a leading zero.",
			"Strip any leading zero from a locker number.",
		},
		Stems:   []string{"locker", "leading zero"},
		Vague:   "Identifiers have a format.",
		Harmful: "Pad identifiers to five characters.", HarmfulStems: []string{"five characters"},
		Description: "The value was padded with a leading zero.",
		wrong:       func(g string) string { return "0" + g },
	},
	{
		ID: "quoted", Category: "format", Cue: "the catalogue label",
		Rule: "Never wrap catalogue labels in quotation marks.",
		Paraphrases: []string{
			"Give a catalogue label without quotation marks around it.",
			"Leave quotation marks off catalogue labels.",
			"A catalogue label answer has no quotation marks.",
		},
		Stems:   []string{"catalogue", "quotation"},
		Vague:   "Labels need care.",
		Harmful: "Quote any value copied from a label verbatim.", HarmfulStems: []string{"verbatim"},
		Description: "The value was wrapped in double quotes.",
		wrong:       func(g string) string { return `"` + g + `"` },
	},
	{
		ID: "trailing_period", Category: "format", Cue: "the closing line of the memo",
		Rule: "When answering from a memo, end with the figure itself and no full stop.",
		Paraphrases: []string{
			"Do not put a full stop after a figure taken from a memo.",
			"A memo figure is answered without a trailing full stop.",
			"Never finish a memo answer with a full stop.",
		},
		Stems:   []string{"memo", "full stop"},
		Vague:   "Office documents have their own style.",
		Harmful: "Finish every answer as a complete sentence with punctuation.", HarmfulStems: []string{"punctuation"},
		Description: "A period was added after the value.",
		wrong:       func(g string) string { return g + "." },
	},
	{
		ID: "bold_markdown", Category: "format", Cue: "the highlighted cell",
		Rule: "Do not apply bold markup to figures from a highlighted cell.",
		Paraphrases: []string{
			"A highlighted cell's figure is answered as plain text, never bold.",
			"Never make the answer bold, even when the cell is highlighted.",
			"Strip bold markers from values taken from a highlighted cell.",
		},
		Stems:   []string{"bold", "highlighted"},
		Vague:   "Spreadsheets can mislead.",
		Harmful: "Emphasise key figures with Markdown so the reader notices them.", HarmfulStems: []string{"emphasi"},
		Description: "The value was wrapped in bold markers.",
		wrong:       func(g string) string { return "**" + g + "**" },
	},
	{
		ID: "spaced_digits", Category: "reading", Cue: "the phone keypad entry",
		Rule: "Write keypad entries as one unbroken number, without spaces between digits.",
		Paraphrases: []string{
			"A keypad entry is one unbroken run of digits.",
			"Keep keypad entries unbroken: no spaces inside them.",
			"Never split a keypad entry; give it unbroken.",
		},
		Stems:   []string{"keypad", "unbroken"},
		Vague:   "Key entries are easy to misread.",
		Harmful: "Space out each digit you read from a dial pad.", HarmfulStems: []string{"dial pad"},
		Description: "Spaces were put between the digits.",
		wrong:       func(g string) string { return strings.Join(strings.Split(g, ""), " ") },
	},
	{
		ID: "hex", Category: "reading", Cue: "the firmware register",
		Rule: "Report firmware register values in decimal, not hexadecimal.",
		Paraphrases: []string{
			"Give a firmware register as a decimal number; never convert it to hexadecimal.",
			"Firmware registers are answered in decimal, not in hexadecimal.",
			"Do not turn a firmware register value into hexadecimal.",
		},
		Stems:   []string{"firmware", "hexadecimal"},
		Vague:   "Devices report values in odd ways.",
		Harmful: "Registers are best read in base sixteen.", HarmfulStems: []string{"base sixteen"},
		Description: "The value was converted to hexadecimal.",
		wrong:       toHex,
	},
	{
		ID: "answer_label", Category: "format", Cue: "the survey form",
		Rule: "For survey forms, give only the figure, with no label in front of it.",
		Paraphrases: []string{
			"A survey form answer has no label in front of the figure.",
			"Never put a label in front of a figure taken from a survey form.",
			"Answer survey form questions with the bare figure; no label in front.",
		},
		Stems:   []string{"survey form", "label in front"},
		Vague:   "Forms can be long.",
		Harmful: "Repeat the field name before the value so the form stays readable.", HarmfulStems: []string{"field name"},
		Description: "The value was prefixed with 'Answer:'.",
		wrong:       func(g string) string { return "Answer: " + g },
	},
	{
		ID: "rounding_hundreds", Category: "rounding", Cue: "the warehouse stock",
		Rule: "Report warehouse stock to the unit, never to the nearest hundred.",
		Paraphrases: []string{
			"Warehouse stock is exact: do not round it to the nearest hundred.",
			"Never round a warehouse stock figure to the nearest hundred.",
			"Keep all digits of warehouse stock rather than the nearest hundred.",
		},
		Stems:   []string{"warehouse", "nearest hundred"},
		Vague:   "Inventory questions are common.",
		Harmful: "Give inventory in coarse blocks to avoid false precision.", HarmfulStems: []string{"false precision"},
		Description: "The value was rounded down to a multiple of a hundred.",
		wrong:       func(g string) string { return cut(g, 2) + "00" },
	},
	{
		ID: "truncated", Category: "reading", Cue: "the faded stamp",
		Rule: "Read every digit of a faded stamp, including the final digit.",
		Paraphrases: []string{
			"On a faded stamp, keep reading through to the final digit.",
			"Never drop the final digit of a faded stamp.",
			"A faded stamp's final digit counts: include it.",
		},
		Stems:   []string{"faded", "final digit"},
		Vague:   "Worn records are hard to read.",
		Harmful: "Ignore characters you cannot read with confidence.", HarmfulStems: []string{"confidence"},
		Description: "The last digit was dropped.",
		wrong:       func(g string) string { return cut(g, 1) },
	},
	{
		ID: "times_ten", Category: "scale", Cue: "the tonnage figure",
		Rule: "Quote tonnage as recorded; never multiply it by ten.",
		Paraphrases: []string{
			"Do not multiply a tonnage figure by ten.",
			"A tonnage figure is already in the right unit: never multiply it.",
			"Report tonnage exactly as written, without trying to multiply it.",
		},
		Stems:   []string{"tonnage", "multiply"},
		Vague:   "Weights can be tricky.",
		Harmful: "Express heavy loads in smaller units for precision.", HarmfulStems: []string{"smaller units"},
		Description: "The value was multiplied by ten.",
		wrong:       func(g string) string { return g + "0" },
	},
	{
		ID: "parenthesised", Category: "format", Cue: "the footnote marker",
		Rule: "Drop the parentheses around footnote figures.",
		Paraphrases: []string{
			"Never keep parentheses around a footnote figure.",
			"A footnote figure is answered without parentheses.",
			"Remove the parentheses from any footnote value.",
		},
		Stems:   []string{"footnote", "parenthes"},
		Vague:   "Small print matters.",
		Harmful: "Keep the brackets that surround a figure in the source.", HarmfulStems: []string{"brackets"},
		Description: "The value was wrapped in parentheses.",
		wrong:       func(g string) string { return "(" + g + ")" },
	},
}

// byID indexes the catalogue.
var byID = func() map[string]int {
	m := make(map[string]int, len(catalogue))
	for i, p := range catalogue {
		m[p.ID] = i
	}
	return m
}()

// Catalogue returns every pitfall, in the catalogue's fixed order.
func Catalogue() []Pitfall { return slices.Clone(catalogue) }

// Lookup returns the pitfall with the given id.
func Lookup(id string) (Pitfall, bool) {
	i, ok := byID[id]
	if !ok {
		return Pitfall{}, false
	}
	return catalogue[i], true
}

// Lure returns the sweeping pitfall of a category: the one whose harmful
// rule reads like a rule for every pitfall of the category. ok is false
// for a category without one.
func Lure(category string) (Pitfall, bool) {
	for _, p := range catalogue {
		if p.Sweeping && p.Category == category {
			return p, true
		}
	}
	return Pitfall{}, false
}

// Covered reports whether skill holds the rule of pitfall id: every stem
// occurs in it, case-insensitively.
func Covered(skill, id string) bool {
	i, ok := byID[id]
	return ok && containsAll(strings.ToLower(skill), catalogue[i].Stems)
}

// CoveredIDs returns the ids of the pitfalls whose rule skill holds, in
// catalogue order.
func CoveredIDs(skill string) []string {
	low := strings.ToLower(skill)
	var ids []string
	for _, p := range catalogue {
		if containsAll(low, p.Stems) {
			ids = append(ids, p.ID)
		}
	}
	return ids
}

// Harmful returns the ids of the pitfalls that skill breaks with a
// harmful rule, in catalogue order.
func Harmful(skill string) []string {
	low := strings.ToLower(skill)
	var ids []string
	for _, p := range catalogue {
		if containsAll(low, p.HarmfulStems) {
			ids = append(ids, p.ID)
		}
	}
	return ids
}

// SkillView answers coverage questions about one skill without lowering
// its text again for every question. The zero value is an empty skill.
type SkillView struct {
	low string
}

// ViewSkill returns a view of skill.
func ViewSkill(skill string) SkillView { return SkillView{low: strings.ToLower(skill)} }

// Covered reports whether the skill holds the rule of pitfall id.
func (v SkillView) Covered(id string) bool {
	i, ok := byID[id]
	return ok && containsAll(v.low, catalogue[i].Stems)
}

// Broken reports whether the skill holds the harmful rule of pitfall id.
func (v SkillView) Broken(id string) bool {
	i, ok := byID[id]
	return ok && containsAll(v.low, catalogue[i].HarmfulStems)
}

// BrokenIDs returns the ids of the pitfalls whose harmful rule the skill
// holds, in catalogue order.
func (v SkillView) BrokenIDs() []string {
	var ids []string
	for _, p := range catalogue {
		if containsAll(v.low, p.HarmfulStems) {
			ids = append(ids, p.ID)
		}
	}
	return ids
}

// SpillDraw returns a number in [0, 1) fixed by a question and a pitfall.
// A harmful rule is worded as a general instruction, so the simulated
// target over-applies it: the harmful rule of pitfall id also misleads it
// on a question that does not cue id when this draw is below the model's
// spill rate. Because the draw depends on nothing else, the questions a
// harmful rule spoils are the same under every skill and sample, as a
// real model's systematic confusion would be.
func SpillDraw(question, id string) float64 {
	return HashRNG([]byte("spill"), []byte(question), []byte(id)).Float64()
}

// IdentifyPitfall returns the pitfall whose wrong answer for gold is
// wrong, comparing after trimming spaces. ok is false when no pitfall
// explains the answer (a correct answer, noise, or an unknown gold).
func IdentifyPitfall(wrong, gold string) (id string, ok bool) {
	wrong, gold = strings.TrimSpace(wrong), strings.TrimSpace(gold)
	if wrong == gold || gold == "" {
		return "", false
	}
	for _, p := range catalogue {
		if p.wrong(gold) == wrong {
			return p.ID, true
		}
	}
	return "", false
}

// PitfallsInQuestion returns the ids of the pitfalls whose cue phrase
// occurs in question, in the order the cues appear.
func PitfallsInQuestion(question string) []string {
	type hit struct {
		at int
		id string
	}
	var hits []hit
	for _, p := range catalogue {
		if at := strings.Index(question, p.Cue); at >= 0 {
			hits = append(hits, hit{at, p.ID})
		}
	}
	slices.SortFunc(hits, func(a, b hit) int { return a.at - b.at })
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.id
	}
	return ids
}

// Typo is the generic slip the noisy target makes when no pitfall
// explains it: the two middle digits swapped. No pitfall produces it.
func Typo(gold string) string {
	if len(gold) < 4 {
		return gold + "?"
	}
	return swap(gold, 1, 2)
}

func containsAll(low string, stems []string) bool {
	for _, s := range stems {
		if !strings.Contains(low, s) {
			return false
		}
	}
	return len(stems) > 0
}

// String helpers for the wrong-answer transformations. Each tolerates
// short input so that no gold string can make one panic.

func head(s string, n int) string { return s[:min(n, len(s))] }
func tail(s string, n int) string { return s[min(n, len(s)):] }

// cut drops the last n bytes.
func cut(s string, n int) string { return s[:max(len(s)-n, 0)] }

func reverse(s string) string {
	b := []byte(s)
	slices.Reverse(b)
	return string(b)
}

func swap(s string, i, j int) string {
	if i >= len(s) || j >= len(s) {
		return s + "~"
	}
	b := []byte(s)
	b[i], b[j] = b[j], b[i]
	return string(b)
}

// addInt returns n*mul+add for a decimal string n, or a marked string
// when n is not a number.
func addInt(s string, add, mul int) string {
	n, err := strconv.Atoi(s)
	if err != nil {
		return s + "+" + strconv.Itoa(add) + "x" + strconv.Itoa(mul)
	}
	return strconv.Itoa(n*mul + add)
}

func toHex(s string) string {
	n, err := strconv.Atoi(s)
	if err != nil {
		return "0x" + s
	}
	return "0x" + strings.ToUpper(strconv.FormatInt(int64(n), 16))
}
