package sleep

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Refusals of adopt, for errors.Is.
var (
	ErrNotAccepted = errors.New("the night's edits were not accepted")
	ErrLiveChanged = errors.New("live file changed since staging")
	ErrSymlink     = errors.New("live file is a symlink")
	ErrOutsideRoot = errors.New("live file is outside the allowed roots")
	ErrTampered    = errors.New("staged proposal changed since staging")
)

// AdoptOptions configure [Adopt] and [Undo].
type AdoptOptions struct {
	// StagingDir is the night to adopt.
	StagingDir string
	// AllowedRoots: every live file must resolve (its directory, symlinks
	// followed) to one of these directories or below.
	AllowedRoots []string
	// Receipts is the receipts file (default: <staging root>/adopted.json).
	Receipts string
	// afterWrite, in tests, runs after each live file is written.
	afterWrite func(i int)
}

// Receipt records one adoption.
type Receipt struct {
	Staging   string        `json:"staging"`
	AdoptedAt time.Time     `json:"adopted_at"`
	Files     []ReceiptFile `json:"files"`
	UndoneAt  *time.Time    `json:"undone_at,omitempty"`
}

// ReceiptFile is one file an adoption wrote.
type ReceiptFile struct {
	LivePath string `json:"live_path"`
	Existed  bool   `json:"existed"`
	OldSHA   string `json:"old_sha256"`
	NewSHA   string `json:"new_sha256"`
	Backup   string `json:"backup"`
}

func (o *AdoptOptions) receipts() string {
	if o.Receipts != "" {
		return o.Receipts
	}
	return filepath.Join(filepath.Dir(o.StagingDir), "adopted.json")
}

func (o *AdoptOptions) txPath() string {
	return filepath.Join(filepath.Dir(o.receipts()), ".adopt-transaction.json")
}

// checkLive refuses a live path that is relative, not clean, a symlink,
// or (by its resolved directory) outside the allowed roots or elsewhere
// than staging saw it.
func checkLive(e ManifestEntry, roots []string) error {
	p := e.LivePath
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return fmt.Errorf("%w: %q is not a clean absolute path", ErrOutsideRoot, p)
	}
	if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%w: %s", ErrSymlink, p)
	} else if err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", p)
	}
	realDir, err := resolveDir(filepath.Dir(p))
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	if realDir != e.LiveRealDir {
		return fmt.Errorf("%w: %s now resolves to %s, staged as %s", ErrOutsideRoot, filepath.Dir(p), realDir, e.LiveRealDir)
	}
	if len(roots) == 0 {
		return fmt.Errorf("%w: no allowed roots given", ErrOutsideRoot)
	}
	for _, r := range roots {
		rr, err := resolveDir(r)
		if err != nil {
			continue
		}
		rel, err := filepath.Rel(rr, realDir)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return nil
		}
	}
	return fmt.Errorf("%w: %s (allowed: %s)", ErrOutsideRoot, p, strings.Join(roots, ", "))
}

// Adopt installs a staged night's proposals into the live files. It
// refuses a night that was not accepted, a proposal that changed since
// staging, a live file that changed since staging (its sha256 pin), a
// symlinked live file and a path outside the allowed roots, all before
// writing anything. It then backs up the live files, writes each
// atomically (a crash leaves the old or the new file, never a torn one),
// and records a receipt. An adopt interrupted between files is rolled
// back by the next Adopt or Undo.
func Adopt(o AdoptOptions) (*Receipt, error) {
	unlock, err := LockState(o.receipts())
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := recoverTx(o.txPath()); err != nil {
		return nil, err
	}
	m, err := ReadManifest(o.StagingDir)
	if err != nil {
		return nil, err
	}
	if !m.Accepted {
		return nil, fmt.Errorf("%w (action %s: %s)", ErrNotAccepted, m.Action, m.Reason)
	}
	rs, err := loadReceipts(o.receipts())
	if err != nil {
		return nil, err
	}
	abs, _ := filepath.Abs(o.StagingDir)
	for _, r := range rs {
		if r.Staging == abs && r.UndoneAt == nil {
			return nil, fmt.Errorf("%s was already adopted at %s", abs, r.AdoptedAt.Format(time.RFC3339))
		}
	}
	texts := make([][]byte, len(m.Proposals))
	for i, e := range m.Proposals {
		if e.ProposedFile != filepath.Base(e.ProposedFile) {
			return nil, fmt.Errorf("%w: proposed file %q", ErrTampered, e.ProposedFile)
		}
		b, err := os.ReadFile(filepath.Join(o.StagingDir, e.ProposedFile))
		if err != nil {
			return nil, err
		}
		if SHA256Hex(b) != e.ProposedSHA256 {
			return nil, fmt.Errorf("%w: %s", ErrTampered, e.ProposedFile)
		}
		texts[i] = b
		if err := checkLive(e, o.AllowedRoots); err != nil {
			return nil, err
		}
		sum, existed, err := FileSHA256(e.LivePath)
		if err != nil {
			return nil, err
		}
		if existed != e.LiveExisted || sum != e.LiveSHA256 {
			return nil, fmt.Errorf("%w: %s (run the night again to propose against the current file)", ErrLiveChanged, e.LivePath)
		}
	}
	rec := Receipt{Staging: abs, AdoptedAt: time.Now().UTC()}
	backupDir := filepath.Join(o.StagingDir, "backup")
	for _, e := range m.Proposals {
		rf := ReceiptFile{LivePath: e.LivePath, Existed: e.LiveExisted, OldSHA: e.LiveSHA256, NewSHA: e.ProposedSHA256}
		if e.LiveExisted {
			old, err := os.ReadFile(e.LivePath)
			if err != nil {
				return nil, err
			}
			rf.Backup = filepath.Join(backupDir, e.Name+".orig")
			if err := WriteFileAtomic(rf.Backup, old, 0o600); err != nil {
				return nil, fmt.Errorf("backup %s: %w", e.LivePath, err)
			}
		}
		rec.Files = append(rec.Files, rf)
	}
	if err := writeJSON(o.txPath(), rec); err != nil {
		return nil, err
	}
	for i, e := range m.Proposals {
		perm := fs.FileMode(0o644)
		if fi, err := os.Stat(e.LivePath); err == nil {
			perm = fi.Mode().Perm()
		}
		if err := WriteFileAtomic(e.LivePath, texts[i], perm); err != nil {
			return nil, fmt.Errorf("adopt %s: %w (the next adopt or undo rolls this one back)", e.LivePath, err)
		}
		if o.afterWrite != nil {
			o.afterWrite(i)
		}
	}
	rs = append(rs, rec)
	if err := writeJSON(o.receipts(), rs); err != nil {
		return nil, err
	}
	if err := os.Remove(o.txPath()); err != nil {
		return nil, err
	}
	return &rec, nil
}

