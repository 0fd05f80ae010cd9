package serve

import (
	"io"
	"log/slog"
	"net/http"
	"testing"
)

func TestBindsLoopback(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		addr string
		bare bool
		want bool
	}{
		{"127.0.0.1:0", false, true},
		{"[::1]:0", false, true},
		{"localhost:0", false, true},
		{"0.0.0.0:0", false, false},
		{":7070", false, false},
		{":9464", true, true},
		{"9464", true, true},
		{"192.168.1.20:7070", false, false},
	} {
		if got := bindsLoopback(c.addr, c.bare); got != c.want {
			t.Errorf("bindsLoopback(%q, %v) = %v, want %v", c.addr, c.bare, got, c.want)
		}
	}
}

// TestHTTPServesUntilStopped: HTTP answers once it returns and stops
// listening when stopped.
func TestHTTPServesUntilStopped(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.DiscardHandler)
	stop, addr, err := HTTP(t.Context(), "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}), nil, log)
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + addr.String() + "/"
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if string(body) != "ok" {
		t.Errorf("GET %s = %q, want ok", url, body)
	}
	stop()
	if resp, err := http.Get(url); err == nil {
		_ = resp.Body.Close()
		t.Errorf("GET %s after stop answered %s", url, resp.Status)
	}
}
