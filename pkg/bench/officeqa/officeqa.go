// Package officeqa is OfficeQA: questions over a corpus of Treasury
// bulletins, answered by an agent with offline tools (glob, read, grep)
// confined to each item's source documents; scored by exact normalised
// match (hard) and token F1 (soft).
package officeqa

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// Name is the benchmark's registry key.
const Name = "officeqa"

// Limits of the tools and the oracle pages.
const (
	ReadMaxChars    = 4000
	ReadDefaultRows = 80
	GrepMaxHits     = 20
	PageMaxChars    = 24000
	OracleMaxChars  = 80000
)

// Config is the benchmark's env keys.
type Config struct {
	bench.Common
	// DocsDir is the corpus root: text files under transformed/ (or the
	// root itself) and parsed pages under jsons/. Default $OFFICEQA_DOCS_DIR,
	// else <split_dir>/../docs.
	DocsDir string `json:"docs_dir"`
	// MaxToolTurns bounds the agent's rounds (default 8).
	MaxToolTurns int `json:"max_tool_turns"`
	// OraclePages adds the parsed source pages to the prompt (default: when
	// DocsDir/jsons exists).
	OraclePages *bool `json:"oracle_pages"`
	// RequireAnswerTag is a named deviation from SkillOpt (off by
	// default): a final reply without a complete <answer>…</answer> pair
	// scores 0 instead of having its last non-empty line scored.
	RequireAnswerTag bool `json:"require_answer_tag"`
	// SearchConfig adds a web search tool (search_mode custom_search or
	// azure_ai_search); offline by default.
	SearchConfig
}

// Item is a normalised OfficeQA item.
type Item struct {
	ID          string   `json:"id"`
	Question    string   `json:"question"`
	GroundTruth string   `json:"ground_truth"`
	TaskType    string   `json:"task_type,omitempty"`
	SourceFiles []string `json:"source_files"`
	SourceDocs  []string `json:"source_docs,omitempty"`
}

// Normalize maps a CSV row or JSON item to the item schema; an error names
// the item's id (when it has one) and the field.
func Normalize(m map[string]any) (map[string]any, error) {
	get := func(keys ...string) string { return bench.FirstString(m, keys...) }
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	id := get("uid", "id")
	out["id"] = id
	bad := func(format string, a ...any) error {
		if id == "" {
			return fmt.Errorf(format, a...)
		}
		return fmt.Errorf("item %s: "+format, append([]any{id}, a...)...)
	}
	if out["question"] = get("question"); out["question"] == "" {
		return nil, bad("question: empty")
	}
	if out["ground_truth"] = get("ground_truth", "answer"); out["ground_truth"] == "" {
		return nil, bad("ground_truth: empty (want ground_truth or answer)")
	}
	if tt := get("task_type", "category", "difficulty"); tt != "" {
		out["task_type"] = tt
	}
	files, err := listField(m["source_files"], true)
	if err != nil {
		return nil, bad("source_files: %v", err)
	}
	if len(files) == 0 {
		return nil, bad("source_files: empty (the agent's tools need the item's documents)")
	}
	out["source_files"] = files
	docs, err := listField(m["source_docs"], false)
	if err != nil {
		return nil, bad("source_docs: %v", err)
	}
	out["source_docs"] = docs
	return out, nil
}

// listField reads a JSON list, a JSON-list string, a newline list or a
// comma list (for files, unless the text ends in .txt: one file name may
// hold commas).
func listField(v any, files bool) ([]string, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, strings.TrimSpace(fmt.Sprint(e)))
		}
		return out, nil
	case string:
		s := strings.TrimSpace(x)
		if s == "" {
			return nil, nil
		}
		if strings.HasPrefix(s, "[") {
			var list []string
			if err := json.Unmarshal([]byte(s), &list); err != nil {
				return nil, fmt.Errorf("not a JSON list of strings: %w", err)
			}
			return list, nil
		}
		var parts []string
		switch {
		case strings.Contains(s, "\n"):
			parts = strings.Split(s, "\n")
		case files && strings.HasSuffix(s, ".txt"):
			parts = []string{s}
		default:
			parts = strings.Split(s, ",")
		}
		var out []string
		for _, p := range parts {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		return out, nil
	default:
		return nil, fmt.Errorf("unexpected %T", v)
	}
}

