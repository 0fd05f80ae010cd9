package nightly

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Splits of mined tasks.
const (
	SplitTrain = "train"
	SplitVal   = "val"
	SplitTest  = "test"
)

// Judge kinds.
const (
	JudgeRule   = "rule"
	JudgeExact  = "exact"
	JudgeRubric = "rubric"
)

// Task is one recurring task mined from the user's sessions.
type Task struct {
	ID      string `json:"id"`
	Project string `json:"project"`
	// Intent is what the user asked for, in their words (redacted).
	Intent string `json:"intent"`
	// Context is an excerpt of the session that the task needs.
	Context string `json:"context,omitempty"`
	// System, if set, is the task's own output contract: a system prompt
	// with a {skill_section} placeholder.
	System string `json:"system,omitempty"`
	// Attempt is what the agent answered in the session (an excerpt).
	Attempt string `json:"attempted_solution,omitempty"`
	// Outcome is success, fail, mixed or unknown.
	Outcome  string   `json:"outcome"`
	Judge    Judge    `json:"judge"`
	Tags     []string `json:"tags,omitempty"`
	Sessions []string `json:"source_sessions,omitempty"`
	Split    string   `json:"split"`
	// Origin is real (mined or from a tasks file), recall or dream (see
	// [OriginReal]); only a real task is put in val or test.
	Origin    string `json:"origin"`
	SkillHint string `json:"skill_hint,omitempty"`
	// DerivedFrom is the id of the task a recalled or dream task copies.
	DerivedFrom string `json:"derived_from,omitempty"`
}

// Judge says how a reply to a task is scored. Every kind also requires
// its Checks: hard = the primary verdict and every check passing; soft =
// the mean of the primary soft score and the share of checks passed.
type Judge struct {
	// Kind is rule (checks only), exact (Reference) or rubric (an LLM
	// judge reads Rubric).
	Kind      string  `json:"kind"`
	Checks    []Check `json:"checks,omitempty"`
	Reference string  `json:"reference,omitempty"`
	Rubric    string  `json:"rubric,omitempty"`
}

// Check is one local rule check.
type Check struct {
	Op  string `json:"op"`
	Arg string `json:"arg,omitempty"`
}

// Check ops.
const (
	OpSectionPresent  = "section_present"
	OpSectionContains = "section_contains"
	OpRegex           = "regex"
	OpMaxChars        = "max_chars"
	OpMinChars        = "min_chars"
	OpContains        = "contains"
	OpNotContains     = "not_contains"
	OpNoRefusal       = "no_refusal"
	OpToolCalled      = "tool_called"
)

// CheckOps lists the known check ops.
var CheckOps = []string{OpSectionPresent, OpSectionContains, OpRegex, OpMaxChars, OpMinChars, OpContains, OpNotContains, OpNoRefusal, OpToolCalled}

// Validate checks a judge: a known kind with what it needs, and every
// check a known op with a usable argument. An unknown op is an error, never
// a pass.
func (j Judge) Validate() error {
	switch j.Kind {
	case JudgeRule:
		if len(j.Checks) == 0 {
			return errors.New("judge: kind rule needs at least one check")
		}
	case JudgeExact:
		if strings.TrimSpace(j.Reference) == "" {
			return errors.New("judge: kind exact needs a reference")
		}
	case JudgeRubric:
		if strings.TrimSpace(j.Rubric) == "" {
			return errors.New("judge: kind rubric needs a rubric")
		}
	default:
		return fmt.Errorf("judge: kind %q: want rule, exact or rubric", j.Kind)
	}
	for i, c := range j.Checks {
		if err := c.validate(); err != nil {
			return fmt.Errorf("judge: checks[%d]: %w", i, err)
		}
	}
	return nil
}

func (c Check) validate() error {
	switch c.Op {
	case OpNoRefusal:
		return nil
	case OpRegex:
		if _, err := regexp.Compile(c.Arg); err != nil {
			return fmt.Errorf("op regex: %w", err)
		}
	case OpMaxChars, OpMinChars:
		if n, err := strconv.Atoi(strings.TrimSpace(c.Arg)); err != nil || n < 0 {
			return fmt.Errorf("op %s: arg %q is not a non-negative integer", c.Op, c.Arg)
		}
	case OpSectionContains:
		if h, t, ok := strings.Cut(c.Arg, "|"); !ok || strings.TrimSpace(h) == "" || strings.TrimSpace(t) == "" {
			return fmt.Errorf("op section_contains: arg %q: want \"heading|text\"", c.Arg)
		}
	case OpSectionPresent, OpContains, OpNotContains, OpToolCalled:
		if strings.TrimSpace(c.Arg) == "" {
			return fmt.Errorf("op %s: needs an arg", c.Op)
		}
	default:
		return fmt.Errorf("unknown op %q (known: %s)", c.Op, strings.Join(CheckOps, ", "))
	}
	return nil
}

// Validate checks a task.
func (t Task) Validate() error {
	if strings.TrimSpace(t.ID) == "" {
		return errors.New("id: required")
	}
	if len(strings.TrimSpace(t.Intent)) < 8 {
		return fmt.Errorf("task %s: intent: shorter than 8 characters", t.ID)
	}
	if t.Split != "" && !slices.Contains([]string{SplitTrain, SplitVal, SplitTest}, t.Split) {
		return fmt.Errorf("task %s: split %q: want train, val or test", t.ID, t.Split)
	}
	if !slices.Contains([]string{"", OriginReal, OriginRecall, OriginDream}, t.Origin) {
		return fmt.Errorf("task %s: origin %q: want real, recall or dream", t.ID, t.Origin)
	}
	if !IsHeldOutOrigin(t.Origin) && (t.Split == SplitVal || t.Split == SplitTest) {
		return fmt.Errorf("task %s: split %s: a %s task is train only (the gate scores real tasks alone)", t.ID, t.Split, t.Origin)
	}
	if err := t.Judge.Validate(); err != nil {
		return fmt.Errorf("task %s: %w", t.ID, err)
	}
	return nil
}

