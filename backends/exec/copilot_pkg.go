package exec

import (
	"context"
	"os"
	osexec "os/exec"
	"path/filepath"
	"time"
)

// The Copilot CLI's npm package is a single executable that unpacks its
// JavaScript bundle (about 235 MB) into a package cache under its HOME
// on the first start. Every call has a HOME of its own, so without a
// shared cache each call would unpack the bundle again: more than a CPU
// second and 235 MB written per call. The CLI takes the cache's place
// from COPILOT_PKG_CACHE_HOME and unpacks into a temporary directory it
// renames into place, so concurrent calls can share one cache.

// copilotPkgCacheDir is the shared cache, under the user's cache
// directory; a variable so that tests can move it.
var copilotPkgCacheDir = func() string {
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(base, "skillfleet", "copilot")
}

// copilotPkgCache returns the Copilot CLI's package cache shared by the
// client's unsandboxed calls, unpacked once per client by the CLI itself
// (COPILOT_SEA_EXTRACT_ONLY: it unpacks and exits), or "" when that
// failed (each call then unpacks into its own HOME, as before).
func (c *Client) copilotPkgCache() string {
	c.pkgOnce.Do(func() {
		dir := copilotPkgCacheDir()
		if dir == "" || len(c.argv) == 0 || os.MkdirAll(dir, 0o755) != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := osexec.CommandContext(ctx, c.argv[0], "--binary-version")
		cmd.Env = []string{"PATH=" + c.cfg.Getenv("PATH"), "HOME=" + dir, "COPILOT_SEA_EXTRACT_ONLY=1",
			"COPILOT_PKG_CACHE_HOME=" + dir, "COPILOT_AUTO_UPDATE=false", "NO_COLOR=1"}
		setProcessGroup(cmd)
		err := cmd.Run()
		killGroup(cmd)
		if err != nil {
			return
		}
		if m, _ := filepath.Glob(filepath.Join(dir, "pkg", "*", "*", "index.js")); len(m) > 0 {
			c.pkgDir = dir
		}
	})
	return c.pkgDir
}
