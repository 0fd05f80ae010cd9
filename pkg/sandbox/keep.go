package sandbox

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// WriteEntries writes a collected work directory under dir: directories
// and regular files only, never following a link. It returns how many
// files it wrote and what it skipped, with the reason.
func WriteEntries(dir string, files map[string]*Entry) (n int, skipped []string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, nil, err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names) // parents before children
	for _, name := range names {
		e := files[name]
		p := filepath.Join(dir, filepath.FromSlash(name))
		if !strings.HasPrefix(p, filepath.Clean(dir)+string(filepath.Separator)) {
			skipped = append(skipped, name+" (outside)")
			continue
		}
		switch {
		case e.Type == "dir":
			if err := os.Mkdir(p, 0o755); err != nil && !os.IsExist(err) {
				return n, skipped, err
			}
		case e.Type == "file" && !e.TooLarge:
			fd, err := syscall.Open(p, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o644)
			if err != nil {
				return n, skipped, &os.PathError{Op: "create", Path: p, Err: err}
			}
			f := os.NewFile(uintptr(fd), p)
			_, werr := f.Write(e.Data)
			if cerr := f.Close(); werr == nil {
				werr = cerr
			}
			if werr != nil {
				return n, skipped, werr
			}
			n++
		case e.TooLarge:
			skipped = append(skipped, name+" (too large)")
		default:
			skipped = append(skipped, name+" ("+e.Type+")")
		}
	}
	return n, skipped, nil
}