// Env is the OfficeQA environment.
type Env struct {
	cfg    Config
	root   string    // the corpus root
	search *Searcher // nil offline
}

var _ bench.Env = (*Env)(nil)

// New returns the environment.
func New(cfg Config) (*Env, error) {
	root := cmp.Or(cfg.DocsDir, os.Getenv("OFFICEQA_DOCS_DIR"))
	if root == "" && cfg.SplitDir != "" {
		root = filepath.Join(cfg.SplitDir, "..", "docs")
	}
	if root == "" {
		return nil, errors.New("env.docs_dir: required (or $OFFICEQA_DOCS_DIR, or a docs/ directory beside the split dir)")
	}
	root = cfg.Resolve(root)
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("env.docs_dir %s: not a directory", root)
	}
	cfg.MaxToolTurns = cmp.Or(cfg.MaxToolTurns, 8)
	search, err := newSearcher(cfg.SearchConfig)
	if err != nil {
		return nil, err
	}
	if search == nil && cfg.UseLocalTools != nil && !*cfg.UseLocalTools {
		return nil, errors.New("env.use_local_tools: false leaves the agent no tool without a search_mode")
	}
	cfg.MaxQueriesPerTurn = cmp.Or(cfg.MaxQueriesPerTurn, DefaultQueriesPerTurn)
	return &Env{cfg: cfg, root: root, search: search}, nil
}

// Name returns "officeqa".
func (e *Env) Name() string { return Name }

// textRoot is where the documents' text lives.
func (e *Env) textRoot() string {
	if st, err := os.Stat(filepath.Join(e.root, "transformed")); err == nil && st.IsDir() {
		return filepath.Join(e.root, "transformed")
	}
	return e.root
}

// Tools is the tool runtime of one item: its candidate files only.
type Tools struct {
	root  string
	files []string // cleaned relative names, in item order
}

// NewTools confines the tools to files under root.
func NewTools(root string, files []string) *Tools {
	t := &Tools{root: root}
	for _, f := range files {
		t.files = append(t.files, path.Clean(filepath.ToSlash(f)))
	}
	return t
}

// resolve maps a model-given path to one of the item's files, or says why not.
func (t *Tools) resolve(p string) (string, error) {
	p = strings.TrimSpace(p)
	if p == "" {
		return "", errors.New("path is empty")
	}
	if filepath.IsAbs(p) || strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("path %q: absolute paths are not allowed; use one of %s", p, strings.Join(t.files, ", "))
	}
	clean := path.Clean(filepath.ToSlash(p))
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("path %q leaves the document folder", p)
	}
	found := false
	for _, f := range t.files {
		if f == clean || path.Base(f) == clean {
			clean, found = f, true
			break
		}
	}
	if !found {
		return "", fmt.Errorf("path %q is not one of this question's documents: %s", p, strings.Join(t.files, ", "))
	}
	full := filepath.Join(t.root, filepath.FromSlash(clean))
	resolved, err := filepath.EvalSymlinks(full)
	if err != nil {
		return "", fmt.Errorf("path %q: %w", p, errors.Unwrap(err))
	}
	rootReal, _ := filepath.EvalSymlinks(t.root)
	if rel, err := filepath.Rel(rootReal, resolved); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("path %q leaves the document folder", p)
	}
	return resolved, nil
}