func shortHash(parts ...string) string {
	h := sha256.New()
	for i, p := range parts {
		if i > 0 {
			h.Write([]byte{0})
		}
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TaskID is a task's stable id: prefix + the first 12 hex digits of
// sha256(project, intent).
func TaskID(prefix, project, intent string) string {
	return prefix + shortHash(project, strings.TrimSpace(intent))[:12]
}

var outcomeRank = map[string]int{"success": 3, "fail": 2, "mixed": 1, "unknown": 0, "": 0}

// Dedup merges tasks with the same id: their sessions are joined and the
// most resolved outcome kept. Order of first appearance is kept.
func Dedup(tasks []Task) []Task {
	idx := map[string]int{}
	var out []Task
	for _, t := range tasks {
		i, ok := idx[t.ID]
		if !ok {
			idx[t.ID] = len(out)
			out = append(out, t)
			continue
		}
		o := &out[i]
		for _, s := range t.Sessions {
			if !slices.Contains(o.Sessions, s) {
				o.Sessions = append(o.Sessions, s)
			}
		}
		if outcomeRank[t.Outcome] > outcomeRank[o.Outcome] {
			o.Outcome = t.Outcome
		}
	}
	return out
}

// bucket is a task's stable position in [0, 100) for a seed.
func bucket(seed int64, id string) (int, []byte) {
	sum := sha256.Sum256([]byte(strconv.FormatInt(seed, 10) + id))
	return int(binary.BigEndian.Uint64(sum[:8]) % 100), sum[:]
}

// AssignSplits gives every real task a split from a stable hash of its id
// (so a task keeps its split across nights): the first round(100·val)
// buckets are val, the next round(100·test) test, the rest train. With two
// or more tasks at least one is val and one train (the task with the
// smallest hash is moved). Recalled tasks are always train.
func AssignSplits(tasks []Task, seed int64, val, test float64) {
	vb := int(math.Round(100 * val))
	tb := vb + int(math.Round(100*test))
	type hashed struct {
		i   int
		sum []byte
	}
	var realTasks []hashed
	for i := range tasks {
		if !IsHeldOutOrigin(tasks[i].Origin) {
			tasks[i].Split = SplitTrain
			continue
		}
		b, sum := bucket(seed, tasks[i].ID)
		switch {
		case b < vb:
			tasks[i].Split = SplitVal
		case b < tb:
			tasks[i].Split = SplitTest
		default:
			tasks[i].Split = SplitTrain
		}
		realTasks = append(realTasks, hashed{i, sum})
	}
	if len(realTasks) < 2 {
		return
	}
	sort.Slice(realTasks, func(a, b int) bool { return string(realTasks[a].sum) < string(realTasks[b].sum) })
	has := func(split string) bool {
		for _, h := range realTasks {
			if tasks[h.i].Split == split {
				return true
			}
		}
		return false
	}
	promote := func(from, to string) {
		for _, h := range realTasks {
			if tasks[h.i].Split == from {
				tasks[h.i].Split = to
				return
			}
		}
	}
	if val > 0 && !has(SplitVal) {
		if has(SplitTrain) {
			promote(SplitTrain, SplitVal)
		} else {
			promote(SplitTest, SplitVal)
		}
	}
	if !has(SplitTrain) {
		if has(SplitTest) {
			promote(SplitTest, SplitTrain)
		} else {
			// Keep at least one val.
			n := 0
			for _, h := range realTasks {
				if tasks[h.i].Split == SplitVal {
					n++
				}
			}
			if n > 1 {
				promote(SplitVal, SplitTrain)
			}
		}
	}
}

// TasksFile is the file `sleep harvest --output` writes and `--tasks-file`
// reads: a user vets the tasks and sets Reviewed.
type TasksFile struct {
	Reviewed bool   `json:"reviewed"`
	Tasks    []Task `json:"tasks"`
}

// LoadTasksFile reads and validates a tasks file; errors name the file and
// the task.
func LoadTasksFile(path string) (*TasksFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var tf TasksFile
	if err := json.Unmarshal(b, &tf); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	seen := map[string]bool{}
	for i := range tf.Tasks {
		t := &tf.Tasks[i]
		if t.Origin == "" {
			t.Origin = "real"
		}
		if err := t.Validate(); err != nil {
			return nil, fmt.Errorf("%s: tasks[%d]: %w", path, i, err)
		}
		if seen[t.ID] {
			return nil, fmt.Errorf("%s: tasks[%d]: duplicate id %q", path, i, t.ID)
		}
		seen[t.ID] = true
		for _, s := range []string{t.Intent, t.Context, t.System, t.Judge.Reference, t.Judge.Rubric} {
			if ContainsSecret(s) {
				return nil, fmt.Errorf("%s: tasks[%d] (%s): holds a secret-shaped string; remove it", path, i, t.ID)
			}
		}
	}
	return &tf, nil
}

// WriteTasksFile writes a tasks file (atomically).
func WriteTasksFile(path string, tf TasksFile) error {
	b, err := json.MarshalIndent(tf, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(path, append(b, '\n'), 0o600)
}