// Undo reverts the newest adoption that is not undone (of StagingDir, if
// given): each live file goes back to its backup (or is removed if it did
// not exist), refusing if a live file changed since the adoption.
func Undo(o AdoptOptions) (*Receipt, error) {
	unlock, err := LockState(o.receipts())
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := recoverTx(o.txPath()); err != nil {
		return nil, err
	}
	rs, err := loadReceipts(o.receipts())
	if err != nil {
		return nil, err
	}
	abs := ""
	if o.StagingDir != "" {
		abs, _ = filepath.Abs(o.StagingDir)
	}
	idx := -1
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i].UndoneAt == nil && (abs == "" || rs[i].Staging == abs) {
			idx = i
			break
		}
	}
	if idx < 0 {
		return nil, errors.New("nothing to undo: no adoption on record")
	}
	r := &rs[idx]
	for _, f := range r.Files {
		if fi, err := os.Lstat(f.LivePath); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("%w: %s", ErrSymlink, f.LivePath)
		}
		sum, _, err := FileSHA256(f.LivePath)
		if err != nil {
			return nil, err
		}
		if sum != f.NewSHA {
			return nil, fmt.Errorf("%w: %s was edited after the adoption; restore %s by hand if you want it", ErrLiveChanged, f.LivePath, f.Backup)
		}
	}
	if err := restore(r.Files); err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	r.UndoneAt = &now
	if err := writeJSON(o.receipts(), rs); err != nil {
		return nil, err
	}
	return r, nil
}

// restore puts every file back as it was before an adoption.
func restore(files []ReceiptFile) error {
	for _, f := range files {
		if !f.Existed {
			if err := os.Remove(f.LivePath); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			continue
		}
		b, err := os.ReadFile(f.Backup)
		if err != nil {
			return fmt.Errorf("backup of %s: %w", f.LivePath, err)
		}
		if SHA256Hex(b) != f.OldSHA {
			return fmt.Errorf("backup %s does not match the pinned hash", f.Backup)
		}
		perm := fs.FileMode(0o644)
		if fi, err := os.Stat(f.LivePath); err == nil {
			perm = fi.Mode().Perm()
		}
		if err := WriteFileAtomic(f.LivePath, b, perm); err != nil {
			return err
		}
	}
	return nil
}

// recoverTx rolls back an adoption that was interrupted before its receipt
// was written.
func recoverTx(path string) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var r Receipt
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%s: %w (an interrupted adopt; inspect it and remove it)", path, err)
	}
	if err := restore(r.Files); err != nil {
		return fmt.Errorf("rolling back the interrupted adopt of %s: %w", r.Staging, err)
	}
	return os.Remove(path)
}

// PendingTransaction reports whether an interrupted adoption awaits
// rollback under the staging root.
func PendingTransaction(root string) bool {
	_, err := os.Stat(filepath.Join(root, ".adopt-transaction.json"))
	return err == nil
}

func loadReceipts(path string) ([]Receipt, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rs []Receipt
	if err := json.Unmarshal(b, &rs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rs, nil
}

// Receipts lists the adoptions recorded under a staging root.
func Receipts(root string) ([]Receipt, error) {
	return loadReceipts(filepath.Join(root, "adopted.json"))
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, append(b, '\n'), 0o600)
}
