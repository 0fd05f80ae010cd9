package ui

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConsole: off a terminal each status is a plain line among the
// others; on one it is the status line, cleared when plain lines pass and
// at Close.
func TestConsole(t *testing.T) {
	var plain bytes.Buffer
	c := NewConsole(&plain, false)
	if c.Terminal() != nil {
		t.Fatal("a console off a terminal has a status line")
	}
	_, _ = c.Write([]byte("cell a: started\n"))
	c.Status("LIVE", "campaign: 0 done")
	c.Close()
	if got := plain.String(); got != "cell a: started\ncampaign: 0 done\n" {
		t.Errorf("plain output %q", got)
	}

	var tty bytes.Buffer
	c = NewConsole(&tty, true)
	c.Status("LIVE", "campaign: 0 done")
	_, _ = c.Write([]byte("cell a: started\n"))
	c.Close()
	if got, want := tty.String(), "\r\033[KLIVE\r\033[Kcell a: started\n\r\033[KLIVE\r\033[K"; got != want {
		t.Errorf("terminal output\n got %q\nwant %q", got, want)
	}
}

// TestServeAnnounced: the line says where the dashboard is, and with a
// token how to open it, never the token itself.
func TestServeAnnounced(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "myrun")
	newFakeRun(t, dir, 1)
	for token, want := range map[string]string{"": "(read-only)", "tok-secret-1": "?token=$" + TokenEnv + "; stopping enabled)"} {
		var b bytes.Buffer
		srv, err := ServeAnnounced(t.Context(), Options{Addr: "127.0.0.1:0", Token: token}, &b, dir)
		if err != nil {
			t.Fatal(err)
		}
		srv.Close()
		if got := b.String(); !strings.HasPrefix(got, "dashboard: "+srv.URL()) || !strings.Contains(got, want) || (token != "" && strings.Contains(got, token)) {
			t.Errorf("token %q: %q", token, got)
		}
	}
	if _, err := ServeAnnounced(t.Context(), Options{Addr: "0.0.0.0:0"}, &bytes.Buffer{}, dir); err == nil {
		t.Error("an open bind without a token was served")
	}
}

func TestIsTerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) || IsTerminal(&bytes.Buffer{}) {
		t.Error("a file or a buffer taken for a terminal")
	}
}
