package nightly

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

// SkillRef is one skill of a skill root: a directory holding SKILL.md.
type SkillRef struct {
	Name string
	// Path is its SKILL.md.
	Path  string
	Topic SkillTopic
}

// ListSkills returns the skills of root, a directory of skills as an
// agent keeps them (~/.claude/skills): each subdirectory holding a
// SKILL.md that is a regular file, by directory name. A skill's name is
// its directory's name (the front matter's name only feeds its topic).
func ListSkills(root string) ([]SkillRef, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("skill_root: %w", err)
	}
	var out []SkillRef
	for _, e := range ents {
		if !e.IsDir() || e.Name()[0] == '.' {
			continue
		}
		p := filepath.Join(root, e.Name(), skillpkg.EntryFile)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("skill_root: %s: not a regular file", p)
		}
		text, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		t := TopicOf(string(text), e.Name())
		t.Name = e.Name()
		out = append(out, SkillRef{Name: e.Name(), Path: p, Topic: t})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("skill_root %s: no subdirectory holds a %s", root, skillpkg.EntryFile)
	}
	slices.SortFunc(out, func(a, b SkillRef) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// AssignSkills resolves the skill each task exercises: the skill its
// session loaded (the skill hint, when it names one of skills), else the
// one skill whose topic its words match ([SkillTopic.Exercises]; a task
// matching several is given to the first in name order). Tasks no skill
// takes are returned apart. how records, by task id, "hint" or "words".
func AssignSkills(tasks []Task, skills []SkillRef) (by map[string][]Task, none []Task, how map[string]string) {
	by, how = map[string][]Task{}, map[string]string{}
	for _, t := range tasks {
		name := ""
		for _, s := range skills {
			if t.SkillHint != "" && t.SkillHint == s.Name {
				name, how[t.ID] = s.Name, "hint"
				break
			}
		}
		if name == "" {
			for _, s := range skills {
				if ok, why := s.Topic.Exercises(t); ok {
					name, how[t.ID] = s.Name, why
					break
				}
			}
		}
		if name == "" {
			none = append(none, t)
			continue
		}
		by[name] = append(by[name], t)
	}
	return by, none, how
}
