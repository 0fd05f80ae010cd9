package sim

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// Options tune the simulated model. The zero value gives the defaults.
type Options struct {
	// Epsilon is the chance that a target answer flips (right to wrong or
	// wrong to right). 0 = 0.03; negative = no noise.
	Epsilon float64
	// LengthBudget is the skill length, in tokens (bytes/4), beyond which
	// covered rules start to be missed. 0 = 400; negative = no limit.
	LengthBudget int
	// DilutionPer100 is how much each 100 tokens beyond LengthBudget lowers
	// the chance that a covered rule is applied. 0 = 0.04; negative = none.
	DilutionPer100 float64
	// HarmfulRate is q, the chance that an analyst proposal is harmful or
	// irrelevant instead of the right fix; such a mistake has the least
	// support (1). 0 = 0.2; negative = never. It also sets two sticky and
	// costlier kinds of mistake (doc.go, "What makes the mechanisms
	// matter"): the lure of a broad category, proposed instead of the
	// fixes with probability min(1, 5q) (always, by default) by an analyst
	// that sees two kinds of the category's slips at once, with the fixes'
	// support; and the padding of a reply whose budget far exceeds its
	// evidence, floor(q * spare slots) guesses (at most three).
	HarmfulRate float64
	// HarmSpill is the share of the questions that do not cue a harmful
	// rule's pitfall on which the target still over-applies that rule and
	// answers with the pitfall's wrong answer (the same questions under
	// every skill: [simbench.SpillDraw]). Harmful rules thus cost well
	// beyond their own pitfall, and a candidate holding one loses at the
	// gate once the skill is decent. 0 = 0.6; negative = none.
	HarmSpill float64
	// DiagnoseRate is the chance that a failure analyst sees through a
	// harmful line of the skill by itself. Otherwise it takes the line for
	// the skill's rule on that topic (it reads like one) and blames the
	// agent for not applying it; it always proposes deleting the line when
	// the meta skill names it or the step buffer lists it among rejected
	// edits. 0 = 0.15; negative = never; 1 = always.
	DiagnoseRate float64
	// ReproposeRate is r, the chance that an analyst proposes again an edit
	// its payload lists as rejected; having seen it fail, it gives it the
	// least support (1). 0 = 0.3; negative = never.
	ReproposeRate float64
	// Seed salts every reply, independently of the world's seed.
	Seed int64
	// TrajectoryPad, when positive, pads every target reply of the sim
	// benchmark to this many bytes (pad.go), so that rollouts carry
	// trajectories as large as a real agent's; no decision changes.
	TrajectoryPad int
}

func (o Options) withDefaults() Options {
	rate := func(v, def float64) float64 {
		switch {
		case v == 0:
			return def
		case v < 0:
			return 0
		default:
			return v
		}
	}
	o.Epsilon = rate(o.Epsilon, 0.03)
	o.DilutionPer100 = rate(o.DilutionPer100, 0.04)
	o.HarmfulRate = rate(o.HarmfulRate, 0.2)
	o.ReproposeRate = rate(o.ReproposeRate, 0.3)
	o.HarmSpill = rate(o.HarmSpill, 0.6)
	o.DiagnoseRate = rate(o.DiagnoseRate, 0.15)
	if o.LengthBudget == 0 {
		o.LengthBudget = 400
	}
	return o
}

// Model is the simulated target and optimizer model. It is safe for
// concurrent use and deterministic: a reply depends only on the request's
// messages, model name and seed, and the Options.
type Model struct {
	o Options
	// skills and questions cache what target answers read of a skill
	// and of a question.
	skills    *cache[skillFacts]
	questions *cache[questionFacts]
}

var _ llm.Model = (*Model)(nil)

// New returns a simulated model.
func New(o Options) *Model {
	return &Model{o: o.withDefaults(),
		skills:    &cache[skillFacts]{limit: maxCachedSkills, make: newSkillFacts},
		questions: &cache[questionFacts]{limit: maxCachedQuestions, make: newQuestionFacts}}
}

// KindTarget is what [RequestKind] returns for a target request.
const KindTarget = "target"

// RequestKind classifies a request: [KindTarget] for a target request (the
// sim benchmark's prompt), the payload's "kind" for an optimizer request,
// or "" when the request is neither.
func RequestKind(req *llm.Request) string {
	kind, _, isTarget, err := classify(req)
	switch {
	case isTarget:
		return KindTarget
	case err != nil:
		return ""
	default:
		return kind
	}
}

