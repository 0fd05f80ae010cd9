package prompts

import (
	"reflect"

	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

// A skill package (pkg/skillpkg) travels in a payload's "skill" as a
// bundle ([skillpkg.IsBundle]). The prompts of a package run differ from
// a single-file run's in two places only: a patch-mode system prompt gets
// the package rules block (package.md, before the reply format), and a
// user message gets a readable view of the package (its tree and files
// within a token budget) before the payload. A single-file skill is never
// a bundle, so its prompts are the same as without packages.

// IsPackage reports whether a payload's skill text is a multi-file skill
// package bundle.
func IsPackage(skill string) bool { return skillpkg.IsBundle(skill) }

// renderPackage renders a bundle for a user message as [skillpkg.Render]
// does, with the default budget; a bundle that does not decode is shown
// as the payload alone (false).
func renderPackage(bundle string) (string, bool) {
	p, err := skillpkg.Decode(bundle)
	if err != nil {
		return "", false
	}
	return skillpkg.Render(p, skillpkg.RenderOptions{}), true
}

// payloadSkill returns the payload's "skill" field, if it has one.
func payloadSkill(v reflect.Value) string {
	if f := v.FieldByName("Skill"); f.IsValid() && f.Kind() == reflect.String {
		return f.String()
	}
	return ""
}

// packageHeading opens the readable package view in a user message.
const packageHeading = "## The skill package"

// OpSetDescription is the patch op that replaces SKILL.md's front-matter
// description (pkg/skillpkg applies it when the run trains the
// description).
const OpSetDescription = "set_description"

// trainsDescription reports whether a payload belongs to a run that trains
// the description: an analyst input with TrainDescription set, or a merge
// whose patches hold a set_description item (which the merge must keep
// or fold, so its prompt explains the op).
func trainsDescription(v reflect.Value) bool {
	if f := v.FieldByName("TrainDescription"); f.IsValid() && f.Kind() == reflect.Bool && f.Bool() {
		return true
	}
	var lists [][]Item
	for _, name := range []string{"Patches", "Failure", "Success", "Items"} {
		f := v.FieldByName(name)
		if !f.IsValid() || !f.CanInterface() {
			continue
		}
		switch x := f.Interface().(type) {
		case [][]Item:
			lists = append(lists, x...)
		case []Item:
			lists = append(lists, x)
		}
	}
	for _, items := range lists {
		for _, it := range items {
			if it.Op == OpSetDescription {
				return true
			}
		}
	}
	return false
}
