package nightly

import (
	"fmt"
	"strings"
)

// MaxLessons bounds the slow memory: the newest lessons are kept.
const MaxLessons = 24

// maxLessonText bounds one lesson's edit text and reason.
const maxLessonText = 300

// Lesson is one entry of the slow memory: an edit an earlier night tried
// and what its gate decided. Nights append them to the state; the
// reflector is shown them, so an edit the gate rejected is not proposed
// night after night, and one it kept is not proposed again.
type Lesson struct {
	Night    int    `json:"night"`
	Document string `json:"document"`
	// Op, File and Content are the edit (Content, else its Anchor).
	Op      string `json:"op"`
	File    string `json:"file,omitempty"`
	Content string `json:"content"`
	// Kept says the edit is in the night's proposal; Why is the gate's
	// reason (the score change, or why it was refused or rolled back).
	Kept bool   `json:"kept"`
	Why  string `json:"why"`
}

// Text is a lesson on one line.
func (l Lesson) Text() string {
	verdict := "rejected"
	if l.Kept {
		verdict = "kept"
	}
	doc := l.Document
	if l.File != "" {
		doc += " " + l.File
	}
	return fmt.Sprintf("night %d, %s %s %q: %s (%s)", l.Night, doc, l.Op, l.Content, verdict, l.Why)
}

// NewLesson makes a lesson of one gate trial: its texts redacted and
// clipped, so the state file never holds a secret-shaped string.
func NewLesson(night int, document string, e Edit, kept bool, why string) Lesson {
	content := e.Content
	if content == "" {
		content = e.Anchor
	}
	return Lesson{Night: night, Document: document, Op: e.Op, File: e.File, Kept: kept,
		Content: Redact(clip(strings.TrimSpace(content), maxLessonText)), Why: Redact(clip(why, maxLessonText))}
}

// Learn adds lessons to the slow memory: a lesson about the same edit
// (document, file, op and content) replaces the older one, and only the
// newest [MaxLessons] are kept.
func (s *State) Learn(lessons []Lesson) {
	key := func(l Lesson) string {
		return l.Document + "\x00" + l.File + "\x00" + l.Op + "\x00" + strings.ToLower(l.Content)
	}
	fresh := map[string]bool{}
	for _, l := range lessons {
		fresh[key(l)] = true
	}
	kept := s.Lessons[:0]
	for _, l := range s.Lessons {
		if !fresh[key(l)] {
			kept = append(kept, l)
		}
	}
	s.Lessons = append(kept, lessons...)
	if len(s.Lessons) > MaxLessons {
		s.Lessons = s.Lessons[len(s.Lessons)-MaxLessons:]
	}
}
