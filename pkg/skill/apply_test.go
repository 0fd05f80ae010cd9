package skill

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	// plain has no protected region.
	plain = "# Skill\n\nRule one.\nRule two.\n"
	// slow has a slow-update block at the end.
	slow = "# Skill\n\nRule one.\n\n" + SlowStart + "\nSlow rule.\n" + SlowEnd + "\n"
	// both has an appendix and then a slow-update block.
	both = "# Skill\n\nRule one.\n\n" + AppendixStart + "\n" + AppendixHeading + "\n- Note.\n" + AppendixEnd +
		"\n\n" + SlowStart + "\nSlow rule.\n" + SlowEnd + "\n"
)

func TestApplyStatuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		skill      string
		edit       Edit
		normalize  bool
		want       string
		wantStatus Status
		wantOp     string
		wantFrom   string
	}{
		// append
		{
			name:  "append at end",
			skill: plain, edit: Edit{Op: "append", Content: "  New rule.  \n"},
			want:       "# Skill\n\nRule one.\nRule two.\n\nNew rule.\n",
			wantStatus: AppliedAppend,
		},
		{
			name:  "append right-strips the skill",
			skill: "A\n\n\n  \n", edit: Edit{Op: "append", Content: "B"},
			want:       "A\n\nB\n",
			wantStatus: AppliedAppend,
		},
		{
			name:  "append before slow region",
			skill: slow, edit: Edit{Op: "append", Content: "New rule."},
			want:       "# Skill\n\nRule one.\n\nNew rule.\n\n" + SlowStart + "\nSlow rule.\n" + SlowEnd + "\n",
			wantStatus: AppliedAppendBeforeProtected,
		},
		{
			name:  "append before the earliest region",
			skill: both, edit: Edit{Op: "append", Content: "New rule."},
			want: "# Skill\n\nRule one.\n\nNew rule.\n\n" + AppendixStart + "\n" + AppendixHeading + "\n- Note.\n" +
				AppendixEnd + "\n\n" + SlowStart + "\nSlow rule.\n" + SlowEnd + "\n",
			wantStatus: AppliedAppendBeforeProtected,
		},
		{
			name:  "append ignores its target unless protected",
			skill: plain, edit: Edit{Op: "append", Target: "nowhere", Content: "X"},
			want:       plain + "\nX\n",
			wantStatus: AppliedAppend,
		},
		{
			name:  "content markers removed after strip",
			skill: plain, edit: Edit{Op: "append", Content: " " + SlowStart + " X" + AppendixEnd + "\n"},
			// Stripped first, so the space left after removing the
			// leading marker stays.
			want:       plain + "\n X\n",
			wantStatus: AppliedAppend,
		},
		{
			name:  "content stripped of Python whitespace",
			skill: plain, edit: Edit{Op: "append", Content: "\x1c\u00a0X\u3000\x1f"},
			want:       plain + "\nX\n",
			wantStatus: AppliedAppend,
		},
		{
			name:  "append empty content",
			skill: plain, edit: Edit{Op: "append"},
			want:       plain + "\n\n",
			wantStatus: AppliedAppend,
		},
		// insert_after
		{
			name:  "insert after a line",
			skill: plain, edit: Edit{Op: "insert_after", Target: "Rule one.", Content: "Inserted."},
			want:       "# Skill\n\nRule one.\n\nInserted.\nRule two.\n",
			wantStatus: AppliedInsertAfter,
		},
		{
			name:  "insert after the end of the target's line",
			skill: plain, edit: Edit{Op: "insert_after", Target: "Rule t", Content: "Inserted."},
			want:       plain + "\nInserted.\n",
			wantStatus: AppliedInsertAfter,
		},
		{
			name:  "insert after a target ending in newline skips a line",
			skill: plain, edit: Edit{Op: "insert_after", Target: "Rule one.\n", Content: "X"},
			want:       plain + "\nX\n",
			wantStatus: AppliedInsertAfter,
		},
		{
			name:  "insert after the last line without newline",
			skill: "A\nB", edit: Edit{Op: "insert_after", Target: "B", Content: "X"},
			want:       "A\nB\nX\n",
			wantStatus: AppliedInsertAfter,
		},
		{
			name:  "insert after first occurrence",
			skill: "x\nx\n", edit: Edit{Op: "insert_after", Target: "x", Content: "y"},
			want:       "x\n\ny\nx\n",
			wantStatus: AppliedInsertAfter,
		},
		{
			name:  "insert after missing target falls back to append",
			skill: plain, edit: Edit{Op: "insert_after", Target: "Rule three.", Content: "X"},
			want:       plain + "\nX\n",
			wantStatus: AppliedInsertAfterFallbackAppend,
		},
		{
			name:  "insert after empty target falls back before region",
			skill: slow, edit: Edit{Op: "insert_after", Content: "X"},
			want:       "# Skill\n\nRule one.\n\nX\n\n" + SlowStart + "\nSlow rule.\n" + SlowEnd + "\n",
			wantStatus: AppliedInsertAfterFallbackBeforeProt,
		},
		{
			name:  "insert after protected target",
			skill: slow, edit: Edit{Op: "insert_after", Target: "Slow rule.", Content: "X"},
			want:       slow,
			wantStatus: SkippedProtectedRegion,
		},
		// replace
		{
			name:  "replace",
			skill: plain, edit: Edit{Op: "replace", Target: "Rule two.", Content: "Rule 2."},
			want:       "# Skill\n\nRule one.\nRule 2.\n",
			wantStatus: AppliedReplace,
		},
		{
			name:  "replace first occurrence only",
			skill: "x x x", edit: Edit{Op: "replace", Target: "x", Content: "y"},
			want:       "y x x",
			wantStatus: AppliedReplace,
		},
		{
			name:  "replace target verbatim, not stripped",
			skill: plain, edit: Edit{Op: "replace", Target: " Rule two.", Content: "Z"},
			want:       plain,
			wantStatus: SkippedReplaceTargetNotFound,
		},
		{
			name:  "replace with empty content removes",
			skill: plain, edit: Edit{Op: "replace", Target: "Rule two.\n"},
			want:       "# Skill\n\nRule one.\n",
			wantStatus: AppliedReplace,
		},
		{
			name:  "replace missing target",
			skill: plain, edit: Edit{Op: "replace", Content: "X"},
			want:       plain,
			wantStatus: SkippedReplaceMissingTarget,
		},
		{
			name:  "replace is case-sensitive",
			skill: plain, edit: Edit{Op: "replace", Target: "rule two.", Content: "X"},
			want:       plain,
			wantStatus: SkippedReplaceTargetNotFound,
		},
		{
			name:  "replace protected target",
			skill: slow, edit: Edit{Op: "replace", Target: "Slow rule.", Content: "X"},
			want:       slow,
			wantStatus: SkippedProtectedRegion,
		},
		{
			name:  "replace whose first occurrence is outside the region",
			skill: "Slow rule.\n" + slow, edit: Edit{Op: "replace", Target: "Slow rule.", Content: "X"},
			want:       "X\n" + slow,
			wantStatus: AppliedReplace,
		},
		{
			name:  "only the first occurrence decides protection",
			skill: SlowStart + "\nSlow rule.\n" + SlowEnd + "\nSlow rule.\n",
			edit:  Edit{Op: "replace", Target: "Slow rule.", Content: "X"},
			want:  SlowStart + "\nSlow rule.\n" + SlowEnd + "\nSlow rule.\n", wantStatus: SkippedProtectedRegion,
		},
		{
			name:  "target at the start marker is protected",
			skill: slow, edit: Edit{Op: "delete", Target: SlowStart},
			want: slow, wantStatus: SkippedProtectedRegion,
		},
		{
			name:  "target at the end marker is protected",
			skill: slow, edit: Edit{Op: "replace", Target: SlowEnd + "\n", Content: "X"},
			want: slow, wantStatus: SkippedProtectedRegion,
		},
		{
			name:  "target right after the region is not protected",
			skill: slow + "tail\n", edit: Edit{Op: "replace", Target: "\ntail", Content: "X"},
			want: strings.TrimSuffix(slow, "\n") + "X\n", wantStatus: AppliedReplace,
		},
		{
			name:  "appendix target is protected",
			skill: both, edit: Edit{Op: "delete", Target: "- Note."},
			want: both, wantStatus: SkippedProtectedRegion,
		},
		{
			name:  "start marker without end protects nothing",
			skill: "A\n" + SlowStart + "\nB\n", edit: Edit{Op: "replace", Target: "B", Content: "C"},
			want: "A\n" + SlowStart + "\nC\n", wantStatus: AppliedReplace,
		},
		{
			name:  "end before start protects nothing",
			skill: SlowEnd + "\nB\n" + SlowStart + "\n", edit: Edit{Op: "replace", Target: "B", Content: "C"},
			want: SlowEnd + "\nC\n" + SlowStart + "\n", wantStatus: AppliedReplace,
		},
		// delete
		{
			name:  "delete",
			skill: plain, edit: Edit{Op: "delete", Target: "Rule one.\n"},
			want: "# Skill\n\nRule two.\n", wantStatus: AppliedDelete,
		},
		{
			name:  "delete leaves whitespace",
			skill: plain, edit: Edit{Op: "delete", Target: "Rule one."},
			want: "# Skill\n\n\nRule two.\n", wantStatus: AppliedDelete,
		},
		{
			name:  "delete missing target",
			skill: plain, edit: Edit{Op: "delete"},
			want: plain, wantStatus: SkippedDeleteMissingTarget,
		},
		{
			name:  "delete target not found",
			skill: plain, edit: Edit{Op: "delete", Target: "Rule three."},
			want: plain, wantStatus: SkippedDeleteTargetNotFound,
		},
		// op names
		{
			name:  "unknown op",
			skill: plain, edit: Edit{Op: "frobnicate", Content: "X"},
			want: plain, wantStatus: SkippedUnknownOp, wantOp: "frobnicate",
		},
		{
			name:  "upper-case op is unknown without normalisation",
			skill: plain, edit: Edit{Op: "ADD", Content: "X"},
			want: plain, wantStatus: SkippedUnknownOp, wantOp: "ADD",
		},
		{
			name:  "synonym is unknown without normalisation",
			skill: plain, edit: Edit{Op: "add", Content: "X"},
			want: plain, wantStatus: SkippedUnknownOp, wantOp: "add",
		},
		{
			name:  "empty op",
			skill: plain, edit: Edit{Content: "X"}, normalize: true,
			want: plain, wantStatus: SkippedUnknownOp, wantOp: "",
		},
		{
			name:  "normalised ADD",
			skill: plain, edit: Edit{Op: "ADD", Content: "X"}, normalize: true,
			want: plain + "\nX\n", wantStatus: AppliedAppend, wantOp: "append", wantFrom: "ADD",
		},
		{
			name:  "normalised Insert-After",
			skill: plain, edit: Edit{Op: " Insert-After ", Target: "Rule one.", Content: "X"}, normalize: true,
			want: "# Skill\n\nRule one.\n\nX\nRule two.\n", wantStatus: AppliedInsertAfter, wantOp: "insert_after", wantFrom: " Insert-After ",
		},
		{
			name:  "normalised update",
			skill: plain, edit: Edit{Op: "update", Target: "Rule two.", Content: "Y"}, normalize: true,
			want: "# Skill\n\nRule one.\nY\n", wantStatus: AppliedReplace, wantOp: "replace", wantFrom: "update",
		},
		{
			name:  "normalised remove",
			skill: plain, edit: Edit{Op: "Remove", Target: "Rule two.\n"}, normalize: true,
			want: "# Skill\n\nRule one.\n", wantStatus: AppliedDelete, wantOp: "delete", wantFrom: "Remove",
		},
		{
			name:  "canonical op is not reported as normalised",
			skill: plain, edit: Edit{Op: "append", Content: "X"}, normalize: true,
			want: plain + "\nX\n", wantStatus: AppliedAppend, wantOp: "append",
		},
		{
			name:  "unknown op still unknown with normalisation",
			skill: plain, edit: Edit{Op: "Frobnicate", Content: "X"}, normalize: true,
			want: plain, wantStatus: SkippedUnknownOp, wantOp: "Frobnicate",
		},
		{
			name:  "protected check comes before the op",
			skill: slow, edit: Edit{Op: "frobnicate", Target: "Slow rule."},
			want: slow, wantStatus: SkippedProtectedRegion, wantOp: "frobnicate",
		},
		{
			name:  "append with protected target",
			skill: slow, edit: Edit{Op: "append", Target: "Slow rule.", Content: "X"},
			want: slow, wantStatus: SkippedProtectedRegion,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, reports := Apply(tt.skill, []Edit{tt.edit}, ApplyOptions{NormalizeOps: tt.normalize})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Apply(%q, %+v) text mismatch (-want +got):\n%s", tt.skill, tt.edit, diff)
			}
			if len(reports) != 1 {
				t.Fatalf("Apply returned %d report rows, want 1", len(reports))
			}
			r := reports[0]
			wantOp := tt.wantOp
			if wantOp == "" {
				wantOp = tt.edit.Op // not normalised
			}
			if r.Status != tt.wantStatus || r.Op != wantOp || r.NormalizedFrom != tt.wantFrom {
				t.Errorf("Apply(%+v) report = {Op: %q, NormalizedFrom: %q, Status: %s}, want {%q, %q, %s}",
					tt.edit, r.Op, r.NormalizedFrom, r.Status, wantOp, tt.wantFrom, tt.wantStatus)
			}
		})
	}
}

