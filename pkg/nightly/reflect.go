package nightly

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/skillfleet/skillfleet/internal/jsonx"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

// Failure is one failed replay shown to the reflector: Got and Why are
// the (worst) failed attempt.
type Failure struct {
	TaskID string `json:"task_id"`
	Intent string `json:"intent"`
	Wanted string `json:"wanted"`
	Got    string `json:"got"`
	Why    string `json:"why"`
	// With several attempts at the task (dream rollouts): how many there
	// were, how many passed, the worst one's gate score, and the best one
	// when it scored higher than the worst.
	Attempts int      `json:"attempts,omitempty"`
	Passed   int      `json:"passed,omitempty"`
	Score    float64  `json:"score,omitempty"`
	Best     *Attempt `json:"best_attempt,omitempty"`
}

// Attempt is one judged attempt shown to the reflector.
type Attempt struct {
	Reply string  `json:"reply"`
	Score float64 `json:"score"`
	Why   string  `json:"why,omitempty"`
}

// ReflectInput is the reflector's payload.
type ReflectInput struct {
	Kind string `json:"kind"`
	// Document is "skill" or "memory"; Current its learned lines.
	Document    string    `json:"document"`
	Current     []string  `json:"current_lines"`
	Failures    []Failure `json:"failures"`
	Budget      int       `json:"budget"`
	Preferences string    `json:"preferences,omitempty"`
	// Lessons are the slow memory: what earlier nights' gates decided
	// about edits of this document, one line each.
	Lessons []string `json:"lessons,omitempty"`
	// Package, for a skill that is a package, shows its other files:
	// an edit may then create or append a reference file.
	Package *PackageView `json:"package,omitempty"`
}

// PackageView is what the reflector sees of a skill package besides the
// learned lines of its SKILL.md: SKILL.md outside the block (where it
// says what lives where) and every other file, each clipped.
type PackageView struct {
	Entry string        `json:"skill_md"`
	Files []PackageFile `json:"files"`
}

// PackageFile is one file of a [PackageView].
type PackageFile struct {
	Path string `json:"path"`
	Text string `json:"text"`
}

// ViewPackage returns the reflector's view of a skill package carried as
// text (a bundle, or a plain SKILL.md for a package of one file), every
// text redacted and clipped; nil for a bundle that does not decode.
func ViewPackage(doc string) *PackageView {
	p, err := skillpkg.Decode(doc)
	if err != nil {
		return nil
	}
	v := &PackageView{Entry: Redact(clip(OutsideBlock(p.Entry()), 2000)), Files: []PackageFile{}}
	for _, name := range p.Paths() {
		if name == skillpkg.EntryFile {
			continue
		}
		text, _ := p.File(name)
		v.Files = append(v.Files, PackageFile{Path: name, Text: Redact(clip(text, 1500))})
	}
	return v
}

// ReflectReply is the reflector's reply schema.
type ReflectReply struct {
	Edits []Edit `json:"edits"`
}

// Reflect asks model for at most in.Budget edits to the learned block that
// would fix the failures (≤ 8 shown). An unusable reply is retried once
// with a stricter instruction; a second unusable reply is an error.
func Reflect(ctx context.Context, m llm.Model, name string, in ReflectInput) ([]Edit, llm.Usage, int, error) {
	in.Kind = KindReflect
	if len(in.Failures) > 8 {
		in.Failures = in.Failures[:8]
	}
	for i := range in.Failures {
		f := &in.Failures[i]
		f.Intent, f.Wanted, f.Got, f.Why = Redact(clip(f.Intent, 400)), Redact(clip(f.Wanted, 400)), Redact(clip(f.Got, 600)), Redact(clip(f.Why, 300))
		if f.Best != nil {
			b := *f.Best
			b.Reply, b.Why = Redact(clip(b.Reply, 600)), Redact(clip(b.Why, 300))
			f.Best = &b
		}
	}
	in.Preferences = Redact(in.Preferences)
	for i, l := range in.Lessons {
		in.Lessons[i] = Redact(clip(l, 2*maxLessonText))
	}
	var usage llm.Usage
	calls := 0
	instr := fmt.Sprintf("The %s document's learned lines are below, with replies that failed the user's recurring tasks. "+
		"Propose at most %d edits to the learned lines, each a short imperative habit that would have made the failed replies pass. "+
		"Answer with one JSON object {\"edits\": [{\"op\": \"add|replace|delete\", \"content\", \"anchor\", \"rationale\"}]}.", in.Document, in.Budget)
	if len(in.Lessons) > 0 {
		instr += " \"lessons\" are earlier nights' edits and what their gate decided: do not propose again an edit the gate rejected " +
			"(a lower or equal val score), unless tonight's failures show what it would now fix."
	}
	if slices.ContainsFunc(in.Failures, func(f Failure) bool { return f.Best != nil }) {
		instr += " Some tasks were attempted several times under the same document: for those, \"got\" is the worst attempt and " +
			"\"best_attempt\" the best one, with their scores. Look for what the better attempt did that the worse did not, and make it a habit."
	}
	if in.Package != nil {
		instr += " The skill is a package: \"package\" shows its SKILL.md outside the learned lines and its other files. " +
			"Where SKILL.md says rules of a kind live in references/, put such a rule there instead: an edit " +
			"{\"file\": \"references/<topic>.md\", \"op\": \"create_file|append\", \"content\", \"rationale\"} creates that " +
			"reference file or appends to one that exists. Edits without \"file\" change the learned lines. Nothing else can be edited."
	}
	for attempt := range 2 {
		if attempt == 1 {
			instr += " Reply with the JSON object only, no prose."
		}
		msgs, err := payloadMessages("You improve an agent's skill document from its failures, with small, general edits.", instr, in)
		if err != nil {
			return nil, usage, calls, err
		}
		zero := 0.0
		resp, err := m.Chat(ctx, &llm.Request{Model: name, Messages: msgs, Temperature: &zero, Stage: "sleep_reflect"})
		if resp != nil {
			usage.Add(resp.Usage)
			usage.Add(resp.FailedUsage)
			calls += max(resp.Attempts, 1)
		}
		if err != nil {
			return nil, usage, calls, err
		}
		raw, _, err := jsonx.Extract(resp.Content)
		var rep ReflectReply
		if err == nil {
			err = json.Unmarshal(raw, &rep)
		}
		if err != nil {
			continue
		}
		if len(rep.Edits) > in.Budget {
			rep.Edits = rep.Edits[:in.Budget]
		}
		return rep.Edits, usage, calls, nil
	}
	return nil, usage, calls, &llm.Error{Kind: llm.KindInvalidReply, Msg: "reflect: two replies without a usable {\"edits\": [...]} object"}
}
