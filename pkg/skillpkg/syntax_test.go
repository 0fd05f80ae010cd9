package skillpkg

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

func needTool(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("%s not installed", name)
	}
}

func TestSyntaxCheck(t *testing.T) {
	needTool(t, "python3")
	needTool(t, "bash")
	cases := []struct {
		name, text string
		ok         bool
		msg        string // in the refusal detail
	}{
		{"scripts/ok.py", "def f(x):\n    return x * 1.609\n", true, ""},
		{"scripts/bad.py", "def f(x)\n    return x\n", false, "scripts/bad.py"},
		{"scripts/indent.py", "if True:\nprint(1)\n", false, "IndentationError"},
		{"scripts/ok.sh", "#!/bin/sh\nfor i in 1 2; do echo $i; done\n", true, ""},
		{"scripts/bad.sh", "if [ -f x ]; then\n  echo x\n", false, "scripts/bad.sh"},
		{"scripts/shebang", "#!/usr/bin/env python3\nprint(1\n", false, "scripts/shebang"},
		{"scripts/shebang-sh", "#!/bin/bash\ncase x in\n", false, "syntax error"},
		{"scripts/notes.txt", "def f(\n", true, ""}, // not a language Syntax checks
	}
	for _, c := range cases {
		err := CheckSyntax(c.name, c.text)
		if c.ok {
			if err != nil {
				t.Errorf("%s: %v, want ok", c.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: passed, want a syntax refusal", c.name)
			continue
		}
		var re *RefusalError
		if !errors.As(err, &re) {
			t.Fatalf("%s: %v, want a *RefusalError", c.name, err)
		}
		if re.Reason != ReasonScriptSyntax || !strings.Contains(re.Detail, c.msg) {
			t.Errorf("%s: %s %q, want script_syntax mentioning %q", c.name, re.Reason, re.Detail, c.msg)
		}
		if strings.Contains(re.Detail, "skillpkg-syntax-") {
			t.Errorf("%s: temporary path leaked into detail %q", c.name, re.Detail)
		}
	}
}

func TestSyntaxMissingInterpreterRefuses(t *testing.T) {
	err := Syntax{Python: "/nonexistent/python3"}.Check("scripts/a.py", "print(1)\n")
	if err == nil || !strings.Contains(err.Error(), "cannot check") {
		t.Fatalf("missing interpreter: %v, want a cannot-check refusal", err)
	}
}

// TestBrokenScriptEditRejected: a script edit that breaks the script is a
// refused edit with its reason, and the script keeps its old text.
func TestBrokenScriptEditRejected(t *testing.T) {
	needTool(t, "python3")
	p, err := New(map[string]string{"SKILL.md": "# S\n", "scripts/convert.py": "def km(mi):\n    return mi * 1.609\n"}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	opts := ApplyOptions{Check: CheckSyntax}
	q, rep := Apply(p, []Edit{
		{File: "scripts/convert.py", Op: "replace", Target: "return mi * 1.609", Content: "return mi * (1.609"},
		{File: "scripts/convert.py", Op: "append", Content: "def mi(km):\n    return km / 1.609"},
		{File: "scripts/new.py", Op: "create_file", Content: "print(\n"},
	}, opts)
	if rep[0].Reason != ReasonScriptSyntax || !strings.Contains(rep[0].Detail, "scripts/convert.py") {
		t.Fatalf("broken replace: %+v", rep[0])
	}
	if !rep[1].Status.Applied() {
		t.Fatalf("valid append: %+v", rep[1])
	}
	if rep[2].Reason != ReasonScriptSyntax {
		t.Fatalf("broken create: %+v", rep[2])
	}
	got, _ := q.File("scripts/convert.py")
	if want := "def km(mi):\n    return mi * 1.609\n\ndef mi(km):\n    return km / 1.609\n"; got != want {
		t.Fatalf("convert.py = %q, want %q", got, want)
	}
	if _, ok := q.File("scripts/new.py"); ok {
		t.Fatal("broken new script was created")
	}
	if s := Summarize(rep); s.Refused != 2 || s.Reasons[ReasonScriptSyntax] != 2 {
		t.Fatalf("summary %+v", s)
	}
}
