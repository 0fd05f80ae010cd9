package ui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStepPanelCache: a step panel asked for again is served from the
// cache while its files are unchanged, and rebuilt when one changes (here
// the candidate skill, rewritten with a different size and time); the
// cache keeps at most maxCachedSteps panels, dropping the lowest steps.
func TestStepPanelCache(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := newFakeRun(t, dir, 70)
	for range 3 {
		r.step()
	}
	var c stepCache
	first, err := c.get(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(first), "check the units") {
		t.Fatalf("step 2 panel lacks its edit: %s", first)
	}
	again, err := c.get(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	if &again[0] != &first[0] {
		t.Error("step 2 asked for again with no file changed: rebuilt, want the cached panel")
	}
	cand := filepath.Join(dir, stepDir(2), "candidate_skill.md")
	if err := os.WriteFile(cand, []byte(r.skill+"a new line from a resumed step\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mt := time.Now().Add(time.Second)
	if err := os.Chtimes(cand, mt, mt); err != nil {
		t.Fatal(err)
	}
	changed, err := c.get(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(changed), "a new line from a resumed step") {
		t.Errorf("step 2 after its candidate changed: %s, want the new diff", changed)
	}
	if _, err := c.get(dir, 9); err == nil {
		t.Error("a step not recorded: no error")
	}
	for range 66 {
		r.step()
	}
	for n := 1; n <= 69; n++ {
		if _, err := c.get(dir, n); err != nil {
			t.Fatalf("step %d: %v", n, err)
		}
	}
	if len(c.entries) != maxCachedSteps {
		t.Errorf("cache holds %d panels, want %d", len(c.entries), maxCachedSteps)
	}
	for n := 1; n <= 69-maxCachedSteps; n++ {
		if _, ok := c.entries[n]; ok {
			t.Errorf("step %d kept, want the lowest steps dropped", n)
		}
	}
	if _, err := c.get(dir, 1); err != nil || c.entries[1].data != nil {
		t.Errorf("step 1, older than everything kept: err %v, cached %t; want served and not cached", err, c.entries[1].data != nil)
	}
}
