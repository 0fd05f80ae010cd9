// Package prompts holds the optimizer's prompt texts and renders each call
// into a system message and a user message.
//
// The texts are Markdown templates embedded from templates/: one file per
// prompt name and update mode (analyst_failure.patch.md, ranking.patch.md,
// lr_controller.md, ...), composed from shared blocks in partials.md. Each
// system message states the role, the rules (exact edit targets, protected
// regions, the budget, rejected edits) and the exact JSON reply schema of
// the matching reply type in types.go.
//
// The user message is a lead-in sentence, optional readable blocks (the
// step buffer and the meta skill), and the payload as the message's last
// ```json fence, whose "kind" is the prompt name; [ExtractPayload] reads it
// back.
package prompts

import (
	"bytes"
	"cmp"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"text/template"
)

//go:embed templates/*.md
var templateFS embed.FS

// Errors callers may branch on.
var (
	ErrUnknownPrompt = errors.New("unknown prompt")
	ErrUnknownMode   = errors.New("unknown mode")
)

// allModes are the update modes in their canonical order.
var allModes = []string{ModePatch, ModeRewrite, ModeFullRewrite}

// prompts lists every prompt name with its modes ("" = the prompt has no
// mode variants) and the Go type of its payload.
var prompts = map[string]struct {
	modes   []string
	payload reflect.Type
	side    string // failure or success, for analyst and merge prompts
	lead    string // the user message's lead-in
}{
	AnalystFailure: {allModes, reflect.TypeFor[AnalystInput](), "failure",
		"Analyse the failed trajectories in the input below against the current skill, and reply with the JSON object your instructions describe."},
	AnalystSuccess: {allModes, reflect.TypeFor[AnalystInput](), "success",
		"Analyse the successful trajectories in the input below against the current skill, and reply with the JSON object your instructions describe."},
	MergeFailure: {allModes, reflect.TypeFor[MergeInput](), "failure",
		"Merge the group of failure-derived proposals in the input below into one."},
	MergeSuccess: {allModes, reflect.TypeFor[MergeInput](), "success",
		"Merge the group of success-derived proposals in the input below into one."},
	MergeFinal: {allModes, reflect.TypeFor[MergeFinalInput](), "failure",
		"Combine the failure and success proposals in the input below into this step's final proposal."},
	Ranking: {[]string{ModePatch, ModeRewrite}, reflect.TypeFor[RankInput](), "",
		"Choose which of the candidate changes in the input below to apply at this step, within the budget."},
	LRController: {[]string{""}, reflect.TypeFor[LRInput](), "",
		"Decide how many of this step's candidate changes, listed in the input below, to apply."},
	Rewrite: {[]string{""}, reflect.TypeFor[RewriteInput](), "",
		"Rewrite the skill in the input below by applying the selected suggestions."},
	SlowUpdate: {[]string{""}, reflect.TypeFor[EpochInput](), "",
		"Compare the agent's results under the previous epoch's skill and the current skill, given in the input below, and write the new epoch guidance."},
	MetaSkill: {[]string{""}, reflect.TypeFor[EpochInput](), "",
		"Compare the agent's results under the previous epoch's skill and the current skill, given in the input below, and write your updated optimizer notes."},
	Consolidate: {[]string{""}, reflect.TypeFor[ConsolidateInput](), "",
		"Consolidate the execution notes in the input below into a shorter list."},
}

// Names returns every prompt name, sorted.
func Names() []string {
	names := make([]string, 0, len(prompts))
	for n := range prompts {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Modes returns the modes a prompt is rendered in: the update modes it
// has variants for, or [""] for a prompt without variants; nil for an
// unknown name.
func Modes(name string) []string {
	p, ok := prompts[name]
	if !ok {
		return nil
	}
	return slices.Clone(p.modes)
}

// RenderOptions adjusts one rendering.
type RenderOptions struct {
	// Bench names the benchmark whose notes ([Set.WithAnalystNotes]) are
	// added to analyst prompts; "" adds none.
	Bench string
	// Indent pretty-prints the JSON payload (two spaces); default compact.
	Indent bool
	// PayloadOnly leaves out the readable step-buffer and meta-skill blocks.
	PayloadOnly bool
}

// Set is the prompt texts of a run: the embedded templates, a benchmark's
// overrides, and its analyst notes. It is safe for concurrent use.
type Set struct {
	base *template.Template
	// overrides by "name" or "name.mode"; each is a clone of base holding
	// the override as the template named by its key.
	overrides map[string]*template.Template
	// broken holds override errors by prompt name.
	broken map[string]error

	mu    sync.RWMutex
	notes map[string]string // benchmark -> analyst notes; guarded by mu

	// systems caches rendered system prompts by systemKey.
	systems sync.Map
}

// embedded parses the embedded templates once per process; a Set only
// executes them, and each override parses into its own clone.
var embedded = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("").Option("missingkey=error").ParseFS(templateFS, "templates/*.md"))
})

