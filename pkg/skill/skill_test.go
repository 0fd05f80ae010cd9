package skill

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	slowBlock  = SlowStart + "\nSlow rule.\n" + SlowEnd
	emptySlow  = SlowStart + "\n" + SlowEnd
	emptyAppx  = AppendixStart + "\n" + AppendixHeading + "\n" + AppendixEnd
	noteAppx   = AppendixStart + "\n" + AppendixHeading + "\n- Note.\n" + AppendixEnd
	headedBody = "# Skill\n\nRule one.\n"
)

func TestHash(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"", "e3b0c44298fc1c14"},
		{"abc", "ba7816bf8f01cfea"},
		{"é\n", "edd3a863872a0423"},
	}
	for _, tt := range tests {
		if got := Hash(tt.in); got != tt.want {
			t.Errorf("Hash(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestInjectSlowPlaceholder(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"after right-strip", "# S\n\nRule.\n\n \n", "# S\n\nRule.\n\n" + emptySlow + "\n"},
		{"no trailing newline", "# S", "# S\n\n" + emptySlow + "\n"},
		{"empty skill", "", "\n\n" + emptySlow + "\n"},
		{"already present", slow, slow},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, InjectSlowPlaceholder(tt.in)); diff != "" {
			t.Errorf("%s: InjectSlowPlaceholder mismatch (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestSlowContent(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"block", slow, "Slow rule."},
		{"placeholder", InjectSlowPlaceholder(plain), ""},
		{"none", plain, ""},
		{"unterminated", "A\n" + SlowStart + "\nB\n", ""},
		{"first block wins", slow + SlowStart + "\nOther.\n" + SlowEnd + "\n", "Slow rule."},
	}
	for _, tt := range tests {
		if got := SlowContent(tt.in); got != tt.want {
			t.Errorf("%s: SlowContent = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestReplaceSlowBlock(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, skill, content, want string }{
		{
			name:  "replace the block at the end",
			skill: slow, content: "  New guidance.\n",
			want: headedBody + "\n" + SlowStart + "\nNew guidance.\n" + SlowEnd + "\n",
		},
		{
			name:  "block in the middle moves to the end",
			skill: "A\n\n" + slowBlock + "\n\nB\n", content: "G",
			// Removing the block leaves "A\n\n\n\nB\n"; the run collapses.
			want: "A\n\nB\n\n" + SlowStart + "\nG\n" + SlowEnd + "\n",
		},
		{
			name:  "newline runs collapse everywhere",
			skill: "X\n\n\n\nY\n\n\n" + slowBlock + "\n", content: "G",
			want: "X\n\nY\n\n" + SlowStart + "\nG\n" + SlowEnd + "\n",
		},
		{
			name:  "every block removed",
			skill: slowBlock + "\nA\n" + slowBlock + "\n", content: "G",
			want: "\nA\n\n" + SlowStart + "\nG\n" + SlowEnd + "\n",
		},
		{
			name:  "no block yet",
			skill: plain, content: "G",
			want: plain + "\n" + SlowStart + "\nG\n" + SlowEnd + "\n",
		},
		{
			name:  "empty content gives the placeholder",
			skill: slow, content: " \n",
			want: headedBody + "\n" + emptySlow + "\n",
		},
		{
			name:  "appendix kept, slow block after it",
			skill: headedBody + "\n" + noteAppx + "\n\n" + emptySlow + "\n", content: "G",
			want: headedBody + "\n" + noteAppx + "\n\n" + SlowStart + "\nG\n" + SlowEnd + "\n",
		},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, ReplaceSlowBlock(tt.skill, tt.content)); diff != "" {
			t.Errorf("%s: ReplaceSlowBlock mismatch (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestAppendix(t *testing.T) {
	t.Parallel()
	injected := InjectAppendix(plain)
	if diff := cmp.Diff(plain+"\n"+emptyAppx+"\n", injected); diff != "" {
		t.Errorf("InjectAppendix mismatch (-want +got):\n%s", diff)
	}
	if got := InjectAppendix(injected); got != injected {
		t.Errorf("InjectAppendix is not idempotent: %q", got)
	}
	if got := AppendixNotes(injected); got != nil {
		t.Errorf("AppendixNotes(empty appendix) = %q, want none", got)
	}
	if diff := cmp.Diff([]string{"Note."}, AppendixNotes(both)); diff != "" {
		t.Errorf("AppendixNotes mismatch (-want +got):\n%s", diff)
	}
	hand := AppendixStart + "\n" + AppendixHeading + "\n\n* Star note\n  - Indented  \nbare line\n-\n" + AppendixEnd
	if diff := cmp.Diff([]string{"Star note", "Indented", "bare line", "-"}, AppendixNotes(hand)); diff != "" {
		t.Errorf("AppendixNotes(hand-edited) mismatch (-want +got):\n%s", diff)
	}

	// The appendix sits before the slow block in both; the flush moves it
	// to the end and merges notes without duplicates.
	got := FlushAppendix(both, []string{"note", "New  note\n here.", "new note here", "", AppendixEnd})
	want := headedBody + "\n" + slowBlock + "\n\n" +
		AppendixStart + "\n" + AppendixHeading + "\n- Note.\n- New note here.\n" + AppendixEnd + "\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("FlushAppendix mismatch (-want +got):\n%s", diff)
	}
	// Flushing into a skill without an appendix creates one.
	got = FlushAppendix(plain, []string{"Check units."})
	want = plain + "\n" + AppendixStart + "\n" + AppendixHeading + "\n- Check units.\n" + AppendixEnd + "\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("FlushAppendix(no appendix) mismatch (-want +got):\n%s", diff)
	}
}

func TestNoteKey(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"  Foo \t  bar.;:,_- ", "foo bar"},
		{"Check the UNITS.", "check the units"},
		{"Straße", "strasse"},
		{"ΣΑΣ", "σασ"},
		{"x\x1cy", "x y"},
		{" ...;;", ""},
		{"a - b", "a - b"},
	}
	for _, tt := range tests {
		if got := NoteKey(tt.in); got != tt.want {
			t.Errorf("NoteKey(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestDedupNotes(t *testing.T) {
	t.Parallel()
	in := []string{"Verify units.", "verify units", "  ", "Verify\nunits;", "Cite " + SlowStart + "sources", "cite sources."}
	want := []string{"Verify units.", "Cite sources"}
	if diff := cmp.Diff(want, DedupNotes(in)); diff != "" {
		t.Errorf("DedupNotes mismatch (-want +got):\n%s", diff)
	}
}

func TestStripProtected(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"both regions", both, headedBody},
		{"none", plain, plain},
		{"middle", "A\n\n" + slowBlock + "\n\nB\n", "A\n\nB\n"},
		{"stray marker", "A\n" + AppendixEnd + "\nB\n", "A\n\nB\n"},
		{"only a region", slowBlock + "\n", ""},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, StripProtected(tt.in)); diff != "" {
			t.Errorf("%s: StripProtected mismatch (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestRestoreProtected(t *testing.T) {
	t.Parallel()
	current := headedBody + "\n" + noteAppx + "\n\n" + slowBlock + "\n"
	tests := []struct {
		name        string
		candidate   string
		current     string
		want        string
		wantChanged []string
	}{
		{
			name:      "regions kept in place",
			candidate: "# New\n\n" + noteAppx + "\n\nMore.\n\n" + slowBlock + "\n",
			current:   current,
			want:      "# New\n\n" + noteAppx + "\n\nMore.\n\n" + slowBlock + "\n",
		},
		{
			name:        "both dropped: appended in canonical order",
			candidate:   "# New\n",
			current:     current,
			want:        "# New\n\n" + slowBlock + "\n\n" + noteAppx + "\n",
			wantChanged: []string{RegionSlowUpdate, RegionAppendix},
		},
		{
			name:        "altered slow block restored at the end",
			candidate:   "# New\n\n" + noteAppx + "\n\n" + SlowStart + "\nChanged.\n" + SlowEnd + "\n\nTail.\n",
			current:     current,
			want:        "# New\n\n" + noteAppx + "\n\nTail.\n\n" + slowBlock + "\n",
			wantChanged: []string{RegionSlowUpdate},
		},
		{
			name:        "duplicated block",
			candidate:   "# New\n\n" + noteAppx + "\n" + slowBlock + "\n" + slowBlock + "\n",
			current:     current,
			want:        "# New\n\n" + noteAppx + "\n\n" + slowBlock + "\n",
			wantChanged: []string{RegionSlowUpdate},
		},
		{
			name:        "stray end marker",
			candidate:   "# New\n" + SlowEnd + "\n\n" + noteAppx + "\n\n" + slowBlock + "\n",
			current:     current,
			want:        "# New\n\n" + noteAppx + "\n\n" + slowBlock + "\n",
			wantChanged: []string{RegionSlowUpdate},
		},
		{
			name:        "invented region removed",
			candidate:   "# New\n\n" + noteAppx + "\n\n" + slowBlock + "\n",
			current:     slow,
			want:        "# New\n\n" + slowBlock + "\n",
			wantChanged: []string{RegionAppendix},
		},
		{
			name:      "no regions anywhere",
			candidate: "# New\n",
			current:   plain,
			want:      "# New\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, changed := RestoreProtected(tt.candidate, tt.current)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("RestoreProtected text mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantChanged, changed); diff != "" {
				t.Errorf("RestoreProtected changed mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
