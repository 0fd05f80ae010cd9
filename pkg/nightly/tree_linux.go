package nightly

import (
	"errors"

	"golang.org/x/sys/unix"
)

// errNoExchange: the filesystem cannot exchange two directories in one
// rename.
var errNoExchange = errors.New("atomic exchange not supported")

// exchange swaps the directories a and b in one rename.
func exchange(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return errNoExchange
	}
	return err
}

// renameNoReplace renames a onto b, failing if b exists.
func renameNoReplace(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return renameIfAbsent(a, b)
	}
	return err
}
