package nightly

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// HarvestOptions say where transcripts are and which sessions to keep.
type HarvestOptions struct {
	// Source is one of [Sources] or all. Default all.
	Source string
	// ClaudeHome, CodexHome and CursorHome default to ~/.claude, ~/.codex
	// and ~/.cursor.
	ClaudeHome, CodexHome, CursorHome string
	// CopilotHome is the Copilot CLI's home (default ~/.copilot), whose
	// session-store.db is read from a private copy.
	CopilotHome string
	// VSCodeStorage are VS Code's workspaceStorage directories, whose
	// workspaces' chatSessions hold Copilot Chat's logs (default: those of
	// VS Code and VS Code Insiders for this OS that exist).
	VSCodeStorage []string
	// PiHome is pi's agent directory (default $PI_CODING_AGENT_DIR or
	// ~/.pi/agent), whose sessions/ holds one JSONL file per session.
	PiHome string
	// OpencodeDB is opencode's database (default $OPENCODE_DB, else
	// opencode.db under $XDG_DATA_HOME/opencode or ~/.local/share/opencode).
	OpencodeDB string
	// Projects keeps only sessions whose project (working directory) is one
	// of these absolute paths or below one; empty keeps every project.
	Projects []string
	// Cursors are the per-project end of the last harvest: a session of a
	// project with a cursor is kept only if it ended after it. A project
	// without one looks back Lookback from Now.
	Cursors  map[string]time.Time
	Lookback time.Duration
	Now      time.Time
	// MaxSessions keeps the newest N sessions (0 = all).
	MaxSessions int
	// MaxLineBytes is the longest transcript line read; longer lines are
	// skipped and counted. Default 4 MiB.
	MaxLineBytes int
}

// Sources lists the supported transcript sources.
func Sources() []string {
	return []string{SourceClaude, SourceCodex, SourceCursor, SourceCopilot, SourceCopilotCLI, SourcePi, SourceOpencode}
}

func (o *HarvestOptions) defaults() error {
	o.Source = cmp.Or(o.Source, "all")
	if o.Source != "all" && !slices.Contains(Sources(), o.Source) {
		return fmt.Errorf("source %q: want one of %s or all", o.Source, strings.Join(Sources(), ", "))
	}
	home, _ := os.UserHomeDir()
	o.ClaudeHome = cmp.Or(o.ClaudeHome, filepath.Join(home, ".claude"))
	o.CodexHome = cmp.Or(o.CodexHome, filepath.Join(home, ".codex"))
	o.CursorHome = cmp.Or(o.CursorHome, filepath.Join(home, ".cursor"))
	o.CopilotHome = cmp.Or(o.CopilotHome, os.Getenv("COPILOT_HOME"), filepath.Join(home, ".copilot"))
	if o.VSCodeStorage == nil {
		o.VSCodeStorage = defaultVSCodeStorage(home)
	}
	o.PiHome = cmp.Or(o.PiHome, os.Getenv("PI_CODING_AGENT_DIR"), filepath.Join(home, ".pi", "agent"))
	o.OpencodeDB = cmp.Or(o.OpencodeDB, defaultOpencodeDB(home))
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.Lookback <= 0 {
		o.Lookback = 72 * time.Hour
	}
	if o.MaxLineBytes <= 0 {
		o.MaxLineBytes = 4 << 20
	}
	return nil
}

func (o *HarvestOptions) since(project string) time.Time {
	if t, ok := o.Cursors[project]; ok {
		return t
	}
	return o.Now.Add(-o.Lookback)
}

// inScope reports whether a session of project that ended at end is to
// be harvested, counting it in sk when it is not (another project, or
// harvested already).
func (o *HarvestOptions) inScope(project string, end time.Time, sk *Skipped) bool {
	switch {
	case !o.wantProject(project):
		sk.OtherProject++
	case !end.After(o.since(project)):
		sk.Old++
	default:
		return true
	}
	return false
}

func (o *HarvestOptions) wantProject(project string) bool {
	if len(o.Projects) == 0 {
		return true
	}
	for _, p := range o.Projects {
		if project == p || strings.HasPrefix(project, strings.TrimRight(p, "/")+"/") || project == cursorSlug(p) {
			return true
		}
	}
	return false
}

