//go:build !linux

package nightly

import "errors"

var errNoExchange = errors.New("atomic exchange not supported")

// exchange is not available off Linux: swapIn falls back to two renames.
func exchange(_, _ string) error { return errNoExchange }

func renameNoReplace(a, b string) error { return renameIfAbsent(a, b) }