// New returns the embedded prompts with overrides applied. An override's
// key is a prompt name ("analyst_failure", for every mode) or a name and
// mode ("analyst_failure.patch"); its value replaces that system prompt and
// may use the shared blocks of partials.md ({{template "edit_ops" .}}).
// A bad override (unknown key, template error) does not stop New: it is
// reported by [Set.Err] and by every Render of that prompt.
func New(overrides map[string]string) *Set {
	base := embedded()
	s := &Set{base: base, overrides: map[string]*template.Template{}, broken: map[string]error{}, notes: map[string]string{}}
	for key, text := range overrides {
		name, mode, _ := strings.Cut(key, ".")
		modes := Modes(name)
		if modes == nil || (mode != "" && !slices.Contains(modes, mode)) {
			s.broken[key] = fmt.Errorf("prompts: override %q: %w", key, ErrUnknownPrompt)
			continue
		}
		t, err := template.Must(base.Clone()).New(key).Parse(text)
		if err == nil {
			err = t.Execute(io.Discard, newTemplateData(name, cmp.Or(mode, modes[0])))
		}
		if err != nil {
			s.broken[key] = fmt.Errorf("prompts: override %q: %w", key, err)
			continue
		}
		s.overrides[key] = t
	}
	return s
}

// Err reports the overrides New could not use, or nil.
func (s *Set) Err() error {
	errs := make([]error, 0, len(s.broken))
	for _, k := range slices.Sorted(maps.Keys(s.broken)) {
		errs = append(errs, s.broken[k])
	}
	return errors.Join(errs...)
}

// WithAnalystNotes sets a benchmark's notes (its failure taxonomy, what its
// scorer checks), added to every analyst system prompt rendered with
// RenderOptions.Bench = bench. It returns s.
func (s *Set) WithAnalystNotes(bench, notes string) *Set {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notes[bench] = strings.TrimSpace(notes)
	return s
}

// templateData is what the templates see.
type templateData struct {
	Name string
	Mode string
	// Side is failure or success (analysts and merges).
	Side string
	// Key is the JSON key of the mode's item list.
	Key string
	// Item and Items name a mode's items: edit, suggestion, skill candidate.
	Item  string
	Items string
}

func newTemplateData(name, mode string) templateData {
	d := templateData{Name: name, Mode: mode, Side: prompts[name].side, Key: PayloadKey(mode)}
	switch mode {
	case ModeRewrite:
		d.Item, d.Items = "suggestion", "suggestions"
	case ModeFullRewrite:
		d.Item, d.Items = "skill candidate", "skill candidates"
	default:
		d.Item, d.Items = "edit", "edits"
	}
	return d
}

// Render returns the system and user messages of one optimizer call.
//
// payload is the prompt's input type (AnalystInput for the analysts,
// MergeInput, MergeFinalInput, RankInput, LRInput, RewriteInput,
// EpochInput, ConsolidateInput), a pointer to it, or its JSON
// (json.RawMessage or []byte). An empty Kind (and Mode) is filled in; a
// different one is an error. mode is one of the prompt's [Modes]; a prompt
// without variants also accepts (and ignores) any update mode.
func (s *Set) Render(name, mode string, payload any, opts RenderOptions) (system, user string, err error) {
	p, ok := prompts[name]
	if !ok {
		return "", "", fmt.Errorf("prompts: %q: %w", name, ErrUnknownPrompt)
	}
	if !slices.Contains(p.modes, mode) {
		// A prompt without variants ignores the run's update mode.
		if p.modes[0] != "" || !slices.Contains(allModes, mode) {
			return "", "", fmt.Errorf("prompts: %s: mode %q: %w", name, mode, ErrUnknownMode)
		}
		mode = ""
	}
	v, err := normalizePayload(name, mode, p.payload, payload)
	if err != nil {
		return "", "", err
	}
	system, err = s.system(name, mode, v, opts)
	if err != nil {
		return "", "", err
	}
	user, err = userMessage(p.lead, v, opts)
	if err != nil {
		return "", "", fmt.Errorf("prompts: %s: %w", name, err)
	}
	return system, user, nil
}

