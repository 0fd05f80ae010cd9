package nightly

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

// Paper is one entry of the researcher persona's reading list.
type Paper struct {
	Title string
	ID    string
}

// ResearcherPapers are the papers the researcher persona asks about.
var ResearcherPapers = []Paper{
	{"Attention Is All You Need", "1706.03762"},
	{"BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding", "1810.04805"},
	{"Language Models are Few-Shot Learners", "2005.14165"},
	{"Deep Residual Learning for Image Recognition", "1512.03385"},
	{"Adam: A Method for Stochastic Optimization", "1412.6980"},
	{"Generative Adversarial Networks", "1406.2661"},
	{"Efficient Estimation of Word Representations in Vector Space", "1301.3781"},
	{"Sequence to Sequence Learning with Neural Networks", "1409.3215"},
	{"Denoising Diffusion Probabilistic Models", "2006.11239"},
	{"An Image is Worth 16x16 Words: Transformers for Image Recognition at Scale", "2010.11929"},
	{"LoRA: Low-Rank Adaptation of Large Language Models", "2106.09685"},
	{"Chain-of-Thought Prompting Elicits Reasoning in Large Language Models", "2201.11903"},
}

// Persona habits: what the researcher keeps asking the agent to do.
const (
	HabitWrap     = "Wrap the final answer in <answer></answer> tags."
	HabitArxivID  = "Write arXiv identifiers as arXiv:YYMM.NNNNN, with no version suffix and no URL."
	HabitHarmful  = "Write every answer in lower case."
	personaBranch = "main"
)

// Built-in personas. PersonaResearcherPackage has the researcher's
// sessions, but its skill is a package (see [PersonaPackage]).
// PersonaProgrammer asks for commit messages (see [ProgrammerChanges]).
const (
	PersonaResearcher        = "researcher"
	PersonaResearcherPackage = "researcher-package"
	PersonaProgrammer        = "programmer"
)

// Personas lists the built-in personas.
func Personas() []string {
	return []string{PersonaResearcher, PersonaResearcherPackage, PersonaProgrammer}
}

// Change is one change the programmer persona asks a commit message for:
// what was done, in the user's words, and the message they want.
type Change struct {
	What    string
	Type    string
	Scope   string
	Subject string
}

// Message is the commit message the programmer wants for a change:
// type(scope): subject, with no trailing period.
func (c Change) Message() string { return c.Type + "(" + c.Scope + "): " + c.Subject }

// ProgrammerChanges are the changes the programmer persona commits.
var ProgrammerChanges = []Change{
	{"the parser crashed on an empty input file; it now returns an empty tree", "fix", "parser", "return an empty tree for empty input"},
	{"added a --dry-run flag to the deploy command that prints the plan only", "feat", "deploy", "add a --dry-run flag that prints the plan"},
	{"the cache evicted entries one second early because of an off-by-one", "fix", "cache", "evict entries at their expiry, not a second early"},
	{"split the 900-line server.go into handlers.go and routes.go", "refactor", "server", "split server.go into handlers and routes"},
	{"the retry loop of the HTTP client now backs off exponentially", "feat", "client", "back off exponentially between retries"},
	{"documented the config keys of the scheduler in its README", "docs", "scheduler", "document the config keys"},
	{"the login form accepted an empty password and showed a blank page", "fix", "auth", "reject an empty password with a message"},
	{"the JSON encoder now reuses its buffers instead of allocating per call", "perf", "encoding", "reuse buffers across calls"},
	{"added table tests for the date parser's time zones", "test", "dates", "cover time zones with table tests"},
	{"the CLI printed its version twice when given --version --verbose", "fix", "cli", "print the version once"},
	{"renamed the internal package util to textutil and moved it under internal/", "refactor", "textutil", "move util to internal/textutil"},
	{"the metrics endpoint now exposes queue depth per worker", "feat", "metrics", "expose queue depth per worker"},
}

// Programmer persona habits and the lure its night must keep out.
const (
	HabitConventional = "Write commit messages as Conventional Commits: type(scope): imperative subject, with no trailing period."
	HabitFullStop     = "End every answer with a full stop."
)

// PersonaHarmful is the rule a persona's night must never accept
// (`--assert-improves` checks the proposal lacks it).
func PersonaHarmful(persona string) string {
	if persona == PersonaProgrammer {
		return HabitFullStop
	}
	return HabitHarmful
}

// ChangeByText finds a programmer change whose description text holds.
func ChangeByText(text string) (Change, bool) {
	for _, c := range ProgrammerChanges {
		if strings.Contains(text, c.What) {
			return c, true
		}
	}
	return Change{}, false
}

// ConventionalCommit matches a Conventional Commits subject line.
const ConventionalCommit = `(feat|fix|refactor|perf|docs|test|build|chore)\([a-z0-9-]+\): [a-z]`

// PersonaPackage returns the skill package a persona's sandbox starts
// with (its directory name and files), if the persona's skill is one:
// researcher-package's "papers" skill, whose SKILL.md says that the
// citation format of each kind of identifier lives in references/, and
// whose references/ holds the DOI format only. An agent that follows it
// looks for the arXiv format in references/, so that is where the night
// must put it.
func PersonaPackage(persona string) (string, map[string]string, bool) {
	if persona != PersonaResearcherPackage {
		return "", nil, false
	}
	entry := "---\nname: papers\ndescription: Answer questions about papers the user reads. Read it before you answer one.\n---\n\n" +
		"# Papers\n\nThe citation format of each kind of identifier (DOI, arXiv, ISBN) lives in references/, one file per kind: " +
		"open references/ before you write an identifier.\n\n" + emptyBlock()
	return "papers", map[string]string{
		"SKILL.md":          entry,
		"references/doi.md": "# DOIs\n\n- Write a DOI as doi:10.NNNN/suffix, without the https://doi.org/ prefix.\n",
	}, true
}

