package nightly

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// Task origins: a task mined from tonight's sessions (or a tasks file), an
// archived task recalled from an earlier night, and a rephrasing of a
// train task made up for the night.
const (
	OriginReal   = "real"
	OriginRecall = "recall"
	OriginDream  = "dream"
)

// IsHeldOutOrigin reports whether a task of origin may be put in val or
// test: only a real task may; recalled and dreamed tasks are train only.
func IsHeldOutOrigin(origin string) bool { return origin == "" || origin == OriginReal }

// dreamFramings are the ways a dream task restates a train task: the
// request itself stays word for word inside each, so its judge still
// applies, while the words around it differ from the session's.
var dreamFramings = []string{
	"A colleague forwarded this request to you: %s",
	"%s\n\n(This came up again today; answer it as you would for the user.)",
	"Same project, another day. The user writes: %s",
	"Handle the following as a fresh request, with no earlier context: %s",
}

// DreamTasks returns factor rephrasings of each task, in order: origin
// dream, split train, id "<id>~dream<k>", DerivedFrom the task's id, the
// same judge, context and skill hint. A dream task never enters val or
// test ([AssignSplits] keeps it in train), so the gate never scores one.
func DreamTasks(tasks []Task, factor int) []Task {
	var out []Task
	for _, t := range tasks {
		for k := range max(factor, 0) {
			d := t
			d.ID = fmt.Sprintf("%s~dream%d", t.ID, k)
			d.Intent = fmt.Sprintf(dreamFramings[k%len(dreamFramings)], t.Intent)
			d.Origin, d.Split, d.DerivedFrom = OriginDream, SplitTrain, t.ID
			d.Tags = append(slices.Clip(t.Tags), OriginDream)
			d.Sessions = slices.Clone(t.Sessions)
			d.Judge.Checks = slices.Clone(t.Judge.Checks)
			out = append(out, d)
		}
	}
	return out
}

// Recalled is an archived task brought back into a night, and how similar
// it is to tonight's tasks.
type Recalled struct {
	Task Task
	// Similarity is the highest [Similarity] of the archived task's
	// intent to the intent of one of tonight's train tasks.
	Similarity float64
	// Like is the id of that task.
	Like string
}

// intentWords are the distinct lower-case words of three letters or more
// of a text (letters and digits; everything else separates words).
func intentWords(s string) map[string]bool {
	ws := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len([]rune(w)) >= 3 {
			ws[w] = true
		}
	}
	return ws
}

// Similarity is the Jaccard similarity of two intents' word sets (see
// intentWords): the words both share over the words either has, in
// [0, 1]; 0 when either has no word.
func Similarity(a, b string) float64 { return jaccard(intentWords(a), intentWords(b)) }

func jaccard(a, b map[string]bool) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	both := 0
	for w := range a {
		if b[w] {
			both++
		}
	}
	return float64(both) / float64(len(a)+len(b)-both)
}

// Recall returns at most k archived tasks most similar to tonight's train
// tasks, as train tasks of origin recall (id "recall:<id>", DerivedFrom
// the archived id), most similar first (ties: the newer archived task
// first). The similarity of an archived task is its highest [Similarity]
// to one of tonight's train tasks; a task with similarity 0 is never
// recalled. Left out: an archived task whose id is one of tonight's (or
// one a task of tonight derives from), one that is not real (a dream is
// never archived, but a hand-edited state may hold one), and one whose
// intent has the same words as one of tonight's val or test tasks (that
// would train on a held-out task's twin).
func Recall(tonight []Task, archive []Task, k int) []Recalled {
	if k <= 0 || len(archive) == 0 {
		return nil
	}
	skip := map[string]bool{}
	var train, heldOut []map[string]bool
	var trainIDs []string
	for _, t := range tonight {
		skip[t.ID] = true
		if t.DerivedFrom != "" {
			skip[t.DerivedFrom] = true
		}
		if t.Split == SplitTrain {
			train = append(train, intentWords(t.Intent))
			trainIDs = append(trainIDs, t.ID)
		} else {
			heldOut = append(heldOut, intentWords(t.Intent))
		}
	}
	type cand struct {
		Recalled
		age int
	}
	var cs []cand
	for i, a := range archive {
		if skip[a.ID] || !IsHeldOutOrigin(a.Origin) {
			continue
		}
		ws := intentWords(a.Intent)
		twin := slices.ContainsFunc(heldOut, func(h map[string]bool) bool { return jaccard(ws, h) == 1 })
		if twin {
			continue
		}
		best, like := 0.0, ""
		for j, tw := range train {
			if s := jaccard(ws, tw); s > best {
				best, like = s, trainIDs[j]
			}
		}
		if best > 0 {
			cs = append(cs, cand{Recalled{Task: a, Similarity: best, Like: like}, len(archive) - i})
		}
	}
	slices.SortStableFunc(cs, func(x, y cand) int {
		return cmp.Or(cmp.Compare(y.Similarity, x.Similarity), cmp.Compare(x.age, y.age))
	})
	var out []Recalled
	for _, c := range cs[:min(k, len(cs))] {
		r := c.Recalled
		t := r.Task
		t.ID, t.DerivedFrom, t.Origin, t.Split = "recall:"+t.ID, t.ID, OriginRecall, SplitTrain
		t.Tags = append(slices.Clip(t.Tags), OriginRecall)
		t.Judge.Checks = slices.Clone(t.Judge.Checks)
		r.Task = t
		out = append(out, r)
	}
	return out
}
