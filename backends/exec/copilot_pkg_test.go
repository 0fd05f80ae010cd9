package exec_test

import (
	"io/fs"
	"path/filepath"
	"sync"
	"testing"

	"github.com/skillfleet/skillfleet/backends/exec"
	"github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// TestCopilotSharesItsPackageCache runs two calls of the real Copilot
// CLI at once: the CLI's bundle is unpacked once, into the shared package
// cache, and neither call's work directory (its HOME included) holds a
// copy of it; both calls answer right.
func TestCopilotSharesItsPackageCache(t *testing.T) {
	cache := t.TempDir()
	defer exec.SetCopilotPkgCacheDir(cache)()
	_, url := simFor(t, sim.ServerOptions{})
	c, root := agentClient(t, exec.AgentCopilot, url, optOut)
	skill, q, gold := simTask(t)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			resp, err := c.Chat(t.Context(), simRequest(skill, q))
			if err != nil {
				t.Error(err)
				return
			}
			if rest, _ := prompts.CutTrace(resp.Content); simbench.ExtractAnswer(rest) != gold {
				t.Errorf("reply %q, want %s", resp.Content, gold)
			}
		})
	}
	wg.Wait()
	if m, _ := filepath.Glob(filepath.Join(cache, "pkg", "*", "*", "index.js")); len(m) != 1 {
		t.Fatalf("the shared cache holds %v, want one unpacked package", m)
	}
	var bytes int64
	copies := 0
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if d.Name() == "index.js" {
			copies++
		}
		if info, err := d.Info(); err == nil {
			bytes += info.Size()
		}
		return nil
	})
	if copies != 0 || bytes > 16<<20 {
		t.Fatalf("the calls' work directories hold %d index.js and %d bytes: the package was unpacked per call", copies, bytes)
	}
	t.Logf("two calls' work directories: %d KiB", bytes>>10)
}
