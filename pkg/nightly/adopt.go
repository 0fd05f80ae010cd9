package nightly

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/pkg/skillpkg"
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
	// afterWrite, in tests, runs after each live file is written (each
	// package swapped in).
	afterWrite func(i int)
	// beforeSwap, in tests, runs when a package's new tree is built
	// beside the live one, before the swap.
	beforeSwap func(i int)
}

// Receipt records one adoption.
type Receipt struct {
	Staging   string        `json:"staging"`
	AdoptedAt time.Time     `json:"adopted_at"`
	Files     []ReceiptFile `json:"files"`
	UndoneAt  *time.Time    `json:"undone_at,omitempty"`
}

// ReceiptFile is one file an adoption wrote, or, with Package, one skill
// package directory it swapped: OldSHA and NewSHA are then the trees'
// [TreeDigest]s, OldFiles and NewFiles pin every file, and Backup is the
// old tree's copy (a directory).
type ReceiptFile struct {
	LivePath string            `json:"live_path"`
	Existed  bool              `json:"existed"`
	OldSHA   string            `json:"old_sha256"`
	NewSHA   string            `json:"new_sha256"`
	Backup   string            `json:"backup"`
	Package  bool              `json:"package,omitempty"`
	OldFiles map[string]string `json:"old_files,omitempty"`
	NewFiles map[string]string `json:"new_files,omitempty"`
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

// begin starts an adoption or an undo: it takes the state lock and rolls
// back a transaction that a crash left open.
func (o *AdoptOptions) begin() (unlock func(), err error) {
	unlock, err = LockState(o.receipts())
	if err != nil {
		return nil, err
	}
	if err := recoverTx(o.txPath()); err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}

// checkLive refuses a live path that is relative, not clean, a symlink,
// or (by its resolved directory) outside the allowed roots or elsewhere
// than staging saw it. A package's live path is a directory, which must
// itself lie within an allowed root.
func checkLive(e ManifestEntry, roots []string) error {
	p := e.LivePath
	pkg := e.Kind == KindPackage
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return fmt.Errorf("%w: %q is not a clean absolute path", ErrOutsideRoot, p)
	}
	if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%w: %s", ErrSymlink, p)
	} else if err == nil && !pkg && !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", p)
	} else if err == nil && pkg && !fi.IsDir() {
		return fmt.Errorf("%s: not a directory (the skill package)", p)
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
	target := realDir
	if pkg {
		target = filepath.Join(realDir, filepath.Base(p))
	}
	for _, r := range roots {
		rr, err := resolveDir(r)
		if err != nil {
			continue
		}
		rel, err := filepath.Rel(rr, target)
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
//
// A skill package proposal is adopted as one tree: adopt refuses it when
// any file of the live directory differs from its pin, was added or was
// removed (a file the proposal adds must not exist yet); it copies the
// live tree into the staging dir's backup/skill/, builds the new tree
// complete beside the live one, and swaps the two in one rename, so a
// crash at any moment leaves the old package or the new one whole.
func Adopt(o AdoptOptions) (*Receipt, error) {
	unlock, err := o.begin()
	if err != nil {
		return nil, err
	}
	defer unlock()
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
	trees := make([]map[string]treeFile, len(m.Proposals))
	for i, e := range m.Proposals {
		if e.Kind != "" && e.Kind != KindPackage {
			return nil, fmt.Errorf("%s/manifest.json: proposal %s: unknown kind %q", o.StagingDir, e.Name, e.Kind)
		}
		if e.Kind == KindPackage {
			tree, err := checkPackage(o, e)
			if err != nil {
				return nil, err
			}
			trees[i] = tree
			continue
		}
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
		if e.Kind == KindPackage {
			rf, err := backupPackage(e, backupDir)
			if err != nil {
				return nil, err
			}
			rec.Files = append(rec.Files, rf)
			continue
		}
		rf := ReceiptFile{LivePath: e.LivePath, Existed: e.LiveExisted, OldSHA: e.LiveSHA256, NewSHA: e.ProposedSHA256}
		if e.LiveExisted {
			old, err := os.ReadFile(e.LivePath)
			if err != nil {
				return nil, err
			}
			rf.Backup = filepath.Join(backupDir, e.Name+".orig")
			if err := writeFile(rf.Backup, old, 0o600); err != nil {
				return nil, fmt.Errorf("backup %s: %w", e.LivePath, err)
			}
		}
		rec.Files = append(rec.Files, rf)
	}
	if err := writeJSON(o.txPath(), rec); err != nil {
		return nil, err
	}
	for i, e := range m.Proposals {
		if e.Kind == KindPackage {
			if err := installPackage(e, trees[i], func() {
				if o.beforeSwap != nil {
					o.beforeSwap(i)
				}
			}); err != nil {
				return nil, fmt.Errorf("adopt %s: %w (the next adopt or undo rolls this one back)", e.LivePath, err)
			}
			if o.afterWrite != nil {
				o.afterWrite(i)
			}
			continue
		}
		perm := fs.FileMode(0o644)
		if fi, err := os.Stat(e.LivePath); err == nil {
			perm = fi.Mode().Perm()
		}
		if err := writeFile(e.LivePath, texts[i], perm); err != nil {
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
	unlock, err := o.begin()
	if err != nil {
		return nil, err
	}
	defer unlock()
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
		if f.Package {
			pins, existed, err := TreePins(f.LivePath)
			if err != nil {
				return nil, err
			}
			if d := pinDiff(f.NewFiles, pins); !existed || d != "" {
				if !existed {
					d = "the directory is gone"
				}
				return nil, fmt.Errorf("%w: the package %s was edited after the adoption (%s); restore %s by hand if you want it", ErrLiveChanged, f.LivePath, d, f.Backup)
			}
			continue
		}
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
		if f.Package {
			if err := restorePackage(f); err != nil {
				return err
			}
			continue
		}
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
		if err := writeFile(f.LivePath, b, perm); err != nil {
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
	return writeFile(path, append(b, '\n'), 0o600)
}

// checkPackage checks a package entry before anything is written: the
// staged tree is the one the manifest pins, the live directory is where
// staging saw it, within the allowed roots and not a symlink, and every
// live file is as the night read it (none added, none removed). It
// returns the staged tree.
func checkPackage(o AdoptOptions, e ManifestEntry) (map[string]treeFile, error) {
	if e.ProposedFile != ProposedPackageDir {
		return nil, fmt.Errorf("%w: proposed package %q", ErrTampered, e.ProposedFile)
	}
	tree, err := readTree(filepath.Join(o.StagingDir, e.ProposedFile))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrTampered, e.ProposedFile, err)
	}
	if d := pinDiff(e.ProposedFiles, treeSums(tree)); d != "" || len(tree) == 0 {
		return nil, fmt.Errorf("%w: %s: %s", ErrTampered, e.ProposedFile, d)
	}
	if _, ok := tree[skillpkg.EntryFile]; !ok {
		return nil, fmt.Errorf("%w: %s has no %s", ErrTampered, e.ProposedFile, skillpkg.EntryFile)
	}
	if err := checkLive(e, o.AllowedRoots); err != nil {
		return nil, err
	}
	pins, existed, err := TreePins(e.LivePath)
	if err != nil {
		return nil, err
	}
	if existed != e.LiveExisted {
		what := "appeared"
		if !existed {
			what = "is gone"
		}
		return nil, fmt.Errorf("%w: the package directory %s %s since staging (run the night again)", ErrLiveChanged, e.LivePath, what)
	}
	if existed {
		if d := pinDiff(orEmpty(e.LiveFiles), pins); d != "" {
			return nil, fmt.Errorf("%w: %s: %s since staging (run the night again to propose against the current package)", ErrLiveChanged, e.LivePath, d)
		}
	}
	for _, name := range e.MustNotExist {
		if _, ok := pins[name]; ok {
			return nil, fmt.Errorf("%w: %s/%s exists, and the proposal adds it", ErrLiveChanged, e.LivePath, name)
		}
	}
	return tree, nil
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// backupPackage copies the live package into backupDir/<name>/ (nothing
// when it did not exist) and returns its receipt row. The copy is checked
// against the pins: a file changed in between is a refusal.
func backupPackage(e ManifestEntry, backupDir string) (ReceiptFile, error) {
	rf := ReceiptFile{LivePath: e.LivePath, Existed: e.LiveExisted, OldSHA: e.LiveSHA256, NewSHA: e.ProposedSHA256,
		Package: true, NewFiles: e.ProposedFiles}
	if !e.LiveExisted {
		return rf, nil
	}
	rf.OldFiles = orEmpty(e.LiveFiles)
	rf.Backup = filepath.Join(backupDir, e.Name)
	tree, err := readTree(e.LivePath)
	if err != nil {
		return rf, fmt.Errorf("backup %s: %w", e.LivePath, err)
	}
	if d := pinDiff(rf.OldFiles, treeSums(tree)); d != "" {
		return rf, fmt.Errorf("%w: %s: %s while it was backed up", ErrLiveChanged, e.LivePath, d)
	}
	if err := os.MkdirAll(backupDir, 0o700); err != nil {
		return rf, err
	}
	if err := os.RemoveAll(rf.Backup); err != nil {
		return rf, err
	}
	if err := buildTree(rf.Backup, tree); err != nil {
		return rf, fmt.Errorf("backup %s: %w", e.LivePath, err)
	}
	return rf, nil
}

// installPackage builds tree beside the live directory and swaps it in
// (see [swapIn]); the old tree, kept in the backup, is then removed.
func installPackage(e ManifestEntry, tree map[string]treeFile, beforeSwap func()) error {
	next := nextSibling(e.LivePath)
	if err := os.RemoveAll(next); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(e.LivePath), 0o755); err != nil {
		return err
	}
	if err := buildTree(next, tree); err != nil {
		return err
	}
	beforeSwap()
	if err := swapIn(next, e.LivePath, e.LiveExisted); err != nil {
		return err
	}
	return os.RemoveAll(next)
}

// restorePackage puts a package directory back as it was before an
// adoption, from whatever state an adopt or undo left it in: the old
// tree (nothing to do), the new tree (the old one is rebuilt from the
// backup beside it and swapped in; a directory the adoption created is
// removed), or a two-rename swap cut in half (finished first). A tree that
// is neither is an error: it is the user's, and left alone.
func restorePackage(f ReceiptFile) error {
	live := f.LivePath
	if err := recoverSwap(live); err != nil {
		return err
	}
	pins, existed, err := TreePins(live)
	if err != nil {
		return err
	}
	switch {
	case !existed && !f.Existed, existed && f.Existed && pinDiff(orEmpty(f.OldFiles), pins) == "":
		return os.RemoveAll(nextSibling(live))
	case !existed || pinDiff(f.NewFiles, pins) != "":
		return fmt.Errorf("%s is neither the package before the adoption nor the adopted one; restore %s by hand", live, cmp.Or(f.Backup, "(no backup: the adoption created it)"))
	}
	if !f.Existed {
		return removeTree(live)
	}
	tree, err := readTree(f.Backup)
	if err != nil {
		return fmt.Errorf("backup of %s: %w", live, err)
	}
	if d := pinDiff(orEmpty(f.OldFiles), treeSums(tree)); d != "" {
		return fmt.Errorf("backup %s does not match the pinned tree: %s", f.Backup, d)
	}
	next := nextSibling(live)
	if err := os.RemoveAll(next); err != nil {
		return err
	}
	if err := buildTree(next, tree); err != nil {
		return err
	}
	if err := swapIn(next, live, true); err != nil {
		return err
	}
	return os.RemoveAll(next)
}
