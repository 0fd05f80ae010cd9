package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `sandbox check` without bwrap on PATH: exit 1, the missing piece named.
func TestSandboxCheckWithoutBwrap(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	t.Setenv("PATH", t.TempDir())
	var stdout, stderr bytes.Buffer
	code := run([]string{"sandbox", "check"}, &stdout, &stderr)
	if code != exitError || !strings.Contains(stdout.String(), "MISSING") ||
		!strings.Contains(stderr.String(), "bubblewrap (bwrap) is not on PATH: install it (Debian/Ubuntu: apt-get install bubblewrap") {
		t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
	}
}

// `sandbox run`: output, status line, --keep; a failing program exits 1.
func TestSandboxRun(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("CI: bwrap missing (apt-get install bubblewrap)")
		}
		t.Skip("bwrap not installed")
	}
	if exec.Command("/usr/bin/python3", "-c", "import openpyxl").Run() != nil {
		t.Skip("no /usr/bin/python3 with openpyxl")
	}
	dir := t.TempDir()
	prog := filepath.Join(dir, "p.py")
	os.WriteFile(prog, []byte("import openpyxl\nwb = openpyxl.load_workbook(INPUT_PATH)\nwb.active['C1'] = 3\nwb.save(OUTPUT_PATH)\nprint('saved')\n"), 0o644)
	input := filepath.Join("..", "..", "pkg", "bench", "spreadsheet", "testdata", "spreadsheet", "204", "1_204_input.xlsx")
	keep := filepath.Join(dir, "keep")
	var stdout, stderr bytes.Buffer
	code := run([]string{"sandbox", "run", prog, "--input", input, "--keep", keep}, &stdout, &stderr)
	out := stdout.String()
	if code != exitOK || !strings.HasPrefix(out, "saved\n") || !strings.Contains(out, "--- exit 0 in") ||
		!strings.Contains(out, "OUTPUT_PATH: file,") || !strings.Contains(out, "isolation: bubblewrap") {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr.String())
	}
	for _, f := range []string{"output.xlsx", "input.xlsx", "solution.py"} {
		if _, err := os.Stat(filepath.Join(keep, f)); err != nil {
			t.Errorf("--keep: %v", err)
		}
	}
	os.WriteFile(prog, []byte("import os\nos.mkfifo(OUTPUT_PATH)\nraise SystemExit(4)\n"), 0o644)
	stdout.Reset()
	code = run([]string{"sandbox", "run", "--input", input, prog}, &stdout, &stderr)
	if code != exitError || !strings.Contains(stdout.String(), "--- exit 4") || !strings.Contains(stdout.String(), "OUTPUT_PATH: fifo") {
		t.Errorf("failing program: exit %d\n%s", code, stdout.String())
	}
	if code := run([]string{"sandbox", "run", prog}, &stdout, &stderr); code != exitUsage {
		t.Errorf("no --input: exit %d", code)
	}
}
