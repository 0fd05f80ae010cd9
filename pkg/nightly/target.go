package nightly

import (
	"regexp"
	"strings"
	"unicode"

	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

// SkillTopic is what says which tasks exercise a skill: its name, and
// the words of its name and headings (strong) and of its description
// (weak).
type SkillTopic struct {
	Name   string
	strong map[string]bool
	weak   map[string]bool
}

// topicStopWords are words too common in skills and requests to say
// which skill a task exercises.
var topicStopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`the and for you your this that with from what when which about into its are was were
		can could would should will does did done have has had not use used using read reads before after answer answers
		question questions user users ask asks asked give make write one two all any each every skill skills learned
		agent agents file files project please help need want how why who where here there them they then than also just`) {
		topicStopWords[w] = true
	}
}

var headingLine = regexp.MustCompile(`(?m)^#{1,6}\s+(.+)$`)

// topicWords are the words of a text that can say what it is about:
// lower case, three letters or more, not a stop word, a plural's final s
// dropped (so "papers" meets "paper").
func topicWords(s string) map[string]bool {
	ws := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len([]rune(w)) < 3 || topicStopWords[w] {
			continue
		}
		if len(w) > 4 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
			w = w[:len(w)-1]
		}
		ws[w] = true
	}
	return ws
}

// TopicOf returns a skill's topic from its SKILL.md text (front matter
// and headings outside the learned block) and its name (the front
// matter's, else dirName).
func TopicOf(entry, dirName string) SkillTopic {
	fm, _ := skillpkg.ParseFrontMatter(entry)
	name := fm.Name
	if name == "" {
		name = dirName
	}
	t := SkillTopic{Name: name, strong: topicWords(strings.NewReplacer("-", " ", "_", " ").Replace(name)), weak: topicWords(fm.Description)}
	for _, m := range headingLine.FindAllStringSubmatch(OutsideBlock(entry), -1) {
		for w := range topicWords(m[1]) {
			t.strong[w] = true
		}
	}
	return t
}

// Exercises reports whether a task exercises the skill, and how it was
// decided: "hint" when the task's skill hint (the skill the session
// loaded) is the skill, "other skill" when it names another one, "words"
// when the task's intent, context and tags share a word with the skill's
// name or headings or two with its description, else "".
func (t SkillTopic) Exercises(task Task) (bool, string) {
	switch {
	case task.SkillHint != "" && strings.EqualFold(task.SkillHint, t.Name):
		return true, "hint"
	case task.SkillHint != "":
		return false, "other skill"
	}
	strong, weak := 0, 0
	for w := range topicWords(task.Intent + "\n" + task.Context + "\n" + strings.Join(task.Tags, " ")) {
		if t.strong[w] {
			strong++
		} else if t.weak[w] {
			weak++
		}
	}
	if strong > 0 || weak >= 2 {
		return true, "words"
	}
	return false, ""
}

// FilterForSkill keeps the tasks that exercise the skill (see
// [SkillTopic.Exercises]) and returns the others apart. When none
// exercises it, every task is kept (a night on a new or terse skill
// still learns) and dropped is nil.
func FilterForSkill(tasks []Task, topic SkillTopic) (kept, dropped []Task) {
	for _, t := range tasks {
		if ok, _ := topic.Exercises(t); ok {
			kept = append(kept, t)
		} else {
			dropped = append(dropped, t)
		}
	}
	if len(kept) == 0 {
		return tasks, nil
	}
	return kept, dropped
}
