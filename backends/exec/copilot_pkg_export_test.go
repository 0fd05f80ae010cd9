package exec

// SetCopilotPkgCacheDir moves the Copilot CLI's shared package cache for
// the test.
func SetCopilotPkgCacheDir(dir string) (restore func()) {
	old := copilotPkgCacheDir
	copilotPkgCacheDir = func() string { return dir }
	return func() { copilotPkgCacheDir = old }
}
