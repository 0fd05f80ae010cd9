// Package inspect reads what a run dir holds about each rollout: the
// per-item predictions of every evaluation (results.jsonl files, see
// rundir.Prediction), the analysts' minibatch records, and the whole
// trajectories in the result journal. `skillfleet inspect` is its
// command; it only reads (a running coordinator's journal included).
package inspect

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/pkg/rundir"
	"github.com/skillfleet/skillfleet/pkg/skill"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// JournalFile is the run dir's result journal.
const JournalFile = "results.journal"

// Run is what a run dir holds about its rollouts.
type Run struct {
	Dir string
	// Preds are every prediction, by step, then stage, then file order.
	Preds []rundir.Prediction
	// Files are the results.jsonl files read, relative to Dir.
	Files []string
}

// Load reads every results.jsonl under dir. A run dir written before
// predictions were kept has none: the error says so.
func Load(dir string) (*Run, error) {
	if st, err := os.Stat(dir); err != nil {
		return nil, err
	} else if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	r := &Run{Dir: dir}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != dir && (d.Name() == "_generated_splits" || d.Name() == "nats" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() != rundir.PredictionsFile {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		preds, err := readPredictions(p)
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		r.Files = append(r.Files, rel)
		r.Preds = append(r.Preds, preds...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(r.Files) == 0 {
		return nil, fmt.Errorf("%s has no %s: not a run dir, or written by a skillfleet that did not keep per-item predictions (the results are in %s; re-run the same command on it to write them)",
			dir, rundir.PredictionsFile, JournalFile)
	}
	sort.SliceStable(r.Preds, func(i, j int) bool {
		a, b := r.Preds[i], r.Preds[j]
		if stageRank(a) != stageRank(b) {
			return stageRank(a) < stageRank(b)
		}
		return a.Step < b.Step
	})
	return r, nil
}

// stageRank orders the baseline first and the final evaluations last;
// steps and epochs sort by step between them.
func stageRank(p rundir.Prediction) int {
	switch {
	case p.Stage == "baseline":
		return 0
	case p.Stage == "final_selection" || strings.HasPrefix(p.Stage, "test_") || strings.HasPrefix(p.Stage, "eval_"):
		return 2
	}
	return 1
}

// LoadFile reads one results.jsonl file.
func LoadFile(path string) ([]rundir.Prediction, error) { return readPredictions(path) }

func readPredictions(path string) ([]rundir.Prediction, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []rundir.Prediction
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var p rundir.Prediction
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, p)
	}
	return out, sc.Err()
}

// Filter selects predictions; a zero field selects all.
type Filter struct {
	Step    *int
	Stage   string
	Item    string
	Outcome string
	// Failed keeps the results that did not score full marks (hard < 1)
	// or did not score at all.
	Failed bool
	// MinScore and MaxScore bound the hard score.
	MinScore, MaxScore *float64
}

// Match reports whether p passes f.
func (f Filter) Match(p rundir.Prediction) bool {
	switch {
	case f.Step != nil && p.Step != *f.Step:
		return false
	case f.Stage != "" && p.Stage != f.Stage:
		return false
	case f.Item != "" && p.ID != f.Item:
		return false
	case f.Outcome != "" && p.Outcome != f.Outcome:
		return false
	case f.Failed && p.Outcome == "ok" && p.Hard >= 1:
		return false
	case f.MinScore != nil && p.Hard < *f.MinScore:
		return false
	case f.MaxScore != nil && p.Hard > *f.MaxScore:
		return false
	}
	return true
}

// Select returns the predictions f matches, in order.
func (r *Run) Select(f Filter) []rundir.Prediction {
	var out []rundir.Prediction
	for _, p := range r.Preds {
		if f.Match(p) {
			out = append(out, p)
		}
	}
	return out
}

// Stages lists the stages present with their result counts, for an error
// that names what a filter could have said.
func (r *Run) Stages() []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range r.Preds {
		if !seen[p.Stage] {
			seen[p.Stage] = true
			out = append(out, p.Stage)
		}
	}
	return out
}