// Harvest reads the transcripts of the chosen sources, read-only, and
// returns the sessions to learn from, newest first, with what it skipped.
// Every text in a digest has been redacted.
func Harvest(o HarvestOptions) ([]Digest, Skipped, error) {
	var sk Skipped
	if err := o.defaults(); err != nil {
		return nil, sk, err
	}
	var out []Digest
	keep := func(src string, d *Digest) {
		d.Source = src
		if src == SourceCursor {
			for _, p := range o.Projects {
				if cursorSlug(p) == d.Project {
					d.Project = p
				}
			}
		}
		if o.inScope(d.Project, d.EndedAt, &sk) {
			out = append(out, *d)
		}
	}
	run := func(src string, files func() ([]string, error), parse func(path string, o *HarvestOptions) (*Digest, Skipped, error)) error {
		if o.Source != "all" && o.Source != src {
			return nil
		}
		paths, err := files()
		if err != nil {
			return err
		}
		for _, p := range paths {
			d, s, err := parse(p, &o)
			sk.add(s)
			if err != nil {
				sk.Unreadable++
				continue
			}
			if d != nil {
				keep(src, d)
			}
		}
		return nil
	}
	// runDB reads a source kept in one database: its reader returns every
	// session that may be new (an unreadable database is counted, not an
	// error, like an unreadable transcript file).
	runDB := func(src string, read func(o *HarvestOptions) ([]*Digest, Skipped, error)) {
		if o.Source != "all" && o.Source != src {
			return
		}
		ds, s, err := read(&o)
		sk.add(s)
		if err != nil {
			sk.Unreadable++
			return
		}
		for _, d := range ds {
			keep(src, d)
		}
	}
	if err := run(SourceClaude, func() ([]string, error) { return claudeFiles(o.ClaudeHome, &sk) }, parseClaude); err != nil {
		return nil, sk, err
	}
	if err := run(SourceCodex, func() ([]string, error) { return codexFiles(o.CodexHome) }, parseCodex); err != nil {
		return nil, sk, err
	}
	if err := run(SourceCursor, func() ([]string, error) { return cursorFiles(o.CursorHome, &sk) }, parseCursor); err != nil {
		return nil, sk, err
	}
	if err := run(SourceCopilot, func() ([]string, error) { return vscodeChatFiles(o.VSCodeStorage, &sk) }, parseVSCodeChat); err != nil {
		return nil, sk, err
	}
	runDB(SourceCopilotCLI, readCopilotCLI)
	if err := run(SourcePi, func() ([]string, error) { return piFiles(o.PiHome) }, parsePi); err != nil {
		return nil, sk, err
	}
	runDB(SourceOpencode, readOpencode)
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].EndedAt.Equal(out[j].EndedAt) {
			return out[i].EndedAt.After(out[j].EndedAt)
		}
		return out[i].SessionID < out[j].SessionID
	})
	if o.MaxSessions > 0 && len(out) > o.MaxSessions {
		out = out[:o.MaxSessions]
	}
	return out, sk, nil
}

// claudeFiles lists ~/.claude/projects/**/*.jsonl, leaving out sub-agent
// transcripts (under subagents/ or named agent-*), which are counted.
func claudeFiles(home string, sk *Skipped) ([]string, error) {
	root := filepath.Join(home, "projects")
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return filepath.SkipAll
			}
			sk.Unreadable++
			return nil
		}
		if d.IsDir() || !strings.HasSuffix(p, ".jsonl") || d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		if isSubAgentPath(p) {
			sk.SubAgent++
			return nil
		}
		out = append(out, p)
		return nil
	})
	sort.Strings(out)
	return out, err
}

func isSubAgentPath(p string) bool {
	return slices.Contains(strings.Split(filepath.ToSlash(p), "/"), "subagents") || strings.HasPrefix(filepath.Base(p), "agent-")
}

