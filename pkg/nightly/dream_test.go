package nightly

import (
	"strings"
	"testing"
)

func dreamTestTask(id, intent, split string) Task {
	return Task{ID: id, Intent: intent, Split: split, Origin: OriginReal, Outcome: "fail",
		Judge: Judge{Kind: JudgeRule, Checks: []Check{{Op: OpContains, Arg: "<answer>"}}}}
}

func TestDreamTasksAreTrainOnlyRephrasings(t *testing.T) {
	src := []Task{dreamTestTask("a", "What is the arXiv id of the paper \"Attention Is All You Need\"?", SplitTrain)}
	ds := DreamTasks(src, 3)
	if len(ds) != 3 {
		t.Fatalf("%d dream tasks, want 3", len(ds))
	}
	seen := map[string]bool{}
	for _, d := range ds {
		if d.Origin != OriginDream || d.Split != SplitTrain || d.DerivedFrom != "a" || !strings.HasPrefix(d.ID, "a~dream") {
			t.Fatalf("dream task %+v", d)
		}
		if !strings.Contains(d.Intent, src[0].Intent) || d.Intent == src[0].Intent || seen[d.Intent] {
			t.Fatalf("dream intent %q: want a new wording holding the request", d.Intent)
		}
		seen[d.Intent] = true
		if err := d.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	ds[0].Judge.Checks[0].Arg = "changed"
	if src[0].Judge.Checks[0].Arg != "<answer>" {
		t.Fatal("a dream task shares its source's checks")
	}
	// AssignSplits never puts one in val or test, whatever the hash says;
	// Validate refuses one marked so.
	all := append([]Task{}, ds...)
	for range 20 {
		all = append(all, ds...)
	}
	AssignSplits(all, 1, 0.9, 0.05)
	for _, d := range all {
		if d.Split != SplitTrain {
			t.Fatalf("AssignSplits put dream task %s in %s", d.ID, d.Split)
		}
	}
	bad := ds[0]
	bad.Split = SplitVal
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "train only") {
		t.Fatalf("Validate of a dream task in val: %v", err)
	}
	if DreamTasks(src, 0) != nil {
		t.Fatal("dream_factor 0 made tasks")
	}
}

func TestSimilarity(t *testing.T) {
	cases := []struct {
		a, b string
		want float64
	}{
		{"fix the flaky test", "Fix the FLAKY test!", 1},
		{"fix the flaky test", "write the release notes", 1.0 / 7}, // {fix, the, flaky, test} ∪ {write, the, release, notes}: "the" shared
		{"a b", "fix it", 0}, // no word of three letters
		{"", "anything here", 0},
	}
	for _, c := range cases {
		if got := Similarity(c.a, c.b); got != c.want {
			t.Errorf("Similarity(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestRecallBringsBackTheMostSimilarArchivedTasks(t *testing.T) {
	archive := []Task{
		dreamTestTask("old-arxiv-1", "What is the arXiv id of the paper BERT?", SplitTrain),
		dreamTestTask("old-cooking", "Suggest a recipe for dinner tonight", SplitTrain),
		dreamTestTask("old-arxiv-2", "What is the arXiv id of the paper Adam?", SplitVal),
		dreamTestTask("tonight-1", "What is the arXiv id of the paper LoRA?", SplitTrain),
		dreamTestTask("twin", "What is the arXiv id of the paper GANs?", SplitTrain),
		{ID: "dreamed", Intent: "What is the arXiv id of the paper ResNet?", Origin: OriginDream, Split: SplitTrain},
	}
	tonight := []Task{
		dreamTestTask("tonight-1", "What is the arXiv id of the paper LoRA?", SplitTrain),
		dreamTestTask("tonight-2", "What is the arXiv id of the paper Transformers?", SplitTrain),
		dreamTestTask("tonight-val", "What is the arXiv id of the paper GANs?", SplitVal),
	}
	got := Recall(tonight, archive, 5)
	var ids []string
	for _, r := range got {
		ids = append(ids, r.Task.DerivedFrom)
		if r.Task.Origin != OriginRecall || r.Task.Split != SplitTrain || r.Task.ID != "recall:"+r.Task.DerivedFrom {
			t.Fatalf("recalled %+v", r.Task)
		}
		if want := Similarity(r.Task.Intent, tonight[0].Intent); r.Similarity != want || r.Similarity <= 0 {
			t.Fatalf("%s: similarity %v, want %v", r.Task.ID, r.Similarity, want)
		}
	}
	// tonight-1 is tonight's own, twin has the words of a val task,
	// dreamed is no real task; the cooking task shares no word. The two
	// arXiv tasks tie: the newer first.
	if strings.Join(ids, ",") != "old-arxiv-2,old-arxiv-1" {
		t.Fatalf("recalled %v", ids)
	}
	if got := Recall(tonight, archive, 1); len(got) != 1 || got[0].Task.DerivedFrom != "old-arxiv-2" {
		t.Fatalf("recall_k 1: %+v", got)
	}
	if Recall(tonight, archive, 0) != nil {
		t.Fatal("recall_k 0 recalled tasks")
	}
	got[0].Task.Judge.Checks[0].Arg = "changed"
	if archive[2].Judge.Checks[0].Arg != "<answer>" {
		t.Fatal("a recalled task shares the archive's checks")
	}
}
