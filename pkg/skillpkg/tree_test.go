package skillpkg

import (
	"errors"
	"strings"
	"testing"
)

func TestMapTextKeepsPathsAndExecBits(t *testing.T) {
	p, err := New(map[string]string{
		EntryFile:            "---\nname: x\ndescription: y\n---\nsecret s3cr3t\n",
		"references/a.md":    "s3cr3t here\n",
		"scripts/convert.py": "print('s3cr3t')\n",
	}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	q, err := p.MapText(func(_, text string) string { return strings.ReplaceAll(text, "s3cr3t", "[gone]") })
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range p.Paths() {
		got, ok := q.File(name)
		if !ok || strings.Contains(got, "s3cr3t") || !strings.Contains(got, "[gone]") {
			t.Errorf("%s after MapText = %q", name, got)
		}
		if q.Executable(name) != p.Executable(name) {
			t.Errorf("%s: executable %t, want %t", name, q.Executable(name), p.Executable(name))
		}
	}
	if orig, _ := p.File("references/a.md"); orig != "s3cr3t here\n" {
		t.Fatalf("MapText changed the original package: %q", orig)
	}
	_, err = p.MapText(func(_, text string) string { return text + "\x00" })
	var re *RefusalError
	if !errors.As(err, &re) || re.Reason != ReasonBinary {
		t.Fatalf("MapText to binary = %v, want a %s refusal", err, ReasonBinary)
	}
}
