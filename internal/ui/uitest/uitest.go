// Package uitest drives headless Chromium (Debian's chromium package)
// through the DevTools protocol for the dashboard's tests: a fresh profile,
// no background traffic, names outside loopback made unresolvable, and a
// log of every network request the page makes.
package uitest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// RequireEnv, set to 1, makes a missing chromium a test failure instead of
// a skip.
const RequireEnv = "SKILLFLEET_REQUIRE_CHROMIUM"

// Chromium returns the chromium binary, or skips the test when there is
// none (fails instead when SKILLFLEET_REQUIRE_CHROMIUM=1).
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("chromium is not installed but %s=1: install Debian's chromium package (apt-get install -y chromium)", RequireEnv)
	}
	t.Skipf("chromium not found: install Debian's chromium package (apt-get install -y chromium) to run the dashboard's browser tests, or set %s=1 to make this a failure", RequireEnv)
	return ""
}

// Browser is one headless Chromium with one tab.
type Browser struct {
	Ctx context.Context
	t   testing.TB

	mu       sync.Mutex
	requests []string
	urls     map[network.RequestID]string
	failed   []string
}

// Option changes how New starts Chromium.
type Option func(*config)

type config struct{ realResolver bool }

// RealResolver leaves name resolution to the system: without it every
// name but loopback is made unresolvable. For a test whose network is cut
// off by other means (a network namespace with loopback only).
func RealResolver() Option { return func(c *config) { c.realResolver = true } }

// New starts Chromium for the test (closed at its end).
func New(t testing.TB, options ...Option) *Browser {
	t.Helper()
	var cfg config
	for _, o := range options {
		o(&cfg)
	}
	bin := Chromium(t)
	dir := t.TempDir()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(filepath.Join(dir, "profile")),
		chromedp.WindowSize(1280, 1400),
	}
	if !cfg.realResolver {
		// Any name but loopback fails to resolve: a page that needed
		// the network would show it.
		opts = append(opts, chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost"))
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelA() })
	b := &Browser{Ctx: ctx, t: t, urls: map[network.RequestID]string{}}
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	if err := chromedp.Listen(ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			b.requests = append(b.requests, e.Request.URL)
			b.urls[e.RequestID] = e.Request.URL
		case *network.EventResponseReceived:
			if e.Response.Status >= 400 {
				b.failed = append(b.failed, fmt.Sprintf("%s: HTTP %d", e.Response.URL, int(e.Response.Status)))
			}
		case *network.EventLoadingFailed:
			b.failed = append(b.failed, fmt.Sprintf("%s: %s", b.urls[e.RequestID], e.ErrorText))
		}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("enable the network log: %v", err)
	}
	return b
}

// Navigate opens url in the tab.
func (b *Browser) Navigate(url string) error {
	ctx, cancel := context.WithTimeout(b.Ctx, time.Minute)
	defer cancel()
	return chromedp.Do(ctx, chromedp.Navigate(url))
}

// Eval evaluates a JavaScript expression in the page.
func Eval[T any](b *Browser, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(b.Ctx, 30*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr))
}

// WaitFor evaluates expr every 100ms until it is true, or fails after
// timeout with what the page shows.
func (b *Browser) WaitFor(expr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		ok, err := Eval[bool](b, "!!("+expr+")")
		if err == nil && ok {
			return nil
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	state, _ := Eval[string](b, `JSON.stringify(Object.assign({}, document.documentElement.dataset))`)
	if last != nil {
		return fmt.Errorf("waited %s for %s (last error %w); page state %s", timeout, expr, last, state)
	}
	return fmt.Errorf("waited %s for %s; page state %s", timeout, expr, state)
}

// Screenshot writes a PNG of the window (full: of the whole page).
func (b *Browser) Screenshot(path string, full bool) error {
	ctx, cancel := context.WithTimeout(b.Ctx, time.Minute)
	defer cancel()
	shot := chromedp.CaptureScreenshot()
	if full {
		shot = chromedp.FullScreenshot(100)
	}
	png, err := chromedp.Run(ctx, shot)
	if err != nil {
		return err
	}
	return os.WriteFile(path, png, 0o644)
}

// Requests lists the URLs the page requested so far.
func (b *Browser) Requests() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.requests)
}

// Failed lists the requests that failed (no answer, or an HTTP error
// status) so far, each with why.
func (b *Browser) Failed() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.failed)
}

// NonLoopback lists the requests to anything but a loopback address
// (data: URLs excepted).
func (b *Browser) NonLoopback() []string {
	var out []string
	for _, r := range b.Requests() {
		u, err := url.Parse(r)
		if err != nil {
			out = append(out, r)
			continue
		}
		if u.Scheme == "data" || u.Scheme == "about" {
			continue
		}
		h := u.Hostname()
		if ip := net.ParseIP(h); h == "localhost" || (ip != nil && ip.IsLoopback()) {
			continue
		}
		out = append(out, r)
	}
	return out
}