// codexFiles lists Codex's live sessions (sessions/YYYY/MM/DD/*.jsonl,
// where the CLI writes them) and its archived ones (archived_sessions/).
func codexFiles(home string) ([]string, error) {
	out, err := globFiles(filepath.Join(home, "archived_sessions"))
	if err != nil {
		return nil, err
	}
	err = filepath.WalkDir(filepath.Join(home, "sessions"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return filepath.SkipAll
			}
			return err
		}
		if d.Type().IsRegular() && strings.HasSuffix(p, ".jsonl") {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// globFiles lists dir's .jsonl files in order; none when dir is missing.
func globFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	var out []string
	for _, e := range ents {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".jsonl") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out, nil
}

// cursorFiles lists ~/.cursor/projects/<ws>/agent-transcripts/**/*.jsonl.
func cursorFiles(home string, sk *Skipped) ([]string, error) {
	ws, err := os.ReadDir(filepath.Join(home, "projects"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(home, "projects"), err)
	}
	var out []string
	for _, w := range ws {
		if !w.IsDir() {
			continue
		}
		root := filepath.Join(home, "projects", w.Name(), "agent-transcripts")
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.Type().IsRegular() && strings.HasSuffix(p, ".jsonl") {
				if isSubAgentPath(p) {
					sk.SubAgent++
					return nil
				}
				out = append(out, p)
			}
			return nil
		})
	}
	sort.Strings(out)
	return out, nil
}

// readLines calls fn with each line of r that is at most max bytes; longer
// lines are skipped and counted.
func readLines(r io.Reader, limit int, fn func([]byte)) (huge int, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 && !tooLong {
			if len(buf)+len(chunk) > limit+1 {
				tooLong = true
				buf = buf[:0]
			} else {
				buf = append(buf, chunk...)
			}
		}
		switch {
		case err == nil || (errors.Is(err, io.EOF) && (len(buf) > 0 || tooLong)):
			if tooLong {
				huge++
			} else if line := bytes.TrimSpace(buf); len(line) > 0 {
				fn(line)
			}
			buf, tooLong = buf[:0], false
			if err != nil {
				return huge, nil
			}
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return huge, nil
		default:
			return huge, err
		}
	}
}

// session accumulates one transcript.
type session struct {
	id, project, branch string
	start, end          time.Time
	prompts, finals     []string
	tools, skills       []string
	files               []string
	nUser, nAssistant   int
	headless            bool
	// noTimes: the transcript has no timestamps (the duration rule of
	// isHeadless does not apply).
	noTimes bool
	// interactive: the CLI marks the session as typed in its terminal UI
	// (the duration rule of isHeadless does not apply either: a user's
	// one quick question is still the user's).
	interactive bool
}

func (s *session) stamp(ts string) {
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return
	}
	if s.start.IsZero() || t.Before(s.start) {
		s.start = t
	}
	if t.After(s.end) {
		s.end = t
	}
}

func (s *session) user(text string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	if isMetaPrompt(text) {
		return
	}
	s.nUser++
	s.prompts = append(s.prompts, clip(Redact(text), 4000))
}

func (s *session) assistant(text string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	s.nAssistant++
	s.finals = append(s.finals, clip(Redact(text), 4000))
	if len(s.finals) > 5 {
		s.finals = s.finals[len(s.finals)-5:]
	}
}

func addUnique(list []string, v string) []string {
	v = strings.TrimSpace(v)
	if v == "" || slices.Contains(list, v) {
		return list
	}
	return append(list, v)
}

// digest finishes a session; nil when it has nothing to learn from (the
// reason is counted in sk).
func (s *session) digest(path string, sk *Skipped) *Digest {
	if s.headless || isHeadless(s) {
		sk.Headless++
		return nil
	}
	if len(s.prompts) == 0 {
		sk.Empty++
		return nil
	}
	sort.Strings(s.tools)
	sort.Strings(s.skills)
	sort.Strings(s.files)
	return &Digest{
		SessionID: Redact(s.id), Project: s.project, GitBranch: Redact(s.branch), StartedAt: s.start, EndedAt: s.end,
		UserPrompts: s.prompts, AssistantFinals: s.finals, ToolsUsed: s.tools, SkillsUsed: s.skills,
		FilesTouched: s.files, FeedbackSignals: feedbackSignals(s.prompts), NUserTurns: s.nUser,
		NAssistantTurns: s.nAssistant, RawPath: path,
	}
}

