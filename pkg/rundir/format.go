package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// FormatVersion is the run-dir format this build writes and resumes, as
// MAJOR.MINOR. A build resumes any run dir of the same major with
// identical decisions (a minor adds files or fields an older build of the
// same major may ignore); a run dir of another major is migrated when a
// migration exists, refused otherwise.
const FormatVersion = "1.0"

// FormatFile is the run dir's format stamp, written when the run dir is
// made and read before any other file of it. Every file resume reads
// (events.jsonl, results.journal, state.json, steps/*/record.json,
// summary.json, tokens.json, the skills) is in the format it names.
const FormatFile = "format.json"

// Format is the content of format.json.
type Format struct {
	RunDirFormat string `json:"run_dir_format"`
}

// legacyFormat is the format of a run dir written before format.json
// existed: the same files as format 1.0, without the stamp.
const legacyFormat = "0"

// FormatError refuses a run dir this build cannot read. Its message is one
// line naming both formats and what to do.
type FormatError struct {
	Dir   string
	Found string // the run dir's format
	Want  string // this build's format
}

func (e *FormatError) Error() string {
	if e.newer() {
		return fmt.Sprintf("run dir %s has run-dir format %s, newer than this skillfleet's %s: resume it with a skillfleet whose `skillfleet version` shows run-dir format %s.x",
			e.Dir, e.Found, e.Want, major(e.Found))
	}
	return fmt.Sprintf("run dir %s has run-dir format %s, which this skillfleet (run-dir format %s) cannot migrate: resume it with the release that wrote it, or start a new --out",
		e.Dir, e.Found, e.Want)
}

func (e *FormatError) newer() bool {
	f, _ := strconv.Atoi(major(e.Found))
	w, _ := strconv.Atoi(major(e.Want))
	return f > w
}

// major is the part of a MAJOR.MINOR version before the dot.
func major(v string) string {
	m, _, _ := strings.Cut(v, ".")
	return m
}

// Migration says that [Prepare] or [Migrate] rewrote a run dir's format.
type Migration struct {
	Dir      string
	From, To string
}

// runFiles are files a run writes in the format format.json names: a
// directory holding one of them and no format.json is a run dir of the
// legacy format, not a new one. run_id is not among them: it holds no
// format-dependent content, and a directory holding only it is one a run
// took but never wrote to.
var runFiles = []string{EventsFile, StateFile, "results.journal", SummaryFile}

// ReadFormat returns dir's run-dir format: the version format.json names,
// [legacyFormat] ("0") for a run dir written before the stamp existed, or
// "" for a directory no run has written yet.
func ReadFormat(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, FormatFile))
	switch {
	case err == nil:
		var f Format
		if err := json.Unmarshal(b, &f); err != nil {
			return "", fmt.Errorf("run dir %s: %s is not valid JSON (%w): restore it, or run `skillfleet migrate %s` to stamp it again", dir, FormatFile, err, dir)
		}
		if _, _, ok := parseVersion(f.RunDirFormat); !ok {
			return "", fmt.Errorf("run dir %s: %s: run_dir_format %q is not MAJOR.MINOR", dir, FormatFile, f.RunDirFormat)
		}
		return f.RunDirFormat, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("run dir %s: %w", dir, err)
	}
	for _, name := range runFiles {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return legacyFormat, nil
		}
	}
	return "", nil
}

func parseVersion(v string) (major, minor int, ok bool) {
	a, b, found := strings.Cut(v, ".")
	if !found {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(a)
	minor, err2 := strconv.Atoi(b)
	return major, minor, err1 == nil && err2 == nil && major >= 0 && minor >= 0
}

// Prepare readies dir for a run of this build before any of its files is
// read: a new directory gets format.json; a run dir of this format's major
// is left as it is; a legacy run dir (no format.json) is migrated, and the
// returned [Migration] says so (the caller logs it); any other format is
// refused with a [*FormatError].
func Prepare(dir string) (*Migration, error) {
	found, err := ReadFormat(dir)
	if err != nil {
		return nil, err
	}
	switch {
	case found == "":
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("run dir: %w", err)
		}
		return nil, writeFormat(dir)
	case found == legacyFormat:
		return Migrate(dir)
	case major(found) == major(FormatVersion):
		return nil, nil
	}
	return nil, &FormatError{Dir: dir, Found: found, Want: FormatVersion}
}

// Migrate brings the run dir dir to [FormatVersion] and says what it did
// (nil when it was current already). A legacy run dir holds format 1.0's
// files under no stamp, so its migration checks that the files resume
// reads are that format's and writes the stamp; nothing else changes.
func Migrate(dir string) (*Migration, error) {
	found, err := ReadFormat(dir)
	if err != nil {
		return nil, err
	}
	switch {
	case found == "":
		return nil, fmt.Errorf("run dir %s: no run has written it (no %s, %s or results.journal)", dir, FormatFile, EventsFile)
	case found == legacyFormat:
		if err := checkLegacy(dir); err != nil {
			return nil, err
		}
		if err := writeFormat(dir); err != nil {
			return nil, err
		}
		return &Migration{Dir: dir, From: legacyFormat, To: FormatVersion}, nil
	case major(found) == major(FormatVersion):
		return nil, nil
	}
	return nil, &FormatError{Dir: dir, Found: found, Want: FormatVersion}
}

// CheckReadable says whether a reader that leaves the run dir as it is
// (report, the dashboard) understands dir's files: a run dir of this
// build's major or of the legacy format is readable, and so is a directory
// no run has stamped yet; another major is refused with a [*FormatError]
// before any of its files is misread.
func CheckReadable(dir string) error {
	found, err := ReadFormat(dir)
	if err != nil {
		return err
	}
	if found == "" || found == legacyFormat || major(found) == major(FormatVersion) {
		return nil
	}
	return &FormatError{Dir: dir, Found: found, Want: FormatVersion}
}

// checkLegacy verifies that a legacy run dir's versioned records are the
// ones format 1.0 reads: state.json and summary.json at schema version 1
// (or without one).
func checkLegacy(dir string) error {
	for _, name := range []string{StateFile, SummaryFile} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("run dir %s: %w", dir, err)
		}
		var v struct {
			Version *int `json:"version"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			return fmt.Errorf("run dir %s: %s is not valid JSON (%w): not migrated", dir, name, err)
		}
		if v.Version != nil && *v.Version != 1 {
			return fmt.Errorf("run dir %s: %s has schema version %d, want 1: not a run dir this skillfleet can migrate", dir, name, *v.Version)
		}
	}
	return nil
}

func writeFormat(dir string) error {
	b, err := json.Marshal(Format{RunDirFormat: FormatVersion})
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, FormatFile), FormatFile, append(b, '\n')); err != nil {
		return fmt.Errorf("run dir %s: %w", dir, err)
	}
	return nil
}