// WritePersonaTranscripts writes the persona's sessions as Claude Code
// transcripts under claudeHome for project, ending before now: in each the
// user asks for a paper's arXiv id, the agent answers in the wrong form,
// and the user corrects it. One session also carries a planted API key
// and password, which the harvester must redact.
func WritePersonaTranscripts(persona, claudeHome, project string, now time.Time) error {
	if !slices.Contains(Personas(), persona) {
		return fmt.Errorf("persona %q: want one of %s", persona, strings.Join(Personas(), ", "))
	}
	dir := filepath.Join(claudeHome, "projects", strings.ReplaceAll(project, "/", "-"))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if persona == PersonaProgrammer {
		return writeProgrammerTranscripts(dir, project, now)
	}
	for i, p := range ResearcherPapers {
		id := fmt.Sprintf("persona-%02d", i)
		start := now.Add(-time.Duration(len(ResearcherPapers)-i) * time.Hour)
		at := func(minutes int) string {
			return start.Add(time.Duration(minutes) * time.Minute).UTC().Format(time.RFC3339)
		}
		ask := fmt.Sprintf("What is the arXiv id of the paper %q?", p.Title)
		if i == 3 {
			ask += " (my OpenAI key is sk-proj-PlantedKey0123456789abcdefXYZ and the lab wiki password: Tr0ub4dor&3x, don't lose them)"
		}
		recs := []map[string]any{
			rec("user", id, project, at(0), ask),
			rec("assistant", id, project, at(1), fmt.Sprintf("It is https://arxiv.org/abs/%sv1", p.ID)),
			rec("user", id, project, at(2), fmt.Sprintf("no, that's wrong format: give it as arXiv:%s and put the answer inside <answer></answer> tags, like always", p.ID)),
			rec("assistant", id, project, at(3), fmt.Sprintf("<answer>arXiv:%s</answer>", p.ID)),
			rec("user", id, project, at(4), "thanks"),
		}
		var b strings.Builder
		for _, r := range recs {
			line, _ := json.Marshal(r)
			b.Write(line)
			b.WriteByte('\n')
		}
		if err := os.WriteFile(filepath.Join(dir, id+".jsonl"), []byte(b.String()), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// writeProgrammerTranscripts writes the programmer's sessions: in each
// the user asks for a commit message, the agent answers in prose, and the
// user asks for a Conventional Commits line, in <answer> tags, without a
// trailing period. One session carries a planted token.
func writeProgrammerTranscripts(dir, project string, now time.Time) error {
	for i, c := range ProgrammerChanges {
		id := fmt.Sprintf("persona-dev-%02d", i)
		start := now.Add(-time.Duration(len(ProgrammerChanges)-i) * time.Hour)
		at := func(minutes int) string {
			return start.Add(time.Duration(minutes) * time.Minute).UTC().Format(time.RFC3339)
		}
		ask := "Write the commit message for this change: " + c.What + "."
		if i == 5 {
			ask += " (the CI token is ghp_PlantedToken0123456789abcdefABCDEF01, keep it out of the message)"
		}
		recs := []map[string]any{
			rec("user", id, project, at(0), ask),
			rec("assistant", id, project, at(1), "Updated the "+c.Scope+" code: "+c.What+"."),
			rec("user", id, project, at(2), "no, use Conventional Commits with no trailing period: give it as `"+c.Message()+"` and put it inside <answer></answer> tags, like always"),
			rec("assistant", id, project, at(3), "<answer>"+c.Message()+"</answer>"),
			rec("user", id, project, at(4), "thanks"),
		}
		var b strings.Builder
		for _, r := range recs {
			line, _ := json.Marshal(r)
			b.Write(line)
			b.WriteByte('\n')
		}
		if err := os.WriteFile(filepath.Join(dir, id+".jsonl"), []byte(b.String()), 0o600); err != nil {
			return err
		}
	}
	return nil
}

func rec(role, session, project, ts, text string) map[string]any {
	var content any = text
	if role == "assistant" {
		content = []map[string]string{{"type": "text", "text": text}}
	}
	return map[string]any{"type": role, "sessionId": session, "cwd": project, "gitBranch": personaBranch, "timestamp": ts,
		"message": map[string]any{"role": role, "content": content}}
}

// PaperByTitle finds a researcher paper named in text.
func PaperByTitle(text string) (Paper, bool) {
	low := strings.ToLower(text)
	ps := append([]Paper(nil), ResearcherPapers...)
	sort.Slice(ps, func(i, j int) bool { return len(ps[i].Title) > len(ps[j].Title) })
	for _, p := range ps {
		if strings.Contains(low, strings.ToLower(p.Title)) {
			return p, true
		}
	}
	return Paper{}, false
}

// SeedPersonaPackage writes a persona's starting skill package to dir
// when the persona has one and dir does not exist yet.
func SeedPersonaPackage(persona, dir string) error {
	_, files, ok := PersonaPackage(persona)
	if !ok || dir == "" {
		return nil
	}
	if _, err := os.Lstat(dir); err == nil {
		return nil
	}
	p, err := skillpkg.New(files, skillpkg.Limits{})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	return skillpkg.Write(p, dir)
}