func TestApplySequentialAndReport(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 250)
	edits := []Edit{
		{Op: "append", Content: "Alpha rule."},
		{Op: "replace", Target: "Alpha", Content: "Beta"}, // sees the append
		{Op: "delete", Target: "Alpha"},                   // already replaced
		{Op: "insert_after", Target: long, Content: long + "  "},
	}
	got, reports := Apply(plain, edits, ApplyOptions{})
	want := plain + "\nBeta rule.\n" + "\n" + long + "\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Apply text mismatch (-want +got):\n%s", diff)
	}
	short := strings.Repeat("é", 200)
	wantReports := []Report{
		{Index: 0, Op: "append", ContentPreview: "Alpha rule.", Status: AppliedAppend},
		{Index: 1, Op: "replace", Target: "Alpha", ContentPreview: "Beta", Status: AppliedReplace},
		{Index: 2, Op: "delete", Target: "Alpha", Status: SkippedDeleteTargetNotFound},
		{Index: 3, Op: "insert_after", Target: short, ContentPreview: short, Status: AppliedInsertAfterFallbackAppend},
	}
	if diff := cmp.Diff(wantReports, reports); diff != "" {
		t.Errorf("Apply reports mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Summary{Applied: 3, Skipped: 1}, Summarize(reports)); diff != "" {
		t.Errorf("Summarize mismatch (-want +got):\n%s", diff)
	}
	if got := Summarize([]Report{{Status: StatusError}}); got.Errors != 1 {
		t.Errorf("Summarize(error row).Errors = %d, want 1", got.Errors)
	}
}