// WriteList writes preds as a table, one line each, the prediction cut to
// fit.
func WriteList(w io.Writer, preds []rundir.Prediction) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%-5s %-18s %-14s %-12s %5s %5s  %s\n", "step", "stage", "item", "outcome", "hard", "soft", "prediction")
	for _, p := range preds {
		fmt.Fprintf(bw, "%-5d %-18s %-14s %-12s %5.2f %5.2f  %s\n", p.Step, p.Stage, p.ID, p.Outcome, p.Hard, p.Soft, oneLine(p.Prediction, 60))
	}
	fmt.Fprintf(bw, "%d results\n", len(preds))
	return bw.Flush()
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// Trajectory is one result whole: its prediction line, the conversation
// from the journal, the skill version it ran with, and the analyst calls
// that read it.
type Trajectory struct {
	rundir.Prediction
	// SkillFile names the run-dir file holding the skill it ran with
	// ("" when none matches; "(no skill)" for the empty skill).
	SkillFile string `json:"skill_file,omitempty"`
	// Task is the task as the agent was given it.
	Task string `json:"task,omitempty"`
	// Messages are the conversation, prompts first.
	Messages []Message `json:"messages"`
	// Analysts are the analyst calls of its step whose minibatch held it.
	Analysts []rundir.Minibatch `json:"analysts,omitempty"`
}

// Message is one turn of a conversation.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Reader finds what a run dir holds about a prediction. It reads the
// journal once, on first use.
type Reader struct {
	dir     string
	results map[string]*pb.Result
	skills  map[string]string // skill hash -> run-dir file
	mbs     map[int][]rundir.Minibatch
}

// NewReader reads run dir dir's skills and minibatch records, and from
// its journal the results of preds (only those: a journal may be larger
// than memory).
func NewReader(dir string, preds []rundir.Prediction) (*Reader, error) {
	rd := &Reader{dir: dir, skills: map[string]string{}, mbs: map[int][]rundir.Minibatch{}}
	want := make(map[string]bool, len(preds))
	for _, p := range preds {
		want[p.TaskID] = true
	}
	var err error
	if rd.results, err = ReadJournal(filepath.Join(dir, JournalFile), func(id string) bool { return want[id] }); err != nil {
		return nil, err
	}
	rd.skills[skill.Hash("")] = "(no skill)"
	for _, pat := range []string{"skills/skill_v*.md", rundir.BestSkillFile, "steps/step_*/candidate_skill.md", "*/epoch_*/candidate_skill.md", "_generated_splits/*/seed_skill.md"} {
		files, _ := filepath.Glob(filepath.Join(dir, pat))
		sort.Strings(files)
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			h := skill.Hash(string(data))
			if _, ok := rd.skills[h]; !ok {
				rel, _ := filepath.Rel(dir, f)
				rd.skills[h] = rel
			}
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "steps", "step_*", "patches", "minibatch_*.json"))
	sort.Strings(files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var mb rundir.Minibatch
		if json.Unmarshal(data, &mb) == nil {
			rd.mbs[mb.Step] = append(rd.mbs[mb.Step], mb)
		}
	}
	return rd, nil
}

// Trajectory is p whole. The analysts are those of p's step that read
// p's item, for a training rollout (the only rollouts analysts read).
func (rd *Reader) Trajectory(p rundir.Prediction) Trajectory {
	t := Trajectory{Prediction: p, SkillFile: rd.skills[p.SkillHash]}
	if res := rd.results[p.TaskID]; res != nil {
		ro := res.GetRollout()
		t.Task = ro.GetTaskDescription()
		if len(ro.GetTrajectory()) > 0 {
			_ = json.Unmarshal(ro.GetTrajectory(), &t.Messages)
		}
	}
	if p.Stage == "rollout" {
		for _, mb := range rd.mbs[p.Step] {
			for _, id := range mb.Items {
				if id == p.ID {
					t.Analysts = append(t.Analysts, mb)
					break
				}
			}
		}
	}
	return t
}

