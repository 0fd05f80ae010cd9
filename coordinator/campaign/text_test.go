package campaign

import (
	"testing"
	"time"
)

// TestCampaignStatusLine: the campaign line counts cells and spend, and
// estimates the time left from the pace at which cells end.
func TestCampaignStatusLine(t *testing.T) {
	t.Parallel()
	counts := map[string]int{"done": 2, "running": 2, "queued": 3, "failed": 1}
	got := Status{Counts: counts, Total: 8, Tokens: 1_234_567, USD: 0.4567, Elapsed: 90 * time.Second}.Line()
	want := "campaign: cells 2/8 done · 2 running · 3 queued · 1 failed · 1.23M tok $0.46 · 1m30s · ETA 2m30s"
	if got != want {
		t.Errorf("line\n got %q\nwant %q", got, want)
	}
	if got := (Status{Counts: map[string]int{"running": 1, "queued": 1}, Total: 2, Elapsed: time.Second}).Line(); got != "campaign: cells 0/2 done · 1 running · 1 queued · 0 tok $0.00 · 1s" {
		t.Errorf("no cell ended yet: %q", got)
	}
}
