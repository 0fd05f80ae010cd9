// Package skillpkg is the skill package model: a skill as a directory in
// the Agent Skills layout (SKILL.md with name and description in its front
// matter, references/*.md, scripts/*), the trained parameter when
// env.skill_init names a directory. A single-file skill is a package of
// one file, SKILL.md, and its hash equals [skill.Hash] of the text.
//
// A package is held in memory as text files keyed by slash-separated
// relative paths. Everything that could let a file escape the package or
// smuggle non-text content is refused with a typed [Reason]: on load, on
// edit and on write.
package skillpkg

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"path"
	"sort"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/skillfleet/skillfleet/pkg/skill"
)

// EntryFile is the package's entry document, the file a single-file skill
// is.
const EntryFile = "SKILL.md"

// Limits bound a package. Zero fields take the defaults of
// [DefaultLimits].
type Limits struct {
	// MaxFiles is the most files a package may hold, SKILL.md included.
	MaxFiles int
	// MaxFileBytes is the largest a single file may be.
	MaxFileBytes int
	// MaxTotalBytes is the largest the files may be together.
	MaxTotalBytes int
}

// DefaultLimits: 32 files, 64 KiB per file, 256 KiB in all.
var DefaultLimits = Limits{MaxFiles: 32, MaxFileBytes: 64 << 10, MaxTotalBytes: 256 << 10}

func (l Limits) resolved() Limits {
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultLimits.MaxFiles
	}
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = DefaultLimits.MaxFileBytes
	}
	if l.MaxTotalBytes <= 0 {
		l.MaxTotalBytes = DefaultLimits.MaxTotalBytes
	}
	return l
}

// Reason is why a path, file or edit was refused.
type Reason string

// Refusal reasons. Each refused item is counted under one of them.
const (
	ReasonPathEscape    Reason = "path_escape"     // a ".." component
	ReasonAbsolutePath  Reason = "absolute_path"   // "/x", "C:\x", "\\x"
	ReasonBadPath       Reason = "bad_path"        // empty, hidden component, backslash, control character, not clean
	ReasonSymlink       Reason = "symlink"         // a symlink in the package directory or on the write path
	ReasonNotRegular    Reason = "not_regular"     // a device, socket or pipe
	ReasonBinary        Reason = "binary"          // NUL byte or invalid UTF-8
	ReasonFileTooLarge  Reason = "file_too_large"  // over Limits.MaxFileBytes
	ReasonTooManyFiles  Reason = "too_many_files"  // over Limits.MaxFiles
	ReasonTotalTooLarge Reason = "total_too_large" // over Limits.MaxTotalBytes
	ReasonNoSuchFile    Reason = "no_such_file"    // an edit to a file the package lacks
	ReasonFileExists    Reason = "file_exists"     // create_file of a file the package has
	ReasonEntryFile     Reason = "entry_file"      // remove_file of SKILL.md
	ReasonNoEntry       Reason = "no_entry"        // a directory without SKILL.md
	ReasonFrontMatter   Reason = "front_matter"    // SKILL.md front matter that does not parse
	ReasonScriptSyntax  Reason = "script_syntax"   // a script that fails its syntax check
	// ReasonDescriptionOff: set_description while the description is not
	// trained (train_description is off).
	ReasonDescriptionOff Reason = "description_off"
	// ReasonBadDescription: a set_description whose description is
	// empty, several lines or over the bound, a file other than SKILL.md,
	// or a SKILL.md without a front matter to hold it.
	ReasonBadDescription Reason = "bad_description"
)

// RefusalError is a refusal of one path or edit.
type RefusalError struct {
	Reason Reason
	// Path is the package-relative path (or the path as given) refused.
	Path   string
	Detail string
}

func (e *RefusalError) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("skill package: %s: refused (%s)", e.Path, e.Reason)
	}
	return fmt.Sprintf("skill package: %s: refused (%s): %s", e.Path, e.Reason, e.Detail)
}

func refuse(r Reason, p, format string, args ...any) *RefusalError {
	return &RefusalError{Reason: r, Path: p, Detail: fmt.Sprintf(format, args...)}
}

