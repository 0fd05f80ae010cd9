// Package atomicfile writes files so that a reader, or a process that
// restarts after a crash, sees either the old content or the new one in
// full, never a torn write: the data goes to a temporary file in the same
// directory, is synced, and is renamed over the target; the directory is
// then synced so that the rename itself survives a crash.
package atomicfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// chunk is how much WriteProgress writes between two progress calls.
const chunk = 1 << 20

// Write replaces path with data (mode 0644), creating path's directory
// when it is missing. Errors name path.
func Write(path string, data []byte) error {
	return WriteFile(path, data, 0o644)
}

// WriteFile replaces path with data, giving the file mode perm; otherwise
// it is [Write].
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	return WriteProgress(path, data, perm, nil)
}

// WriteProgress is [WriteFile] that, when progress is not nil, calls it
// with the bytes written so far after each 1 MiB (and the last, shorter
// piece) reaches the temporary file: tests use it to stop a process part
// way through a write.
func WriteProgress(path string, data []byte, perm fs.FileMode, progress func(written int)) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	werr := writeChunks(f, data, progress)
	merr := f.Chmod(perm)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, merr, serr, cerr); err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		// The new content is in place; a failed directory sync only
		// weakens what survives a machine crash, so it is not an error.
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// writeChunks writes data to f a chunk at a time, reporting to progress.
func writeChunks(f *os.File, data []byte, progress func(int)) error {
	if progress == nil {
		_, err := f.Write(data)
		return err
	}
	for off := 0; ; {
		n := min(len(data)-off, chunk)
		if _, err := f.Write(data[off : off+n]); err != nil {
			return err
		}
		off += n
		progress(off)
		if off == len(data) {
			return nil
		}
	}
}

// WriteJSON replaces path with v as indented JSON (two spaces, HTML
// characters left as they are, a final newline).
func WriteJSON(path string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return Write(path, buf.Bytes())
}
