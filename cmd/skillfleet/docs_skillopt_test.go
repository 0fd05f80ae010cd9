package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestSkillOptUsersTableNamesItsTests: every row of docs/skillopt-users.md's
// tables (issue #41's findings 1-11 and the smaller edges of 11) names at
// least one test, and every test it names is a test function of this
// repository: the page cannot claim a test that does not exist.
func TestSkillOptUsersTableNamesItsTests(t *testing.T) {
	root := repoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "docs", "skillopt-users.md"))
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]bool{}
	funcRE := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range funcRE.FindAllSubmatch(src, -1) {
			tests[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	nameRE := regexp.MustCompile("`(Test\\w+)(?:/[^`]*)?`")
	numbered, edges := 0, 0
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| ---") || strings.HasPrefix(line, "| # ") || strings.HasPrefix(line, "| Found ") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		shown := cells[len(cells)-1]
		if regexp.MustCompile(`^\d+$`).MatchString(cells[0]) {
			numbered++
			if cells[0] == "11" {
				if shown != "each row below" {
					t.Errorf("row 11 %q: want its tests in the table below", shown)
				}
				continue
			}
		} else {
			edges++
		}
		names := nameRE.FindAllStringSubmatch(shown, -1)
		if len(names) == 0 {
			t.Errorf("row %q names no test", cells[0])
		}
		for _, n := range names {
			if !tests[n[1]] {
				t.Errorf("row %q names %s, which no _test.go file defines", cells[0], n[1])
			}
		}
	}
	if numbered != 11 || edges < 10 {
		t.Errorf("read %d numbered rows and %d smaller edges, want 11 and the edges of item 11", numbered, edges)
	}
}

// TestInstallSectionIsCurrent: README.md's install section names the Go
// version go.mod asks for, installs no version tag (there is none yet),
// and names scripts/bench/natsd, which exists, for a current nats-server;
// docs/deploy.md no longer says TLS is being added.
func TestInstallSectionIsCurrent(t *testing.T) {
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	if want := "Building needs Go " + string(m[1]) + " or later"; !bytes.Contains(readme, []byte(want)) {
		t.Errorf("README.md does not say %q", want)
	}
	if tag := regexp.MustCompile(`go install \S+@v\d+\.\d+\.\d+`).Find(readme); tag != nil {
		t.Errorf("README.md installs a version tag: %s", tag)
	}
	if !bytes.Contains(readme, []byte("scripts/bench/natsd")) {
		t.Error("README.md does not name scripts/bench/natsd for a current nats-server")
	}
	if _, err := os.Stat(filepath.Join(root, "scripts", "bench", "natsd")); err != nil {
		t.Errorf("README.md names scripts/bench/natsd: %v", err)
	}
	deploy, err := os.ReadFile(filepath.Join(root, "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(deploy, []byte("being added")) {
		t.Error("docs/deploy.md still says something is being added")
	}
}

// TestDocsNameRealSleepCommands: every `skillfleet sleep CMD` (or `sleep
// CMD` at the start of a code span) in README.md and docs/ names a command
// `skillfleet sleep` knows.
func TestDocsNameRealSleepCommands(t *testing.T) {
	root := repoRoot(t)
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(root, "README.md"))
	code := regexp.MustCompile("(?s)```.*?```|`[^`\n]+`")
	cmdRE := regexp.MustCompile(`(?:^|skillfleet |\./skillfleet |go run \./cmd/skillfleet )sleep ([a-z][a-z-]*)`)
	where := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, span := range code.FindAllString(string(b), -1) {
			span = strings.Trim(span, "`")
			for _, line := range strings.Split(span, "\n") {
				for _, m := range cmdRE.FindAllStringSubmatch(strings.TrimSpace(line), -1) {
					if _, ok := where[m[1]]; !ok {
						where[m[1]] = filepath.Base(f)
					}
				}
			}
		}
	}
	if len(where) < 5 {
		t.Fatalf("found only %v: the scan is broken", where)
	}
	var subs []string
	for s := range where {
		subs = append(subs, s)
	}
	sort.Strings(subs)
	for _, sub := range subs {
		var stdout, stderr bytes.Buffer
		run([]string{"sleep", sub, "--help"}, &stdout, &stderr)
		if strings.Contains(stderr.String()+stdout.String(), "unknown command") {
			t.Errorf("%s names `skillfleet sleep %s`, which the CLI does not know: %s", where[sub], sub, strings.TrimSpace(stderr.String()))
		}
	}
	t.Logf("sleep commands the docs name: %v", subs)
}
