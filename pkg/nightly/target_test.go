package nightly

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFilterForSkillKeepsTheTasksThatExerciseIt(t *testing.T) {
	entry := "---\nname: papers\ndescription: Cite research articles and preprints correctly.\n---\n\n# Papers\n\n## Citation formats\n\n" + emptyBlock()
	topic := TopicOf(entry, "dir-name")
	if topic.Name != "papers" {
		t.Fatalf("name %q", topic.Name)
	}
	task := func(id, intent, hint string) Task {
		return Task{ID: id, Intent: intent, SkillHint: hint, Judge: Judge{Kind: JudgeRubric, Rubric: "ok"}}
	}
	tasks := []Task{
		task("paper", "What is the arXiv id of the paper BERT?", ""),           // "paper" meets the name's "papers"
		task("cite", "Give me the citation for this one", ""),                  // a heading word
		task("desc", "Find research preprints on diffusion", ""),               // two description words
		task("one-desc", "Summarise this research meeting", ""),                // one description word only
		task("cooking", "Suggest a recipe for dinner tonight", ""),             // nothing shared
		task("hinted", "Do the usual thing", "papers"),                         // the session loaded the skill
		task("other", "What is the arXiv id of the paper Adam?", "git-helper"), // it loaded another skill
	}
	kept, dropped := FilterForSkill(tasks, topic)
	var k, d []string
	for _, t := range kept {
		k = append(k, t.ID)
	}
	for _, t := range dropped {
		d = append(d, t.ID)
	}
	if strings.Join(k, ",") != "paper,cite,desc,hinted" || strings.Join(d, ",") != "one-desc,cooking,other" {
		t.Fatalf("kept %v, dropped %v", k, d)
	}
	if ok, how := topic.Exercises(tasks[5]); !ok || how != "hint" {
		t.Fatalf("Exercises(hinted) = %t %q", ok, how)
	}
	// When no task exercises the skill, every task is kept.
	kept, dropped = FilterForSkill(tasks[4:5], topic)
	if len(kept) != 1 || dropped != nil {
		t.Fatalf("no match: kept %d, dropped %d", len(kept), len(dropped))
	}
	// A SKILL.md without front matter is named after its directory.
	if TopicOf("# Notes\n", "git-helper").Name != "git-helper" {
		t.Fatal("the directory name is not the fallback name")
	}
}

func TestLessonsAreBoundedRedactedAndDeduplicated(t *testing.T) {
	var st State
	lure := Edit{Op: "add", Content: HabitHarmful}
	st.Learn([]Lesson{NewLesson(1, "skill", lure, false, "val score 0.4167 does not beat 1.0000")})
	st.Learn([]Lesson{NewLesson(2, "skill", Edit{Op: "add", Content: strings.ToUpper(HabitHarmful)}, false, "again")})
	if len(st.Lessons) != 1 || st.Lessons[0].Night != 2 {
		t.Fatalf("lessons %+v: want the newer of the two about the same edit", st.Lessons)
	}
	if got := st.Lessons[0].Text(); !strings.Contains(got, "rejected") || !strings.Contains(got, "night 2") {
		t.Fatalf("Text() = %q", got)
	}
	secret := NewLesson(3, "memory", Edit{Op: "add", Content: "use key sk-proj-PlantedKey0123456789abcdefXYZ " + strings.Repeat("x", 900)}, true, "kept")
	if ContainsSecret(secret.Content) || len(secret.Content) > 2*maxLessonText {
		t.Fatalf("lesson content %q", secret.Content)
	}
	for i := range 3 * MaxLessons {
		st.Learn([]Lesson{NewLesson(10+i, "skill", Edit{Op: "add", Content: strings.Repeat("y", i+1)}, true, "kept")})
	}
	if len(st.Lessons) != MaxLessons || st.Lessons[MaxLessons-1].Night != 10+3*MaxLessons-1 {
		t.Fatalf("%d lessons, last %+v", len(st.Lessons), st.Lessons[len(st.Lessons)-1])
	}
}

func TestAssignSkillsByHintThenWords(t *testing.T) {
	root := t.TempDir()
	for name, entry := range map[string]string{
		"papers":  "---\nname: papers\ndescription: cite research articles\n---\n\n# Papers\n",
		"commits": "# Commit messages\n",
		"empty":   "",
	} {
		if err := os.MkdirAll(filepath.Join(root, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name, "SKILL.md"), []byte(entry), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "no-skill-here"), 0o755); err != nil {
		t.Fatal(err)
	}
	skills, err := ListSkills(root)
	if err != nil || len(skills) != 3 || skills[0].Name != "commits" || skills[2].Name != "papers" {
		t.Fatalf("ListSkills = %+v, %v", skills, err)
	}
	task := func(id, intent, hint string) Task { return Task{ID: id, Intent: intent, SkillHint: hint} }
	by, none, how := AssignSkills([]Task{
		task("a", "What is the arXiv id of the paper BERT?", ""),
		task("b", "Write the commit message for this change", ""),
		task("c", "Do the usual", "empty"),
		task("d", "Suggest a recipe", ""),
		task("e", "What is the arXiv id of the paper Adam?", "commits"), // the session loaded commits
	}, skills)
	if len(by["papers"]) != 1 || len(by["commits"]) != 2 || len(by["empty"]) != 1 || len(none) != 1 || none[0].ID != "d" {
		t.Fatalf("by %v, none %v", by, none)
	}
	if how["a"] != "words" || how["c"] != "hint" || how["e"] != "hint" {
		t.Fatalf("how %v", how)
	}
	if _, err := ListSkills(filepath.Join(root, "no-skill-here")); err == nil {
		t.Fatal("a root without skills is not an error")
	}
}