// Package is a skill package: text files by package-relative path.
// The zero value is not a valid package; use [FromText], [New] or [Load].
type Package struct {
	files map[string]string
	exec  map[string]bool
}

// FromText returns the single-file package whose SKILL.md is text. It
// applies no bound: today's single-file skills stay valid whatever their
// size.
func FromText(text string) *Package {
	return &Package{files: map[string]string{EntryFile: text}, exec: map[string]bool{}}
}

// New returns the package of files (path → text), each path and text
// checked with [CheckPath] and [CheckText] and the whole against lim.
// Files under scripts/ are marked executable.
func New(files map[string]string, lim Limits) (*Package, error) {
	p := &Package{files: make(map[string]string, len(files)), exec: map[string]bool{}}
	for name, text := range files {
		if err := CheckPath(name); err != nil {
			return nil, err
		}
		if err := CheckText(name, text); err != nil {
			return nil, err
		}
		p.files[name] = text
		p.exec[name] = isScript(name)
	}
	if _, ok := p.files[EntryFile]; !ok {
		return nil, refuse(ReasonNoEntry, EntryFile, "a skill package needs %s at its root", EntryFile)
	}
	if err := p.checkBounds(lim.resolved(), ""); err != nil {
		return nil, err
	}
	return p, nil
}

// Clone returns an independent copy of p.
func (p *Package) Clone() *Package {
	q := &Package{files: make(map[string]string, len(p.files)), exec: make(map[string]bool, len(p.exec))}
	for k, v := range p.files {
		q.files[k] = v
	}
	for k, v := range p.exec {
		q.exec[k] = v
	}
	return q
}

