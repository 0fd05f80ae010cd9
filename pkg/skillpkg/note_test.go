package skillpkg

import (
	"slices"
	"testing"
)

func TestNotedFiles(t *testing.T) {
	reply := OpenedFilesNote + " SKILL.md, references/arxiv.md]\n\n<answer>x</answer>"
	if got := NotedFiles(reply); !slices.Equal(got, []string{"SKILL.md", "references/arxiv.md"}) {
		t.Errorf("NotedFiles = %v", got)
	}
	if got := CutNote(reply); got != "<answer>x</answer>" {
		t.Errorf("CutNote = %q", got)
	}
	for _, plain := range []string{"<answer>x</answer>", OpenedFilesNote + " SKILL.md"} {
		if NotedFiles(plain) != nil || (plain[0] == '<' && CutNote(plain) != plain) {
			t.Errorf("%q: NotedFiles %v, CutNote %q", plain, NotedFiles(plain), CutNote(plain))
		}
	}
}