// systemKey is what a system prompt depends on besides the Set's
// templates: the prompt and mode, the blocks added to it, and the
// benchmark notes.
type systemKey struct {
	name, mode                 string
	skillAware, pkg, describes bool
	notes                      string
}

func (s *Set) system(name, mode string, v reflect.Value, opts RenderOptions) (string, error) {
	for _, key := range []string{name + "." + mode, name} {
		if err := s.broken[key]; err != nil {
			return "", err
		}
	}
	analyst := name == AnalystFailure || name == AnalystSuccess
	k := systemKey{name: name, mode: mode}
	if analyst {
		k.skillAware = v.Interface().(AnalystInput).SkillAware && mode != ModeFullRewrite
		if opts.Bench != "" {
			s.mu.RLock()
			k.notes = s.notes[opts.Bench]
			s.mu.RUnlock()
		}
	}
	if mode == ModePatch {
		k.pkg = IsPackage(payloadSkill(v))
		k.describes = trainsDescription(v)
	}
	// A run renders the same few system prompts hundreds of times.
	if text, ok := s.systems.Load(k); ok {
		return text.(string), nil
	}
	text, err := s.renderSystem(k)
	if err != nil {
		return "", err
	}
	s.systems.Store(k, text)
	return text, nil
}

// renderSystem executes the templates of one system prompt.
func (s *Set) renderSystem(k systemKey) (string, error) {
	name, mode := k.name, k.mode
	data := newTemplateData(name, mode)
	t, tname := s.base, name+".md"
	if mode != "" {
		tname = name + "." + mode + ".md"
	}
	for _, key := range []string{name + "." + mode, name} {
		if o, ok := s.overrides[key]; ok {
			t, tname = o, key
			break
		}
	}
	var buf strings.Builder
	if err := t.ExecuteTemplate(&buf, tname, data); err != nil {
		return "", fmt.Errorf("prompts: %s: %w", name, err)
	}
	text := buf.String()

	// Blocks that extend the rules or the reply schema go before the
	// closing reply-format section when there is one, in this order: the
	// skill-aware block (analysts), the package rules (package.md: edits
	// name their file) and the description op (description.md: the run
	// trains the description).
	var blocks []string
	if k.skillAware {
		blocks = append(blocks, "skill_aware_"+data.Side+".md")
	}
	if k.pkg {
		blocks = append(blocks, "package.md")
	}
	if k.describes {
		blocks = append(blocks, "description.md")
	}
	for _, b := range blocks {
		var block strings.Builder
		if err := s.base.ExecuteTemplate(&block, b, data); err != nil {
			return "", fmt.Errorf("prompts: %s: %w", name, err)
		}
		at := strings.LastIndex(text, replyFormatHeading)
		if at < 0 {
			at = len(text)
		}
		text = text[:at] + "\n\n" + block.String() + "\n\n" + text[at:]
	}
	if k.notes != "" {
		text += "\n\n## Notes for this benchmark\n\n" + k.notes
	}
	return tidy(text), nil
}

// replyFormatHeading opens the closing section of every system prompt.
const replyFormatHeading = "## Reply format"

var blankRuns = regexp.MustCompile(`\n[ \t]*\n(?:[ \t]*\n)+`)

// tidy collapses runs of blank lines left by template actions.
func tidy(s string) string {
	return strings.TrimSpace(blankRuns.ReplaceAllString(s, "\n\n")) + "\n"
}

// normalizePayload returns a copy of payload as the prompt's input type,
// with Kind and Mode filled in.
func normalizePayload(name, mode string, want reflect.Type, payload any) (reflect.Value, error) {
	v := reflect.New(want).Elem()
	switch p := payload.(type) {
	case json.RawMessage:
		payload = []byte(p)
	}
	if raw, ok := payload.([]byte); ok {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v.Addr().Interface()); err != nil {
			return v, fmt.Errorf("prompts: %s: decode payload: %w", name, err)
		}
	} else {
		rv := reflect.ValueOf(payload)
		if rv.Kind() == reflect.Pointer && !rv.IsNil() {
			rv = rv.Elem()
		}
		if !rv.IsValid() || rv.Type() != want {
			return v, fmt.Errorf("prompts: %s: payload is %T, want %s", name, payload, want)
		}
		v.Set(rv)
	}
	for _, fv := range [][2]string{{"Kind", name}, {"Mode", mode}} {
		field, val := fv[0], fv[1]
		f := v.FieldByName(field)
		if !f.IsValid() {
			continue
		}
		switch f.String() {
		case "":
			f.SetString(val)
		case val:
		default:
			return v, fmt.Errorf("prompts: %s: payload %s is %q, want %q", name, strings.ToLower(field), f.String(), val)
		}
	}
	return v, nil
}

