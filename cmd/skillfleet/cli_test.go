package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBadConfigIsOneLineNamingFileAndKey(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	skill := write("skill.md", "# seed\n")
	unknown := write("unknown.yaml", "env:\n  name: sim\n  skill_init: "+skill+"\ntrain:\n  batch_sise: 4\n")
	wrongType := write("wrongtype.yaml", "env:\n  name: sim\n  skill_init: "+skill+"\ntrain:\n  batch_size: lots\n")
	copilot := write("copilot.yaml", "env:\n  name: sim\n  skill_init: "+skill+"\nmodel:\n  backend: gemini\n")
	missingInit := write("noinit.yaml", "env:\n  name: sim\n  skill_init: "+filepath.Join(dir, "nope.md")+"\n")
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"unknown key", []string{"train", "--config", unknown}, []string{unknown, "train.batch_sise"}},
		{"wrong type", []string{"train", "--config", wrongType}, []string{wrongType, "train.batch_size"}},
		{"missing file", []string{"train", "--config", filepath.Join(dir, "absent.yaml")}, []string{"absent.yaml"}},
		{"missing skill_init", []string{"train", "--config", missingInit}, []string{"env.skill_init"}},
		{"unimplemented backend", []string{"train", "--config", copilot}, []string{copilot, "model.backend", "gemini", "supported: anthropic"}},
		{"bad override", []string{"train", "--config", missingInit, "--set", "nosuch.key=1"}, []string{"--set", "nosuch"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.args, &stdout, &stderr)
			if code != exitUsage {
				t.Errorf("exit code = %d, want %d (stderr %q)", code, exitUsage, stderr.String())
			}
			msg := strings.TrimSpace(stderr.String())
			if strings.Count(msg, "\n") != 0 {
				t.Errorf("error is %d lines, want one:\n%s", strings.Count(msg, "\n")+1, msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not name %q", msg, w)
				}
			}
		})
	}
}

func TestHelpListsEveryCommand(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--help"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("--help exit %d", code)
	}
	for _, c := range []string{"train", "coordinator", "worker", "eval", "sim-llm", "report"} {
		if !strings.Contains(stdout.String(), "  "+c+" ") {
			t.Errorf("--help does not list %s:\n%s", c, stdout.String())
		}
	}
}
