package nightly

import (
	"crypto/sha256"
	"encoding/hex"
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

// ManifestSchema names the staging manifest's format of a night whose
// proposals are single files (every night before skill packages).
const ManifestSchema = "skillfleet-sleep-staging/v1"

// ManifestSchemaPackage names the format of a manifest that holds a skill
// package proposal, so that a skillfleet that knows only single files
// refuses it rather than adopting a directory as a file.
const ManifestSchemaPackage = "skillfleet-sleep-staging/v2"

// Proposal is one proposed document and the live file it replaces, or,
// with Package, the proposed skill package and the live directory it
// replaces.
type Proposal struct {
	// Name is "skill" or "memory".
	Name string
	// LivePath is the absolute path of the live file (the live package
	// directory, with Package).
	LivePath string
	// LiveSHA256 pins the live file's content as the night read it ("" =
	// the file did not exist). Unused with Package.
	LiveSHA256 string
	// Text is the proposed document; with Package, the proposed
	// package's bundle (pkg/skillpkg), a plain SKILL.md text for a package
	// of one file.
	Text string
	// Package says the proposal is a skill package directory (only the
	// skill can be one).
	Package bool
	// LiveFiles pins every file of the live directory as the night read
	// it (see [TreePins]); LiveExisted says whether it existed.
	LiveFiles   map[string]string
	LiveExisted bool
}

// StageInput is a night's result to stage.
type StageInput struct {
	// Root is the staging root (one directory per night below it).
	Root    string
	Night   int
	Started time.Time
	// Accepted says the gate accepted the night's edits; only then are
	// there proposals, and only then can the night be adopted.
	Accepted  bool
	Action    string
	Reason    string
	Proposals []Proposal
	// ReportJSON is marshalled to report.json; ReportMD is report.md.
	ReportJSON any
	ReportMD   string
	// Evidence lines go to evidence.jsonl.
	Evidence []any
}

// Manifest is a staging dir's manifest.json, written last: a staging dir
// without one is unfinished and never adopted.
type Manifest struct {
	Schema    string          `json:"schema"`
	Night     int             `json:"night"`
	Created   time.Time       `json:"created"`
	Accepted  bool            `json:"accepted"`
	Action    string          `json:"action"`
	Reason    string          `json:"reason,omitempty"`
	Proposals []ManifestEntry `json:"proposals"`
}

// ManifestEntry pins one proposal. A package entry (Kind "package") names
// a directory: LiveSHA256 and ProposedSHA256 are then [TreeDigest]s, and
// LiveFiles and ProposedFiles pin each file; MustNotExist lists the files
// the proposal adds, which must not exist when it is adopted.
type ManifestEntry struct {
	Name           string            `json:"name"`
	Kind           string            `json:"kind,omitempty"`
	LivePath       string            `json:"live_path"`
	LiveRealDir    string            `json:"live_real_dir"`
	LiveExisted    bool              `json:"live_existed"`
	LiveSHA256     string            `json:"live_sha256"`
	ProposedFile   string            `json:"proposed_file"`
	ProposedSHA256 string            `json:"proposed_sha256"`
	LiveFiles      map[string]string `json:"live_files,omitempty"`
	ProposedFiles  map[string]string `json:"proposed_files,omitempty"`
	MustNotExist   []string          `json:"must_not_exist,omitempty"`
}

// KindPackage is a package entry's Kind.
const KindPackage = "package"

// ProposedPackageDir is the staged proposal of a skill package: the whole
// proposed directory, ready to install.
const ProposedPackageDir = "proposed_skill"

// SHA256Hex is the hex sha256 of b.
func SHA256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// FileSHA256 returns a file's hex sha256 and whether it exists.
func FileSHA256(path string) (string, bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return SHA256Hex(b), true, nil
}

var proposedNames = map[string]string{"skill": "proposed_SKILL.md", "memory": "proposed_CLAUDE.md"}

// Stage writes a night's staging dir: the proposals, report.md and .json
// and evidence.jsonl (every text redacted), then manifest.json last, then
// the root's .latest pointer. It returns the dir.
func Stage(in StageInput) (string, error) {
	if in.Accepted && len(in.Proposals) == 0 {
		return "", errors.New("stage: an accepted night with no proposal")
	}
	if !in.Accepted && len(in.Proposals) > 0 {
		return "", errors.New("stage: proposals of a night that was not accepted")
	}
	base := fmt.Sprintf("night-%04d-%s", in.Night, in.Started.UTC().Format("20060102-150405"))
	if err := os.MkdirAll(in.Root, 0o700); err != nil {
		return "", err
	}
	dir := filepath.Join(in.Root, base)
	for n := 2; ; n++ {
		err := os.Mkdir(dir, 0o700)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
		dir = filepath.Join(in.Root, fmt.Sprintf("%s-%d", base, n))
	}
	m := Manifest{Schema: ManifestSchema, Night: in.Night, Created: time.Now().UTC(), Accepted: in.Accepted, Action: in.Action, Reason: Redact(in.Reason)}
	for _, p := range in.Proposals {
		if p.Package {
			e, err := stagePackage(dir, p)
			if err != nil {
				return "", err
			}
			m.Schema = ManifestSchemaPackage
			m.Proposals = append(m.Proposals, e)
			continue
		}
		file, ok := proposedNames[p.Name]
		if !ok {
			return "", fmt.Errorf("stage: proposal %q: want skill or memory", p.Name)
		}
		if !filepath.IsAbs(p.LivePath) {
			return "", fmt.Errorf("stage: proposal %s: live path %q is not absolute", p.Name, p.LivePath)
		}
		if ContainsSecret(p.Text) {
			return "", fmt.Errorf("stage: proposal %s holds a secret-shaped string; not staged", p.Name)
		}
		realDir, err := resolveDir(filepath.Dir(p.LivePath))
		if err != nil {
			return "", fmt.Errorf("stage: proposal %s: %w", p.Name, err)
		}
		if err := writeFile(filepath.Join(dir, file), []byte(p.Text), 0o600); err != nil {
			return "", err
		}
		m.Proposals = append(m.Proposals, ManifestEntry{
			Name: p.Name, LivePath: filepath.Clean(p.LivePath), LiveRealDir: realDir, LiveExisted: p.LiveSHA256 != "",
			LiveSHA256: p.LiveSHA256, ProposedFile: file, ProposedSHA256: SHA256Hex([]byte(p.Text)),
		})
	}
	rj, err := json.MarshalIndent(in.ReportJSON, "", "  ")
	if err != nil {
		return "", fmt.Errorf("stage: report: %w", err)
	}
	if err := writeFile(filepath.Join(dir, "report.json"), []byte(Redact(string(rj))+"\n"), 0o600); err != nil {
		return "", err
	}
	if err := writeFile(filepath.Join(dir, "report.md"), []byte(Redact(in.ReportMD)), 0o600); err != nil {
		return "", err
	}
	var ev strings.Builder
	for _, e := range in.Evidence {
		b, err := json.Marshal(e)
		if err != nil {
			return "", fmt.Errorf("stage: evidence: %w", err)
		}
		ev.WriteString(Redact(string(b)) + "\n")
	}
	if err := writeFile(filepath.Join(dir, "evidence.jsonl"), []byte(ev.String()), 0o600); err != nil {
		return "", err
	}
	mb, _ := json.MarshalIndent(m, "", "  ")
	if err := writeFile(filepath.Join(dir, "manifest.json"), append(mb, '\n'), 0o600); err != nil {
		return "", err
	}
	if err := writeFile(filepath.Join(in.Root, ".latest"), []byte(filepath.Base(dir)+"\n"), 0o600); err != nil {
		return "", err
	}
	return dir, nil
}

// stagePackage writes a package proposal as the directory
// proposed_skill/ of the staging dir and returns its manifest entry.
func stagePackage(dir string, p Proposal) (ManifestEntry, error) {
	if p.Name != "skill" {
		return ManifestEntry{}, fmt.Errorf("stage: proposal %q: only the skill can be a package", p.Name)
	}
	if !filepath.IsAbs(p.LivePath) {
		return ManifestEntry{}, fmt.Errorf("stage: proposal skill: live path %q is not absolute", p.LivePath)
	}
	if ContainsSecret(p.Text) {
		return ManifestEntry{}, errors.New("stage: proposal skill holds a secret-shaped string; not staged")
	}
	pkg, err := skillpkg.Decode(p.Text)
	if err != nil {
		return ManifestEntry{}, fmt.Errorf("stage: proposal skill: %w", err)
	}
	realDir, err := resolveDir(filepath.Dir(p.LivePath))
	if err != nil {
		return ManifestEntry{}, fmt.Errorf("stage: proposal skill: %w", err)
	}
	if err := skillpkg.Write(pkg, filepath.Join(dir, ProposedPackageDir)); err != nil {
		return ManifestEntry{}, fmt.Errorf("stage: %w", err)
	}
	proposed := map[string]string{}
	for _, name := range pkg.Paths() {
		text, _ := pkg.File(name)
		proposed[name] = SHA256Hex([]byte(text))
	}
	live := p.LiveFiles
	if !p.LiveExisted {
		live = nil
	} else if live == nil {
		live = map[string]string{}
	}
	var absent []string
	for _, name := range sortedKeys(proposed) {
		if _, ok := live[name]; !ok {
			absent = append(absent, name)
		}
	}
	return ManifestEntry{
		Name: p.Name, Kind: KindPackage, LivePath: filepath.Clean(p.LivePath), LiveRealDir: realDir, LiveExisted: p.LiveExisted,
		LiveSHA256: TreeDigest(live), ProposedFile: ProposedPackageDir, ProposedSHA256: TreeDigest(proposed),
		LiveFiles: live, ProposedFiles: proposed, MustNotExist: absent,
	}, nil
}

// resolveDir resolves the symlinks of dir, or of its nearest existing
// ancestor when dir does not exist yet (the rest is joined unchanged).
func resolveDir(dir string) (string, error) {
	rest := ""
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		r, err := filepath.EvalSymlinks(d)
		if err == nil {
			return filepath.Join(r, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) || d == filepath.Dir(d) {
			return "", err
		}
		rest = filepath.Join(filepath.Base(d), rest)
	}
}

// ReadManifest reads a staging dir's manifest; a dir without one was never
// finished.
func ReadManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: no manifest.json (the night did not finish staging)", dir)
	}
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s/manifest.json: %w", dir, err)
	}
	if m.Schema != ManifestSchema && m.Schema != ManifestSchemaPackage {
		return nil, fmt.Errorf("%s/manifest.json: schema %q, want %q or %q", dir, m.Schema, ManifestSchema, ManifestSchemaPackage)
	}
	return &m, nil
}

// Latest returns the newest staging dir under root.
func Latest(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, ".latest"))
	if err != nil {
		return "", fmt.Errorf("no staged night under %s: %w", root, err)
	}
	name := strings.TrimSpace(string(b))
	if name == "" || strings.ContainsAny(name, `/\`) || name == ".." {
		return "", fmt.Errorf("%s/.latest: bad entry %q", root, name)
	}
	return filepath.Join(root, name), nil
}
