package main

import (
	"slices"
	"testing"
)

// The test module's package rules declares one exported name of each
// kind: used by another package, used inside its own package, used by an
// in-package test, by an external test package, by nothing; a method and
// a field used by tests only, a field used by app, and a String method.
func TestCheckFindsTestOnlyExports(t *testing.T) {
	t.Parallel()
	found, err := check("testdata/mod", []string{"rules"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range found {
		got = append(got, f.String())
	}
	want := []string{
		"rules/rules.go:11: rules.TestOnly is used only by tests",
		"rules/rules.go:14: rules.XTestOnly is used only by tests",
		"rules/rules.go:17: rules.Unused is used nowhere",
		"rules/rules.go:22: rules.T.F is used only by tests",
		"rules/rules.go:27: rules.T.M is used only by tests",
	}
	if !slices.Equal(got, want) {
		t.Errorf("check found\n%q\nwant\n%q", got, want)
	}
}

func TestCheckNamesAMissingPackage(t *testing.T) {
	t.Parallel()
	if _, err := check("testdata/mod", []string{"nosuch"}); err == nil {
		t.Error("a package not in the module was accepted")
	}
}