// Paths returns the package's file paths, SKILL.md first, then the others
// in byte order.
func (p *Package) Paths() []string {
	out := make([]string, 0, len(p.files))
	for k := range p.files {
		if k != EntryFile {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	if _, ok := p.files[EntryFile]; ok {
		out = append([]string{EntryFile}, out...)
	}
	return out
}

// File returns the text of the file at path.
func (p *Package) File(name string) (string, bool) {
	t, ok := p.files[name]
	return t, ok
}

// Entry returns SKILL.md's text.
func (p *Package) Entry() string { return p.files[EntryFile] }

// Executable reports whether the file is written with the execute bit.
func (p *Package) Executable(name string) bool { return p.exec[name] }

// Len is the number of files.
func (p *Package) Len() int { return len(p.files) }

// Size is the files' total size in bytes.
func (p *Package) Size() int {
	n := 0
	for _, t := range p.files {
		n += len(t)
	}
	return n
}

// SingleFile reports whether the package is SKILL.md alone, the shape
// of today's single-file skills.
func (p *Package) SingleFile() bool {
	_, ok := p.files[EntryFile]
	return ok && len(p.files) == 1
}

// Hash is the package's cache key, 16 hex characters. A single-file
// package hashes as [skill.Hash] of its text, so single-file cache keys
// are unchanged; otherwise it is the SHA-256 of every path and text,
// each length-prefixed, in [Package.Paths] order, with the execute bits.
func (p *Package) Hash() string {
	if p.SingleFile() {
		return skill.Hash(p.files[EntryFile])
	}
	h := sha256.New()
	var n [8]byte
	put := func(s string) {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	h.Write([]byte("skillpkg/v1\x00"))
	for _, name := range p.Paths() {
		put(name)
		put(p.files[name])
		if p.exec[name] {
			h.Write([]byte{1})
		} else {
			h.Write([]byte{0})
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// FrontMatter is SKILL.md's YAML front matter, the fields an agent reads
// to decide when to load the skill.
type FrontMatter struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
}

// ParseFrontMatter reads the front matter at the start of a SKILL.md: a
// line "---", YAML, a line "---". A text without one has the zero
// FrontMatter and no error; one that does not close or does not parse is
// an error.
func ParseFrontMatter(text string) (FrontMatter, error) {
	var fm FrontMatter
	rest, ok := strings.CutPrefix(text, "---\n")
	if !ok {
		rest, ok = strings.CutPrefix(text, "---\r\n")
	}
	if !ok {
		return fm, nil
	}
	end := -1
	for off := 0; off < len(rest); {
		line := rest[off:]
		if i := strings.IndexByte(line, '\n'); i >= 0 {
			line = line[:i]
		}
		if strings.TrimRight(line, "\r") == "---" {
			end = off
			break
		}
		off += len(line) + 1
	}
	if end < 0 {
		return fm, refuse(ReasonFrontMatter, EntryFile, "front matter opened with --- is never closed")
	}
	if err := yaml.Unmarshal([]byte(rest[:end]), &fm); err != nil {
		return fm, refuse(ReasonFrontMatter, EntryFile, "%v", err)
	}
	return fm, nil
}

// FrontMatter returns SKILL.md's front matter (see [ParseFrontMatter]).
func (p *Package) FrontMatter() (FrontMatter, error) { return ParseFrontMatter(p.Entry()) }

// CheckPath refuses a package-relative path that is absolute, escapes the
// package, names a hidden file or directory, uses backslashes or control
// characters, or is not in clean slash form.
func CheckPath(name string) error {
	switch {
	case name == "":
		return refuse(ReasonBadPath, name, "empty path")
	case strings.HasPrefix(name, "/") || strings.HasPrefix(name, `\`) ||
		(len(name) >= 2 && name[1] == ':' && (name[0]|0x20) >= 'a' && (name[0]|0x20) <= 'z'):
		return refuse(ReasonAbsolutePath, name, "paths are relative to the package root")
	}
	for _, part := range strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r == '\\' }) {
		if part == ".." {
			return refuse(ReasonPathEscape, name, "a .. component leaves the package")
		}
	}
	switch {
	case !utf8.ValidString(name):
		return refuse(ReasonBadPath, name, "path is not UTF-8")
	case strings.ContainsRune(name, '\\'):
		return refuse(ReasonBadPath, name, "backslash in path; use /")
	case strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return refuse(ReasonBadPath, name, "control character in path")
	case path.Clean(name) != name:
		return refuse(ReasonBadPath, name, "path is not clean (want %q)", path.Clean(name))
	}
	for _, part := range strings.Split(name, "/") {
		if strings.HasPrefix(part, ".") {
			return refuse(ReasonBadPath, name, "hidden file or directory %q", part)
		}
	}
	return nil
}

// CheckText refuses text that is not a text file: a NUL byte or invalid
// UTF-8.
func CheckText(name, text string) error {
	if i := strings.IndexByte(text, 0); i >= 0 {
		return refuse(ReasonBinary, name, "NUL byte at offset %d", i)
	}
	if !utf8.ValidString(text) {
		for i, r := range text {
			if r == utf8.RuneError {
				if _, size := utf8.DecodeRuneInString(text[i:]); size <= 1 {
					return refuse(ReasonBinary, name, "invalid UTF-8 at offset %d", i)
				}
			}
		}
		return refuse(ReasonBinary, name, "invalid UTF-8")
	}
	return nil
}

// checkBounds checks p against lim; name, when set, is the file an edit
// just touched, reported as the refused path.
func (p *Package) checkBounds(lim Limits, name string) error {
	if len(p.files) > lim.MaxFiles {
		return refuse(ReasonTooManyFiles, or(name, "."), "%d files, limit %d", len(p.files), lim.MaxFiles)
	}
	for _, k := range p.Paths() {
		if name != "" && k != name {
			continue
		}
		if n := len(p.files[k]); n > lim.MaxFileBytes {
			return refuse(ReasonFileTooLarge, k, "%d bytes, limit %d", n, lim.MaxFileBytes)
		}
	}
	if n := p.Size(); n > lim.MaxTotalBytes {
		return refuse(ReasonTotalTooLarge, or(name, "."), "%d bytes in all, limit %d", n, lim.MaxTotalBytes)
	}
	return nil
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// isScript reports whether a path is a script the agent runs: anything
// under scripts/.
func isScript(name string) bool { return strings.HasPrefix(name, "scripts/") }