// userMessage renders the lead-in, the readable blocks and the payload.
func userMessage(lead string, v reflect.Value, opts RenderOptions) (string, error) {
	js, err := marshalPayload(v.Interface(), opts.Indent)
	if err != nil {
		return "", err
	}
	var blocks []string
	if !opts.PayloadOnly {
		if skill := payloadSkill(v); IsPackage(skill) {
			if view, ok := renderPackage(skill); ok {
				blocks = append(blocks, packageHeading+"\n\n"+strings.TrimSpace(view))
			}
		}
		if f := v.FieldByName("StepBuffer"); f.IsValid() && f.Len() > 0 {
			blocks = append(blocks, strings.TrimSpace(RenderStepBuffer(f.Interface().([]BufferEntry))))
		}
		if f := v.FieldByName("MetaSkill"); f.IsValid() && strings.TrimSpace(f.String()) != "" {
			blocks = append(blocks, strings.TrimSpace(RenderMetaSkill(f.String())))
		}
	}
	const input, end = "\n\nThe input, as JSON:\n\n```json\n", "\n```\n"
	n := len(lead) + len(input) + len(js) + len(end)
	for _, bl := range blocks {
		n += 2 + len(bl)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(lead)
	for _, bl := range blocks {
		b.WriteString("\n\n")
		b.WriteString(bl)
	}
	b.WriteString(input)
	b.Write(js)
	b.WriteString(end)
	return b.String(), nil
}

// marshalPayload writes JSON without HTML escaping (the skill's marker
// comments stay readable) and with every run of three backticks escaped,
// so nothing inside the payload can close or open a fence.
func marshalPayload(x any, indent bool) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(x); err != nil {
		return nil, fmt.Errorf("marshal payload: %w", err)
	}
	out := bytes.TrimRight(buf.Bytes(), "\n")
	if !bytes.Contains(out, fence) {
		return out, nil
	}
	return bytes.ReplaceAll(out, fence, []byte(`\u0060\u0060\u0060`)), nil
}

var fence = []byte("```")

// JSONFence renders payload as an indented ```json fence, as the last
// block of a user message whose payload [ExtractPayload] reads back: no
// HTML escaping, and every run of three backticks inside it escaped.
func JSONFence(payload any) (string, error) {
	js, err := marshalPayload(payload, true)
	if err != nil {
		return "", err
	}
	return "```json\n" + string(js) + "\n```\n", nil
}

// ExtractPayload returns the last ```json fence of a rendered user message
// and its "kind".
func ExtractPayload(user string) (kind string, payload json.RawMessage, err error) {
	p, err := LocatePayload(user)
	if err != nil {
		return "", nil, err
	}
	payload = json.RawMessage(p)
	var head struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(payload, &head); err != nil {
		return "", nil, fmt.Errorf("prompts: payload: %w", err)
	}
	return head.Kind, payload, nil
}

// LocatePayload returns the text of the last ```json fence of a rendered
// user message, unparsed: what [ExtractPayload] decodes.
func LocatePayload(user string) (string, error) {
	const open = "```json\n"
	start := lastIndex(user, "\n"+open)
	switch {
	case start >= 0:
		start += 1 + len(open)
	case strings.HasPrefix(user, open):
		start = len(open)
	default:
		return "", errors.New("prompts: no ```json fence")
	}
	end := strings.Index(user[start:], "\n```")
	if end < 0 {
		return "", errors.New("prompts: unterminated ```json fence")
	}
	return user[start : start+end], nil
}

// lastIndex is strings.LastIndex(s, sep) found by searching forwards,
// which is many times faster for a long s: the payload ends a user
// message, so its fence is far from the end.
func lastIndex(s, sep string) int {
	last := -1
	for from := 0; ; {
		i := strings.Index(s[from:], sep)
		if i < 0 {
			return last
		}
		last = from + i
		from = last + 1
	}
}
