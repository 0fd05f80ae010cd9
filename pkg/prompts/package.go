package prompts

import (
	"reflect"
	"strings"
	"sync"
)

// A skill package (pkg/skillpkg) travels in a payload's "skill" as a
// bundle: one text whose first line starts with bundlePrefix. The prompts
// of a package run differ from a single-file run's in two places only: a
// patch-mode system prompt gets the package rules block (package.md,
// before the reply format), and a user message gets a readable view of
// the package (its tree and files within a token budget) before the
// payload. A single-file skill is never a bundle, so its prompts are
// byte-identical to those before packages existed.
const bundlePrefix = "<!-- SKILLPKG v1 files="

// IsPackage reports whether a payload's skill text is a multi-file skill
// package bundle.
func IsPackage(skill string) bool { return strings.HasPrefix(skill, bundlePrefix) }

// PackageView renders a bundle for a user message. pkg/skillpkg sets it
// (it imports this package, not the other way round); while unset, a
// package's user message shows the payload alone.
var (
	packageViewMu sync.RWMutex
	packageView   func(bundle string) (string, bool)
)

// SetPackageView installs the function that renders a package bundle for
// the user message (pkg/skillpkg installs skillpkg.Render at init).
func SetPackageView(f func(bundle string) (string, bool)) {
	packageViewMu.Lock()
	defer packageViewMu.Unlock()
	packageView = f
}

func renderPackage(bundle string) (string, bool) {
	packageViewMu.RLock()
	f := packageView
	packageViewMu.RUnlock()
	if f == nil {
		return "", false
	}
	return f(bundle)
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