func TestApplyNoEdits(t *testing.T) {
	t.Parallel()
	got, reports := Apply(plain, nil, ApplyOptions{NormalizeOps: true})
	if got != plain || len(reports) != 0 {
		t.Errorf("Apply(plain, nil) = %q, %v; want the skill unchanged and no rows", got, reports)
	}
}

func TestNormalizeOp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in     string
		want   string
		wantOK bool
	}{
		{"append", OpAppend, true}, {"ADD", OpAppend, true}, {"Insert", OpAppend, true},
		{"append_rule", OpAppend, true}, {"append rule", OpAppend, true}, {"new", OpAppend, true},
		{"insert_after", OpInsertAfter, true}, {"INSERT-AFTER", OpInsertAfter, true}, {"after", OpInsertAfter, true},
		{"replace", OpReplace, true}, {"Update", OpReplace, true}, {"modify", OpReplace, true},
		{"edit", OpReplace, true}, {"rewrite", OpReplace, true},
		{"delete", OpDelete, true}, {"remove", OpDelete, true}, {"DROP", OpDelete, true},
		{"", "", false}, {"merge", "", false}, {"insert_before", "", false},
	}
	for _, tt := range tests {
		got, ok := NormalizeOp(tt.in)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("NormalizeOp(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

// benchSkill returns a skill of about 4 KB with a slow-update block.
func benchSkill() string {
	var b strings.Builder
	b.WriteString("# Skill\n\n")
	for i := 0; b.Len() < 4040; i++ {
		b.WriteString("- Rule ")
		b.WriteString(strings.Repeat("x", i%40))
		b.WriteString(": always verify the answer against the context before replying.\n")
	}
	return InjectSlowPlaceholder(b.String())
}

func BenchmarkApply(b *testing.B) {
	s := benchSkill()
	edits := []Edit{
		{Op: "append", Content: "New rule one."},
		{Op: "insert_after", Target: "- Rule xxx:", Content: "Inserted rule."},
		{Op: "replace", Target: "- Rule xxxxx:", Content: "- Replaced rule:"},
		{Op: "delete", Target: "- Rule xxxxxxx: always verify the answer against the context before replying.\n"},
		{Op: "replace", Target: "not in the skill", Content: "X"},
		{Op: "append", Content: "New rule two."},
		{Op: "insert_after", Target: "- Rule xxxxxxxxxx", Content: "Another."},
		{Op: "Update", Target: "- Rule xxxxxxxxxxxx:", Content: "- Updated:"},
	}
	if len(s) < 4096 || len(s) > 4300 {
		b.Fatalf("bench skill is %d bytes, want about 4 KB", len(s))
	}
	opts := ApplyOptions{NormalizeOps: true}
	b.ReportAllocs()
	for b.Loop() {
		Apply(s, edits, opts)
	}
}

func BenchmarkHash(b *testing.B) {
	s := benchSkill()
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		Hash(s)
	}
}
