package azure_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/backends/azure"
)

// FakeAz puts an `az` on PATH that answers `az account get-access-token`
// as the Azure CLI does, with tokens cli-token-1, cli-token-2, ... valid
// for life, and counts its runs in the returned file. With fail set it
// exits as the CLI does when nobody signed in.
func fakeAz(t *testing.T, life time.Duration, fail bool) (count string) {
	t.Helper()
	dir := t.TempDir()
	count = filepath.Join(dir, "runs")
	script := `#!/bin/sh
n=$(cat "` + count + `" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "` + count + `"
case "$*" in
*"account get-access-token"*"--resource https://cognitiveservices.azure.com"*) ;;
*) echo "unexpected arguments: $*" >&2; exit 2 ;;
esac
`
	if fail {
		script += `echo "ERROR: Please run 'az login' to setup account." >&2; exit 1` + "\n"
	} else {
		script += fmt.Sprintf(`printf '{"accessToken":"cli-token-%%s","expires_on":%%s,"tokenType":"Bearer"}\n' "$n" $(( $(date +%%s) + %d ))`+"\n", int(life.Seconds()))
	}
	if err := os.WriteFile(filepath.Join(dir, "az"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return count
}

func runs(t *testing.T, count string) int {
	t.Helper()
	b, err := os.ReadFile(count)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestAzureCLITokenCachedThenRefreshed(t *testing.T) {
	count := fakeAz(t, time.Hour, false)
	clk := &clock{t: time.Now()}
	c, err := azure.New(azure.Config{Mode: "azure_cli", Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tok, err := c.Token(ctx)
	if err != nil || tok != "cli-token-1" {
		t.Fatalf("first token = %q, %v", tok, err)
	}
	// Within its life the token is reused: az is not run again.
	clk.add(30 * time.Minute)
	if tok, _ = c.Token(ctx); tok != "cli-token-1" || runs(t, count) != 1 {
		t.Fatalf("after 30m: token %q, az runs %d; want the cached token and one run", tok, runs(t, count))
	}
	// Five minutes before expiry it is replaced.
	clk.add(26 * time.Minute)
	if tok, _ = c.Token(ctx); tok != "cli-token-2" || runs(t, count) != 2 {
		t.Fatalf("near expiry: token %q, az runs %d; want cli-token-2 and two runs", tok, runs(t, count))
	}
	// A token the API refused is dropped at once.
	c.Invalidate("cli-token-2")
	if tok, _ = c.Token(ctx); tok != "cli-token-3" || c.Fetches() != 3 {
		t.Fatalf("after Invalidate: token %q, fetches %d", tok, c.Fetches())
	}
	if s := fmt.Sprint(c); strings.Contains(s, "cli-token") {
		t.Errorf("String shows the token: %s", s)
	}
}

func TestAzureCLINotSignedInNamesTheFix(t *testing.T) {
	fakeAz(t, time.Hour, true)
	c, err := azure.New(azure.Config{Mode: "azure_cli"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Token(context.Background())
	if err == nil || !strings.Contains(err.Error(), "az login") || !strings.Contains(err.Error(), "azure_cli") {
		t.Fatalf("error = %v; want one naming azure_cli and az login", err)
	}
}

func TestAzureCLIMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	c, err := azure.New(azure.Config{Mode: "azure_cli"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Token(context.Background())
	if err == nil || !strings.Contains(err.Error(), "not on PATH") {
		t.Fatalf("error = %v; want one saying az is not on PATH", err)
	}
}

// fakeIdentityEndpoint serves the managed identity token protocol of App
// Service (IDENTITY_ENDPOINT with the IDENTITY_HEADER secret) on loopback,
// issuing mi-token-1, mi-token-2, ... valid for life.
func fakeIdentityEndpoint(t *testing.T, life time.Duration, wantClientID string) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	const secret = "identity-header-secret"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		switch {
		case r.Header.Get("X-IDENTITY-HEADER") != secret:
			http.Error(w, `{"error":"bad identity header"}`, http.StatusUnauthorized)
			return
		case q.Get("resource") != "https://cognitiveservices.azure.com":
			http.Error(w, `{"error":"unexpected resource `+q.Get("resource")+`"}`, http.StatusBadRequest)
			return
		case q.Get("client_id") != wantClientID:
			http.Error(w, `{"error":"unexpected client_id `+q.Get("client_id")+`"}`, http.StatusBadRequest)
			return
		}
		i := n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":"mi-token-%d","expires_on":"%d","resource":"https://cognitiveservices.azure.com","token_type":"Bearer","client_id":"x"}`,
			i, time.Now().Add(life).Unix())
	}))
	t.Cleanup(srv.Close)
	t.Setenv("IDENTITY_ENDPOINT", srv.URL+"/msi/token")
	t.Setenv("IDENTITY_HEADER", secret)
	return &n
}

func TestManagedIdentityTokenRefreshed(t *testing.T) {
	for _, tc := range []struct{ name, clientID string }{{"system-assigned", ""}, {"user-assigned", "11111111-2222-3333-4444-555555555555"}} {
		t.Run(tc.name, func(t *testing.T) {
			n := fakeIdentityEndpoint(t, 2*time.Second, tc.clientID)
			c, err := azure.New(azure.Config{Mode: "aad", ClientID: tc.clientID}) // SkillOpt's alias
			if err != nil {
				t.Fatal(err)
			}
			if c.Mode() != azure.ModeManagedIdentity {
				t.Fatalf("mode %s", c.Mode())
			}
			ctx := context.Background()
			tok, err := c.Token(ctx)
			if err != nil || tok != "mi-token-1" {
				t.Fatalf("first token = %q, %v", tok, err)
			}
			if tok, _ = c.Token(ctx); tok != "mi-token-1" {
				t.Fatalf("second call within the token's life fetched %q", tok)
			}
			// The token lives 2s and is replaced after half of it.
			time.Sleep(1100 * time.Millisecond)
			tok, err = c.Token(ctx)
			if err != nil || tok != "mi-token-2" || n.Load() != 2 {
				t.Fatalf("after 1.1s: token %q, %v, endpoint hit %d times; want mi-token-2 and 2", tok, err, n.Load())
			}
		})
	}
}

func TestManagedIdentityRefusedNamesTheFix(t *testing.T) {
	fakeIdentityEndpoint(t, time.Hour, "")
	t.Setenv("IDENTITY_HEADER", "wrong")
	c, err := azure.New(azure.Config{Mode: "managed_identity"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Token(context.Background())
	if err == nil || !strings.Contains(err.Error(), "managed identity") {
		t.Fatalf("error = %v", err)
	}
}

func TestParseMode(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"api_key": "api_key", "Azure-CLI": "azure_cli", "aad": "managed_identity", "azure_ad": "managed_identity",
		"managed_identity": "managed_identity", "workload_identity": "workload_identity", "bearer": "token", "openai_compatible": "openai_compatible",
	} {
		if got, err := azure.ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := azure.ParseMode("azure_clii"); err == nil || !strings.Contains(err.Error(), "azure_cli") {
		t.Errorf("ParseMode(azure_clii) error = %v; want one listing the modes", err)
	}
}