// classify reads a request: a target request has no ```json payload in its
// last user message and carries the sim benchmark's prompt markers; an
// optimizer request carries a payload with a kind.
func classify(req *llm.Request) (kind string, payload json.RawMessage, isTarget bool, err error) {
	user := lastUserText(req.Messages)
	if !strings.Contains(user, "```json") {
		if strings.Contains(user, simbench.AnswerInstruction) || strings.Contains(systemText(req.Messages), simbench.SkillOpen+"\n") {
			return "", nil, true, nil
		}
		return "", nil, false, errors.New("no ```json payload with a \"kind\" found in the last user message, and not a sim benchmark prompt")
	}
	kind, payload, err = prompts.ExtractPayload(user)
	if err != nil {
		return "", nil, false, fmt.Errorf("request payload: %w", err)
	}
	if kind == "" {
		return "", nil, false, errors.New("request payload has no \"kind\"")
	}
	return kind, payload, false, nil
}

// Chat answers one request. A target request gets an answer in
// <answer></answer>; an optimizer request gets a JSON reply in the shape
// its prompt asks for. A request the sim cannot read fails with an
// [llm.Error] of kind [llm.KindInvalidRequest] naming what it saw.
func (m *Model) Chat(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, &llm.Error{Kind: llm.KindOf(err), Msg: "sim", Err: err}
	}
	if req == nil {
		return nil, &llm.Error{Kind: llm.KindInvalidRequest, Msg: "sim: nil request"}
	}
	if isSleepPrompt(req) {
		// skillfleet sleep's prompts (a night on sim-llm over the API).
		return NewSleepAware(m).Chat(ctx, req)
	}
	var seed int64
	if req.Seed != nil {
		seed = *req.Seed
	}
	if w, ok := worldOf(req); ok {
		// A synthetic world's target request (world.go).
		content, calls := w.answer(m, req, seed)
		return m.worldResponse(req, content, calls), nil
	}
	content, ok := m.optimizeFast(req, seed)
	padded := false
	if !ok {
		kind, payload, isTarget, err := classify(req)
		if err != nil {
			return nil, &llm.Error{Kind: llm.KindInvalidRequest, Msg: "sim: " + err.Error()}
		}
		if isTarget {
			content = m.target(req, seed)
			padded = true
		} else {
			content, err = m.optimize(kind, payload, req.Model, seed)
			if err != nil {
				return nil, &llm.Error{Kind: llm.KindInvalidRequest, Msg: fmt.Sprintf("sim: %s request: %v", kind, err)}
			}
		}
	}
	finish := "stop"
	if req.MaxTokens > 0 && llm.EstimateTokens(content) > int64(req.MaxTokens) {
		content = strings.ToValidUTF8(content[:min(len(content), req.MaxTokens*4)], "")
		finish = "length"
	}
	if padded {
		content = pad(content, m.o.TrajectoryPad)
	}
	return &llm.Response{
		Content: content, FinishReason: finish, Model: req.Model, Attempts: 1,
		Usage: llm.Usage{InputTokens: InputTokens(req.Messages), OutputTokens: llm.EstimateTokens(content)},
	}, nil
}

// optimizeFast answers an optimizer request whose payload opens with its
// kind, as every rendered payload does, decoding the payload once
// (peekPayload, then optimize's strict decoding, which checks the rest).
// ok is false for any other request, and for any error, which Chat's full
// reading (classify, then optimize) then reports exactly as it would have.
func (m *Model) optimizeFast(req *llm.Request, seed int64) (content string, ok bool) {
	kind, payload, ok := peekPayload(req)
	if !ok {
		return "", false
	}
	content, err := m.optimize(kind, payload, req.Model, seed)
	return content, err == nil
}

// peekPayload returns the payload of an optimizer request and the kind
// its first bytes name, without decoding it: the caller's strict decoding
// checks the rest, and that the decoded kind is the same ([decode]).
func peekPayload(req *llm.Request) (kind string, payload json.RawMessage, ok bool) {
	p, err := prompts.LocatePayload(lastUserText(req.Messages))
	if err != nil {
		return "", nil, false
	}
	const open = `{"kind":"`
	if !strings.HasPrefix(p, open) {
		return "", nil, false
	}
	kind, _, found := strings.Cut(p[len(open):], `"`)
	if !found || kind == "" || strings.ContainsRune(kind, '\\') {
		return "", nil, false
	}
	return kind, json.RawMessage(p), true
}

// InputTokens is the sim's prompt token count: all message text, one token
// per four bytes, rounded up.
func InputTokens(msgs []llm.Message) int64 {
	n := 0
	for _, m := range msgs {
		n += len(m.Text())
	}
	return int64((n + 3) / 4)
}

// lastUserText is the text of the last user message.
func lastUserText(msgs []llm.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleUser {
			return msgs[i].Text()
		}
	}
	return ""
}