// Glob lists the item's files matching a shell pattern ("*" for all).
func (t *Tools) Glob(pattern string) string {
	pattern = cmp.Or(strings.TrimSpace(pattern), "*")
	var out []string
	for _, f := range t.files {
		okFull, err := path.Match(pattern, f)
		if err != nil {
			return "error: bad pattern: " + err.Error()
		}
		okBase, _ := path.Match(pattern, path.Base(f))
		if okFull || okBase || pattern == "**" {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return "no matching files (available: " + strings.Join(t.files, ", ") + ")"
	}
	return strings.Join(out, "\n")
}

// Read returns limit lines from line start (1-based), numbered, cut at
// ReadMaxChars.
func (t *Tools) Read(p string, start, limit int) string {
	full, err := t.resolve(p)
	if err != nil {
		return "error: " + err.Error()
	}
	data, err := os.ReadFile(full)
	if err != nil {
		return "error: " + err.Error()
	}
	start = max(start, 1)
	if limit <= 0 {
		limit = ReadDefaultRows
	}
	lines := strings.Split(string(data), "\n")
	if start > len(lines) {
		return fmt.Sprintf("error: the file has %d lines", len(lines))
	}
	var b strings.Builder
	for i := start - 1; i < len(lines) && i < start-1+limit; i++ {
		line := fmt.Sprintf("%d: %s\n", i+1, lines[i])
		if b.Len()+len(line) > ReadMaxChars {
			b.WriteString("[... output truncated ...]\n")
			break
		}
		b.WriteString(line)
	}
	return b.String()
}

// Grep finds lines holding pattern (a literal, case-insensitive) in one of
// the item's files, or in all of them when path is empty.
func (t *Tools) Grep(pattern, p string) string {
	if strings.TrimSpace(pattern) == "" {
		return "error: empty pattern"
	}
	files := t.files
	if strings.TrimSpace(p) != "" {
		if _, err := t.resolve(p); err != nil {
			return "error: " + err.Error()
		}
		clean := path.Clean(filepath.ToSlash(strings.TrimSpace(p)))
		for _, f := range t.files {
			if f == clean || path.Base(f) == clean {
				files = []string{f}
			}
		}
	}
	needle := strings.ToLower(pattern)
	var hits []string
	for _, f := range files {
		full, err := t.resolve(f)
		if err != nil {
			continue
		}
		data, err := os.ReadFile(full)
		if err != nil {
			continue
		}
		for i, line := range strings.Split(string(data), "\n") {
			if strings.Contains(strings.ToLower(line), needle) {
				if len(hits) == GrepMaxHits {
					return strings.Join(hits, "\n") + "\n[... more matches not shown ...]"
				}
				hits = append(hits, fmt.Sprintf("%s:%d: %s", f, i+1, strings.TrimSpace(line)))
			}
		}
	}
	if len(hits) == 0 {
		return "no matches"
	}
	return strings.Join(hits, "\n")
}

// ToolSpecs are the tools offered to the model.
var ToolSpecs = []llm.Tool{
	{Name: "glob", Description: "List this question's document files matching a shell pattern.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string","description":"shell pattern, e.g. *.txt"}},"required":["pattern"]}`)},
	{Name: "read", Description: "Read numbered lines of a document (at most 4000 characters).",
		Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"start":{"type":"integer","description":"first line, 1-based (default 1)"},"limit":{"type":"integer","description":"number of lines (default 80)"}},"required":["path"]}`)},
	{Name: "grep", Description: "Find lines containing a text (case-insensitive, literal) in a document, or in all documents when path is empty; at most 20 matches.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string"},"path":{"type":"string"}},"required":["pattern"]}`)},
}

// Call executes one tool call; bad arguments are answered as an error the
// model can read.
func (t *Tools) Call(c llm.ToolCall) (out string, ok bool) {
	var a struct {
		Pattern string          `json:"pattern"`
		Path    string          `json:"path"`
		Start   json.RawMessage `json:"start"`
		Limit   json.RawMessage `json:"limit"`
	}
	if err := json.Unmarshal([]byte(cmp.Or(strings.TrimSpace(c.Arguments), "{}")), &a); err != nil {
		return fmt.Sprintf("error: arguments are not a JSON object: %v", err), false
	}
	num := func(raw json.RawMessage, def int) int {
		var n float64
		if json.Unmarshal(raw, &n) == nil {
			return int(n)
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			if v, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
				return v
			}
		}
		return def
	}
	switch c.Name {
	case "glob":
		return t.Glob(a.Pattern), true
	case "read":
		return t.Read(a.Path, num(a.Start, 1), num(a.Limit, ReadDefaultRows)), true
	case "grep":
		return t.Grep(a.Pattern, a.Path), true
	default:
		return fmt.Sprintf("error: unknown tool %q (available: glob, read, grep)", c.Name), false
	}
}

// parsed is one document's parsed pages, docs_dir/jsons/<stem>.json:
// {"pages": [{"page": N, "text": "..."}, ...]} with 1-based page numbers.
type parsed struct {
	Pages []struct {
		Page int    `json:"page"`
		Text string `json:"text"`
	} `json:"pages"`
}

// truncate cuts s to at most n bytes at a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// OraclePages renders the parsed pages the item's source URLs point at
// (page N of a URL's ?page=N, stem = the URL path's base name without its
// extension). A URL without a page, or a stem without a parsed file, is
// skipped; a parsed file that is not valid JSON is an error naming it.
func (e *Env) OraclePages(it Item) (string, error) {
	on := e.cfg.OraclePages
	jsons := filepath.Join(e.root, "jsons")
	if on != nil && !*on {
		return "", nil
	}
	if _, err := os.Stat(jsons); err != nil {
		return "", nil
	}
	var b strings.Builder
	for _, d := range it.SourceDocs {
		u, err := url.Parse(d)
		if err != nil {
			continue
		}
		n, err := strconv.Atoi(u.Query().Get("page"))
		if err != nil {
			continue
		}
		stem := strings.TrimSuffix(path.Base(u.Path), path.Ext(u.Path))
		file := filepath.Join(jsons, stem+".json")
		data, err := os.ReadFile(file)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("oracle pages: %w", err)
		}
		var p parsed
		if err := json.Unmarshal(data, &p); err != nil {
			return "", fmt.Errorf("oracle pages %s: want {\"pages\": [{\"page\": N, \"text\": ...}]}: %w", file, err)
		}
		for _, pg := range p.Pages {
			if pg.Page != n {
				continue
			}
			text := pg.Text
			if len(text) > PageMaxChars {
				text = truncate(text, PageMaxChars) + "\n[... page truncated ...]"
			}
			block := fmt.Sprintf("--- %s, page %d ---\n%s\n", stem, n, text)
			if b.Len()+len(block) > OracleMaxChars {
				return b.String(), nil
			}
			b.WriteString(block)
		}
	}
	return b.String(), nil
}

const system = `You answer questions about U.S. Treasury bulletins using the tools glob, read and grep, which work only on the documents of this question.
Search before you read, check the units and the period the question asks about, and compute carefully.
When you are sure, reply with the final answer inside <answer></answer> (just the value, as the question asks for it).`

// Episode runs the tool-using agent on one item.
func (e *Env) Episode(ctx context.Context, m llm.Model, req bench.EpisodeRequest) (*bench.Episode, error) {
	var it Item
	if err := json.Unmarshal(req.Item.Raw, &it); err != nil {
		return nil, fmt.Errorf("officeqa item %s: %w", req.Item.ID, err)
	}
	if len(it.SourceFiles) == 0 {
		return nil, fmt.Errorf("officeqa item %s: no source_files", req.Item.ID)
	}
	tools := NewTools(e.textRoot(), it.SourceFiles)
	user := "Question: " + it.Question + "\n\nDocuments: " + strings.Join(tools.files, ", ")
	pages, err := e.OraclePages(it)
	if err != nil {
		return nil, fmt.Errorf("officeqa item %s: %w", req.Item.ID, err)
	}
	if pages != "" {
		user += "\n\nParsed pages the question draws on:\n" + pages
	}
	local := e.cfg.UseLocalTools == nil || *e.cfg.UseLocalTools
	specs, sys := ToolSpecs, system
	switch {
	case e.search != nil && local:
		specs, sys = append(slices.Clone(ToolSpecs), SearchSpec), systemSearch
	case e.search != nil:
		specs, sys = []llm.Tool{SearchSpec}, systemSearchOnly
	}
	msgs := []llm.Message{{Role: llm.RoleSystem, Content: sys + "\n\n" + bench.SkillSection(req.Skill)}, {Role: llm.RoleUser, Content: user}}
	var rec bench.Recorder
	final, reason, turns, badCalls := "", "", 0, 0
	for turns < e.cfg.MaxToolTurns {
		turns++
		call := bench.TargetRequest(req, msgs)
		call.Tools = specs
		resp, err := rec.Chat(ctx, m, call)
		if err != nil {
			return rec.Failed(Name, req.Item.ID, err)
		}
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: resp.Content, ToolCalls: resp.ToolCalls})
		if len(resp.ToolCalls) == 0 {
			final = resp.Content
			if !strings.Contains(strings.ToLower(resp.Content), "<answer>") {
				reason = "agent stopped without a tool call or an <answer>"
			}
			break
		}
		queries := 0
		for _, c := range resp.ToolCalls {
			var out string
			ok := true
			switch {
			case c.Name == SearchSpec.Name && e.search != nil:
				out, ok, err = e.searchCall(ctx, c, &queries)
				if err != nil {
					return rec.Failed(Name, req.Item.ID, err)
				}
			case !local:
				out, ok = fmt.Sprintf("error: unknown tool %q (available: search)", c.Name), false
			default:
				out, ok = tools.Call(c)
			}
			if !ok {
				badCalls++
			}
			msgs = append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: out})
		}
		if turns == e.cfg.MaxToolTurns {
			reason = fmt.Sprintf("tool turn limit (%d) reached without an answer", e.cfg.MaxToolTurns)
		}
	}
	answer, hard, soft := Evaluate(final, it.GroundTruth, ScoreOptions{RequireAnswerTag: e.cfg.RequireAnswerTag})
	if hard < 1 && reason == "" {
		reason = fmt.Sprintf("EM=0: predicted '%s' but expected '%s'", answer, it.GroundTruth)
	}
	eval := bench.EvalMessage(hard, soft, answer, strconv.Quote(it.GroundTruth))
	if badCalls > 0 {
		// Counted in the trajectory; in the failure reason only when
		// the episode failed (a bad call the agent recovered from is no
		// loop failure).
		note := fmt.Sprintf("%d malformed tool call(s)", badCalls)
		eval.Content += "; " + note
		if reason != "" {
			reason += " (" + note + ")"
		}
	}
	msgs = append(msgs, eval)
	ep := &bench.Episode{Hard: hard, Soft: soft, Answer: answer, FailReason: reason,
		TaskType: cmp.Or(it.TaskType, req.Item.TaskType), TaskDescription: it.Question, Messages: msgs, NTurns: turns}
	rec.Fill(ep)
	return ep, nil
}

const systemSearch = `You answer questions about U.S. Treasury bulletins using the tools glob, read and grep, which work only on the documents of this question, and search, which searches the web.
Prefer the documents; search for what they lack. Check the units and the period the question asks about, and compute carefully.
When you are sure, reply with the final answer inside <answer></answer> (just the value, as the question asks for it).`

const systemSearchOnly = `You answer questions about U.S. Treasury bulletins using the tool search, which searches the web, and the parsed pages given with the question.
Check the units and the period the question asks about, and compute carefully.
When you are sure, reply with the final answer inside <answer></answer> (just the value, as the question asks for it).`

// searchCall runs one search tool call, at most MaxQueriesPerTurn in a
// turn; a bad call is answered for the model to read. An error is an
// outage of the search service.
func (e *Env) searchCall(ctx context.Context, c llm.ToolCall, queries *int) (string, bool, error) {
	var a struct {
		Query string `json:"query"`
	}
	if err := json.Unmarshal([]byte(cmp.Or(strings.TrimSpace(c.Arguments), "{}")), &a); err != nil {
		return fmt.Sprintf("error: arguments are not a JSON object: %v", err), false, nil
	}
	if strings.TrimSpace(a.Query) == "" {
		return "error: search needs a non-empty query", false, nil
	}
	if *queries >= e.cfg.MaxQueriesPerTurn {
		return fmt.Sprintf("error: at most %d searches a turn; ask again next turn", e.cfg.MaxQueriesPerTurn), false, nil
	}
	*queries++
	out, err := e.search.Search(ctx, strings.TrimSpace(a.Query))
	if err != nil {
		return "", false, fmt.Errorf("search %q: %w", a.Query, err)
	}
	return out, true, nil
}

// AnalystNotes is OfficeQA's failure taxonomy.
func (e *Env) AnalystNotes() string {
	return `OfficeQA failures usually fall into: (1) the right table found but the wrong period, row or series read; (2) units or scale wrong (millions vs billions, percent vs fraction); (3) arithmetic on the extracted values wrong or rounded differently from what was asked; (4) the search gave up early or read the wrong document; (5) the answer formatted with extra words. Scoring is exact after normalisation (case, commas and the words million/billion/dollar/nominal ignored), with no numeric tolerance.`
}