// HeadlessMarkers are strings that only engine-generated prompts carry:
// a session whose single user turn holds one was started by a tool (this
// one among them), not by the user.
var HeadlessMarkers = []string{
	PromptMarker,
	"You are a task miner",
	"Return ONLY a JSON",
	"respond with only the json",
}

// isHeadless: one user turn that is an engine prompt, or a one-shot
// session shorter than three seconds with a short prompt.
func isHeadless(s *session) bool {
	if s.nUser != 1 {
		return false
	}
	for _, p := range s.prompts {
		low := strings.ToLower(p)
		for _, m := range HeadlessMarkers {
			if strings.Contains(low, strings.ToLower(m)) {
				return true
			}
		}
	}
	if !s.noTimes && !s.interactive && !s.start.IsZero() && s.end.Sub(s.start) < 3*time.Second && len(s.prompts) == 1 && len(s.prompts[0]) < 200 {
		return true
	}
	return false
}

// isMetaPrompt reports the user-turn texts that are not the user's own
// words: tags the client inserts, slash commands, pasted-text and
// interruption placeholders.
func isMetaPrompt(t string) bool {
	switch {
	case strings.HasPrefix(t, "<"):
		return true
	case strings.HasPrefix(t, "/") && !strings.Contains(strings.TrimSpace(t[1:]), " ") && len(t) < 40:
		return true
	case strings.HasPrefix(t, "[Pasted text"), strings.HasPrefix(t, "[Request interrupted"), strings.HasPrefix(t, "Caveat:"):
		return true
	case strings.Contains(t, "<command-message>"), strings.Contains(t, "<command-name>"):
		return true
	}
	return false
}

var negPhrases = []string{"that's wrong", "that is wrong", "not what i asked", "doesn't work", "does not work", "still failing", "still broken", "incorrect", "you forgot", "try again", "i told you", "please don't", "wrong format", "no, "}
var posPhrases = []string{"thanks", "thank you", "perfect", "works now", "looks good", "lgtm", "exactly", "great"}

// feedbackSignals finds the user's reactions in the prompts after the
// first: "neg:<phrase>" and "pos:<phrase>".
func feedbackSignals(prompts []string) []string {
	var out []string
	for i, p := range prompts {
		if i == 0 {
			continue
		}
		low := strings.ToLower(p)
		for _, ph := range negPhrases {
			if strings.Contains(low, ph) {
				out = addUnique(out, "neg:"+strings.TrimRight(ph, ", "))
			}
		}
		for _, ph := range posPhrases {
			if strings.Contains(low, ph) {
				out = addUnique(out, "pos:"+ph)
			}
		}
	}
	return out
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// block is one content block of a message.
type block struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Name    string          `json:"name"`
	Input   json.RawMessage `json:"input"`
	Content json.RawMessage `json:"content"`
}

// contentBlocks decodes a message content: a string, or a list of blocks.
func contentBlocks(raw json.RawMessage) ([]block, bool) {
	if len(raw) == 0 {
		return nil, true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []block{{Type: "text", Text: s}}, true
	}
	var bs []block
	if json.Unmarshal(raw, &bs) == nil {
		return bs, true
	}
	return nil, false
}

// toolInput reads what a tool call says about skills and files.
func (s *session) toolUse(b block) {
	s.tools = addUnique(s.tools, b.Name)
	if len(b.Input) == 0 {
		return
	}
	var in map[string]any
	if json.Unmarshal(b.Input, &in) != nil {
		return
	}
	if b.Name == "Skill" {
		if v, ok := in["skill"].(string); ok {
			s.skills = addUnique(s.skills, v)
		}
	}
	for _, k := range []string{"file_path", "path", "notebook_path"} {
		if v, ok := in[k].(string); ok && len(s.files) < 200 {
			s.files = addUnique(s.files, Redact(v))
		}
	}
}