// systemText joins the texts of the system messages.
func systemText(msgs []llm.Message) string {
	var parts []string
	for _, m := range msgs {
		if m.Role == llm.RoleSystem {
			parts = append(parts, m.Text())
		}
	}
	return strings.Join(parts, "\n")
}

func i64(v int64) []byte { return []byte(strconv.FormatInt(v, 10)) }

var targetReasons = []string{
	"I located the record value in the question and wrote it in the form the skill asks for.",
	"The question quotes one record value; here it is, formatted as instructed.",
	"Reading the record and applying the guidance I was given, the answer is below.",
}

// target answers a sim benchmark question. The answer is right iff the
// skill covers every pitfall of the question, breaks none, and holds no
// harmful rule that spills over onto the question; else it is the wrong
// answer of the first pitfall that goes wrong. Dilution and noise
// are drawn from a generator seeded by the question, the skill's hash, the
// request seed, the model name and Options.Seed.
func (m *Model) target(req *llm.Request, seed int64) string {
	skill, _ := simbench.SkillOf(systemText(req.Messages))
	question := simbench.QuestionOf(lastUserText(req.Messages))
	f := m.skills.facts(skill)
	r := simbench.HashRNG([]byte("target"), []byte(req.Model), i64(m.o.Seed), []byte(question), f.sum[:], i64(seed))
	reason := targetReasons[r.IntN(len(targetReasons))]

	q := m.questions.facts(question)
	if !q.ok {
		return "I could not find a record value in the question.\n<answer>unknown</answer>"
	}
	base, ids := q.base, q.ids
	nz := m.drawNoise(r, len(ids))

	drop := m.dilution(f.tokens)
	bad := ""
	for _, id := range ids {
		applied := f.covered[id] && !r.Chance(drop)
		if !applied || f.broken[id] {
			bad = id
			break
		}
	}
	// A harmful rule is over-applied to some questions it does not
	// concern (the same questions whatever the skill).
	v := m.settle(question, ids, bad, func() []string { return f.brokenIDs }, nz)
	return reason + "\n<answer>" + v.dress(base) + "</answer>"
}

// skillFacts is what a target answer reads of a skill: its hash, its
// length in tokens, and which pitfalls' rules and harmful rules it holds.
type skillFacts struct {
	sum             [sha256.Size]byte
	tokens          int64
	covered, broken map[string]bool // by pitfall id
	brokenIDs       []string        // catalogue order
}

func newSkillFacts(skill string) *skillFacts {
	f := &skillFacts{sum: sha256.Sum256([]byte(skill)), tokens: llm.EstimateTokens(skill),
		covered: map[string]bool{}, broken: map[string]bool{}, brokenIDs: simbench.ViewSkill(skill).BrokenIDs()}
	for _, id := range simbench.CoveredIDs(skill) {
		f.covered[id] = true
	}
	for _, id := range f.brokenIDs {
		f.broken[id] = true
	}
	return f
}

// questionFacts is what a target answer reads of a question: its record
// value (ok: it has one) and the pitfalls it cues, in order.
type questionFacts struct {
	base string
	ok   bool
	ids  []string
}

func newQuestionFacts(question string) *questionFacts {
	q := &questionFacts{}
	if q.base, q.ok = simbench.BaseValue(question); q.ok {
		q.ids = simbench.PitfallsInQuestion(question)
	}
	return q
}

// Bounds of the caches: a run asks thousands of questions under a handful
// of skills at a time (current, candidates), and the paper preset has
// 2,000 questions; a sim server (sim-llm) serves the runs of a campaign at
// once. A skill's entry holds about its own size, a question's a few
// hundred bytes.
const (
	maxCachedSkills    = 256
	maxCachedQuestions = 16384
)

// cache maps a text (a skill, a question) to what the sim reads of it,
// computed once by make. It forgets everything when it holds limit
// entries. It is safe for concurrent use.
type cache[V any] struct {
	limit int
	make  func(string) *V

	mu sync.Mutex
	m  map[string]*V
}

func (c *cache[V]) facts(text string) *V {
	c.mu.Lock()
	v, ok := c.m[text]
	c.mu.Unlock()
	if ok {
		return v
	}
	v = c.make(text)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= c.limit {
		c.m = map[string]*V{}
	}
	c.m[text] = v
	return v
}

// decodeStrict decodes a payload into v, refusing fields v does not have:
// if a prompt's payload changes shape, the sim fails loudly.
func decodeStrict(payload json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode payload: %w", err)
	}
	return nil
}

// reply wraps a JSON reply object in a fence, after one sentence, as a
// real model tends to.
func reply(lead string, v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("encode reply: %w", err)
	}
	return lead + "\n\n```json\n" + strings.TrimRight(buf.String(), "\n") + "\n```\n", nil
}

// truncateRunes cuts s to at most n runes.
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n]))
}
