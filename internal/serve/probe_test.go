package serve

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestProbe(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.Error(w, "draining", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	}))
	defer srv.Close()
	if body, err := Probe(t.Context(), srv.URL+"/healthz"); err != nil || string(body) != "ok\n" {
		t.Errorf("Probe of a healthy endpoint = %q, %v", body, err)
	}
	_, err := Probe(t.Context(), srv.URL+"/other")
	if err == nil || !strings.Contains(err.Error(), "503 Service Unavailable") || !strings.Contains(err.Error(), "draining") {
		t.Errorf("Probe of a 503 = %v, want the status and body", err)
	}
	var bad BadURLError
	if _, err := Probe(t.Context(), "http://[::1"); !errors.As(err, &bad) {
		t.Errorf("Probe of a URL that does not parse = %v, want a BadURLError", err)
	}
}
