package report

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// chromium finds Debian's chromium (package "chromium"). Without it the
// test skips, unless CI is set: CI must run it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed but CI is set: install Debian's chromium package (apt-get install -y chromium)")
	}
	t.Skip("chromium not found: install Debian's chromium package (apt-get install -y chromium) to render the HTML report")
	return ""
}

// renderDOM loads page in headless Chromium and returns the DOM after its
// scripts ran.
func renderDOM(t *testing.T, bin, page string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "report.html")
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--window-size=1280,1600",
		"--dump-dom", "file://"+path)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium --dump-dom: %v\nstderr:\n%s", err, stderr.String())
	}
	return stdout.String()
}

var (
	htmlTag   = regexp.MustCompile(`<html[^>]*>`)
	canvasTag = regexp.MustCompile(`<canvas id="([^"]+)"[^>]*>`)
	inkAttr   = regexp.MustCompile(`data-ink="(\d+)"`)
	attr      = func(tag, name string) (string, bool) {
		m := regexp.MustCompile(name + `="([^"]*)"`).FindStringSubmatch(tag)
		if m == nil {
			return "", false
		}
		return m[1], true
	}
)

func TestHTMLRendersInChromium(t *testing.T) {
	bin := chromium(t)
	var buf bytes.Buffer
	if err := setup(t, "priced").WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}

	t.Run("charts drawn", func(t *testing.T) {
		dom := renderDOM(t, bin, buf.String())
		root := htmlTag.FindString(dom)
		if errs, ok := attr(root, "data-errors"); ok {
			t.Errorf("page reported script errors: %s", errs)
		}
		if n, _ := attr(root, "data-rendered"); n != "4" {
			t.Errorf("data-rendered = %q, want 4 charts (root element %s)", n, root)
		}
		canvases := canvasTag.FindAllStringSubmatch(dom, -1)
		var ids []string
		for _, c := range canvases {
			ids = append(ids, c[1])
			m := inkAttr.FindStringSubmatch(c[0])
			if m == nil {
				t.Errorf("canvas %s was not drawn: %s", c[1], c[0])
				continue
			}
			if n, _ := strconv.Atoi(m[1]); n == 0 {
				t.Errorf("canvas %s is blank", c[1])
			}
		}
		if got := strings.Join(ids, ","); got != "chart-selection,chart-rollout,chart-test,chart-spend" {
			t.Errorf("canvases = %s, want the four charts", got)
		}
	})

	// The checks above would notice a page whose scripts fail.
	t.Run("errors noticed", func(t *testing.T) {
		broken := strings.Replace(buf.String(), "window.skillfleetReport = ", "window.skillfleetReport = noSuchValue + ", 1)
		broken = strings.Replace(broken, "</body>", `<img src="https://example.invalid/x.png"></body>`, 1)
		root := htmlTag.FindString(renderDOM(t, bin, broken))
		errs, ok := attr(root, "data-errors")
		if !ok || !strings.Contains(errs, "noSuchValue") {
			t.Errorf("broken page: data-errors = %q, want the ReferenceError", errs)
		}
		if !strings.Contains(errs, "blocked") {
			t.Errorf("broken page: data-errors = %q, want the blocked network fetch", errs)
		}
		if _, drawn := attr(root, "data-rendered"); drawn {
			t.Errorf("broken page claims charts were drawn: %s", root)
		}
	})
}

// TestPromotionAndEvalRenderInChromium: the selection chart with the
// final promotion's marker draws without a script error, and an
// evaluation's page (no charts) renders without one too.
func TestPromotionAndEvalRenderInChromium(t *testing.T) {
	bin := chromium(t)
	var buf bytes.Buffer
	if err := promoted(t).WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	root := htmlTag.FindString(renderDOM(t, bin, buf.String()))
	if errs, ok := attr(root, "data-errors"); ok {
		t.Errorf("promoted run: script errors: %s", errs)
	}
	if n, _ := attr(root, "data-rendered"); n != "4" {
		t.Errorf("promoted run: data-rendered = %q, want 4", n)
	}
	buf.Reset()
	if err := setup(t, "eval").WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	root = htmlTag.FindString(renderDOM(t, bin, buf.String()))
	if errs, ok := attr(root, "data-errors"); ok {
		t.Errorf("evaluation: script errors: %s", errs)
	}
	if n, _ := attr(root, "data-rendered"); n != "0" {
		t.Errorf("evaluation: data-rendered = %q, want 0 (no charts)", n)
	}
}
