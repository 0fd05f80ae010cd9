package fleet

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/internal/ui"
	"github.com/skillfleet/skillfleet/pkg/store/redisstore"
	"github.com/skillfleet/skillfleet/pkg/store/storetest"
)

// TestSharedLevelsSkipsHiddenEndpoints: an endpoint shown without its
// credentials or query names no bucket, so its levels stay unknown rather
// than read from a key nobody draws from (which would read as full).
func TestSharedLevelsSkipsHiddenEndpoints(t *testing.T) {
	t.Parallel()
	rs := storetest.RedisServer(t)
	st, err := redisstore.New(redisstore.Options{URL: rs.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := t.Context()
	if _, err := st.Limiter().Take(ctx, "openai|http://127.0.0.1:9/v1|m|rpm", 40, 60, 60); err != nil {
		t.Fatal(err)
	}
	limits := []ui.Headroom{
		{Worker: "w1", Backend: "openai", Endpoint: "http://127.0.0.1:9/v1", Model: "m", RPM: 60, Shared: true},
		{Worker: "w2", Backend: "openai", Endpoint: safeEndpoint("claude?token=x"), Model: "m", RPM: 60, Shared: true},
		{Worker: "w3", Backend: "openai", Endpoint: "http://127.0.0.1:9/v1", Model: "m", RPM: 60, Shared: false},
		{Worker: "w4", Backend: "openai", Endpoint: shownEndpoint("http://u:pw@127.0.0.1:9/v1"), Model: "m", RPM: 60, Shared: true},
	}
	if note := sharedLevels(ctx, limits, RedisLevels(st)); note != "" {
		t.Fatalf("sharedLevels: note %q", note)
	}
	if l := limits[0].RequestsLeft; l == nil || *l < 20 || *l > 30 {
		t.Errorf("shared bucket with 40 of 60 taken: level %v, want about 20", l)
	}
	if limits[1].RequestsLeft != nil || limits[2].RequestsLeft != nil || limits[3].RequestsLeft != nil {
		t.Errorf("hidden or trimmed endpoint, or worker-local bucket, read from Redis: %v, %v, %v", limits[1].RequestsLeft, limits[2].RequestsLeft, limits[3].RequestsLeft)
	}
	// A store that cannot be reached: the levels stay unknown, with a note.
	rs.Kill()
	limits[0].RequestsLeft = nil
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if note := sharedLevels(cctx, limits, RedisLevels(st)); !strings.Contains(note, "could not be read") || limits[0].RequestsLeft != nil {
		t.Errorf("store down: note %q, level %v; want a note and no level", note, limits[0].RequestsLeft)
	}
}

// TestSafeEndpoint: an endpoint is shown without credentials or query.
func TestSafeEndpoint(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://api.example.com/v1":                   "https://api.example.com/v1",
		"https://user:s3cret@api.example.com/v1?key=k": "https://api.example.com/v1",
		"http://127.0.0.1:8080/v1#frag":                "http://127.0.0.1:8080/v1",
		"/usr/bin/claude":                              "/usr/bin/claude",
		"claude?token=x":                               "(endpoint not shown)",
	} {
		if got := safeEndpoint(in); got != want {
			t.Errorf("safeEndpoint(%q) = %q, want %q", in, got, want)
		}
		if strings.Contains(safeEndpoint(in), "s3cret") {
			t.Errorf("%q keeps its password", in)
		}
	}
	// As a worker reports it: marked when something was dropped.
	for in, want := range map[string]string{
		"https://api.example.com/v1":                   "https://api.example.com/v1",
		"https://user:s3cret@api.example.com/v1?key=k": "https://api.example.com/v1" + endpointTrimmed,
		"claude?token=x":                               endpointHidden,
	} {
		if got := shownEndpoint(in); got != want {
			t.Errorf("shownEndpoint(%q) = %q, want %q", in, got, want)
		}
	}
}
