package sleep

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
)

// ManifestSchema names the staging manifest's format.
const ManifestSchema = "skillfleet-sleep-staging/v1"

// Proposal is one proposed document and the live file it replaces.
type Proposal struct {
	// Name is "skill" or "memory".
	Name string
	// LivePath is the absolute path of the live file.
	LivePath string
	// LiveSHA256 pins the live file's content as the night read it ("" =
	// the file did not exist).
	LiveSHA256 string
	Text       string
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

// ManifestEntry pins one proposal.
type ManifestEntry struct {
	Name           string `json:"name"`
	LivePath       string `json:"live_path"`
	LiveRealDir    string `json:"live_real_dir"`
	LiveExisted    bool   `json:"live_existed"`
	LiveSHA256     string `json:"live_sha256"`
	ProposedFile   string `json:"proposed_file"`
	ProposedSHA256 string `json:"proposed_sha256"`
}

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
		if err := WriteFileAtomic(filepath.Join(dir, file), []byte(p.Text), 0o600); err != nil {
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
	if err := WriteFileAtomic(filepath.Join(dir, "report.json"), []byte(Redact(string(rj))+"\n"), 0o600); err != nil {
		return "", err
	}
	if err := WriteFileAtomic(filepath.Join(dir, "report.md"), []byte(Redact(in.ReportMD)), 0o600); err != nil {
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
	if err := WriteFileAtomic(filepath.Join(dir, "evidence.jsonl"), []byte(ev.String()), 0o600); err != nil {
		return "", err
	}
	mb, _ := json.MarshalIndent(m, "", "  ")
	if err := WriteFileAtomic(filepath.Join(dir, "manifest.json"), append(mb, '\n'), 0o600); err != nil {
		return "", err
	}
	if err := WriteFileAtomic(filepath.Join(in.Root, ".latest"), []byte(filepath.Base(dir)+"\n"), 0o600); err != nil {
		return "", err
	}
	return dir, nil
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
	if m.Schema != ManifestSchema {
		return nil, fmt.Errorf("%s/manifest.json: schema %q, want %q", dir, m.Schema, ManifestSchema)
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