// WriteTrajectory writes t for a person to read: what was asked, what the
// agent answered, how it scored, and what the analysts proposed.
func WriteTrajectory(w io.Writer, t Trajectory) error {
	bw := bufio.NewWriter(w)
	rule := strings.Repeat("─", 72)
	fmt.Fprintf(bw, "%s\n%s  step %d  item %s  (%s split)\n", rule, t.Stage, t.Step, t.ID, t.Split)
	fmt.Fprintf(bw, "outcome %s  hard %.3f  soft %.3f", t.Outcome, t.Hard, t.Soft)
	if t.TaskType != "" {
		fmt.Fprintf(bw, "  type %s", t.TaskType)
	}
	fmt.Fprintln(bw)
	sk := t.SkillFile
	if sk == "" {
		sk = "not among the run dir's skill files"
	}
	fmt.Fprintf(bw, "skill %s (%s)\n", short(t.SkillHash), sk)
	fmt.Fprintf(bw, "task id %s\n", t.TaskID)
	if t.FailReason != "" {
		fmt.Fprintf(bw, "fail reason: %s\n", t.FailReason)
	}
	if t.Error != "" {
		fmt.Fprintf(bw, "error: %s\n", t.Error)
	}
	if len(t.Messages) == 0 {
		fmt.Fprintf(bw, "\n(no conversation: the journal has no trajectory for this task)\n")
	}
	for _, m := range t.Messages {
		fmt.Fprintf(bw, "\n[%s]\n%s\n", m.Role, strings.TrimRight(m.Content, "\n"))
	}
	fmt.Fprintf(bw, "\n[answer]\n%s\n", t.Prediction.Prediction)
	for _, mb := range t.Analysts {
		fmt.Fprintf(bw, "\n[analyst: %s minibatch %d of step %d, %d items]\n", mb.Side, mb.Index, mb.Step, len(mb.Items))
		switch {
		case !mb.OK:
			fmt.Fprintf(bw, "the call failed: %s\n", mb.Error)
		case len(mb.Reply) == 0:
			fmt.Fprintln(bw, "(no usable reply)")
		default:
			fmt.Fprintln(bw, indentJSON(mb.Reply))
		}
	}
	return bw.Flush()
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func indentJSON(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	out, _ := json.MarshalIndent(v, "", "  ")
	return string(out)
}

// WriteJSONL writes each prediction with its trajectory as one JSON object
// per line.
func (rd *Reader) WriteJSONL(w io.Writer, preds []rundir.Prediction) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for _, p := range preds {
		if err := enc.Encode(rd.Trajectory(p)); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// ReadJournal reads the journal at path without writing it, so a running
// coordinator's journal can be read: each record is a 4-byte big-endian
// length, the CRC-32C of the data, then a protobuf Result (the format
// coordinator/dispatch writes); reading stops at the first torn or corrupt
// record. Only the results of the task ids keep accepts are returned; the
// last result of a task id wins. A missing journal is no result.
func ReadJournal(path string, keep func(taskID string) bool) (map[string]*pb.Result, error) {
	out := map[string]*pb.Result{}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	table := crc32.MakeTable(crc32.Castagnoli)
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return out, nil
		}
		n := binary.BigEndian.Uint32(hdr[:4])
		if n > 256<<20 {
			return out, nil
		}
		data := make([]byte, n)
		if _, err := io.ReadFull(r, data); err != nil {
			return out, nil
		}
		if crc32.Checksum(data, table) != binary.BigEndian.Uint32(hdr[4:]) {
			return out, nil
		}
		res := &pb.Result{}
		if proto.Unmarshal(data, res) != nil {
			return out, nil
		}
		if keep(res.GetTaskId()) {
			out[res.GetTaskId()] = res
		}
	}
}
