package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillfleet/skillfleet/pkg/bench/livemath"
	"github.com/skillfleet/skillfleet/pkg/bench/score"
)

// fixtures mirrors testdata/plan.json, written by
// scripts/fixtures/plan_fixtures.py: SkillOpt's planning as the spec
// describes it, run on CPython 3.11.
type fixtures struct {
	EpochPlans struct {
		MaxN  int `json:"max_n"`
		Cases []struct {
			Seed         int64  `json:"seed"`
			BatchSize    int    `json:"batch_size"`
			Accumulation int    `json:"accumulation"`
			Epochs       []int  `json:"epochs"`
			Digests      string `json:"digests"`
		} `json:"cases"`
	} `json:"epoch_plans"`
	FullPlans []struct {
		Seed         int64  `json:"seed"`
		N            int    `json:"n"`
		BatchSize    int    `json:"batch_size"`
		Accumulation int    `json:"accumulation"`
		Epoch        int    `json:"epoch"`
		Plan         string `json:"plan"`
	} `json:"full_plans"`
	Minibatches struct {
		Cases []struct {
			BatchSeed int64  `json:"batch_seed"`
			Size      int    `json:"size"`
			Digests   string `json:"digests"`
		} `json:"cases"`
		Example struct {
			BatchSeed int64  `json:"batch_seed"`
			Size      int    `json:"size"`
			NFail     int    `json:"n_fail"`
			NSucc     int    `json:"n_succ"`
			Text      string `json:"text"`
		} `json:"example"`
	} `json:"minibatches"`
	SlowSamples struct {
		MaxN  int `json:"max_n"`
		Cases []struct {
			Seed          int64  `json:"seed"`
			Epoch         int    `json:"epoch"`
			Count         int    `json:"count"`
			SampleDigests string `json:"sample_digests"`
			TopupDigests  string `json:"topup_digests"`
		} `json:"cases"`
		Example struct {
			Seed   int64  `json:"seed"`
			Epoch  int    `json:"epoch"`
			N      int    `json:"n"`
			Count  int    `json:"count"`
			Sample string `json:"sample"`
		} `json:"example"`
	} `json:"slow_samples"`
	Choices []struct {
		BatchSeed int64  `json:"batch_seed"`
		ItemID    string `json:"item_id"`
		N         int    `json:"n"`
		Seed      string `json:"seed"`
		Perm      string `json:"perm"`
	} `json:"choices"`
}

func loadFixtures(t *testing.T) *fixtures {
	t.Helper()
	data, err := os.ReadFile("testdata/plan.json")
	if err != nil {
		t.Fatal(err)
	}
	var f fixtures
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	return &f
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:8]
}

func ints(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// renderPlan writes batches the way the fixture script does.
func renderPlan(bs []Batch) string {
	var b strings.Builder
	for _, bt := range bs {
		r := 0
		if bt.Refilled {
			r = 1
		}
		fmt.Fprintf(&b, "%d %d %d %s\n", bt.Index, bt.Seed, r, ints(bt.Items))
	}
	return b.String()
}

func mustBatches(t *testing.T, n, bs, acc int, seed int64, epoch int) []Batch {
	t.Helper()
	b, err := EpochBatches(n, bs, acc, seed, epoch)
	if err != nil {
		t.Fatalf("EpochBatches(%d, %d, %d, %d, %d): %v", n, bs, acc, seed, epoch, err)
	}
	return b
}

func TestEpochBatchesMatchesFixture(t *testing.T) {
	t.Parallel()
	f := loadFixtures(t)
	if len(f.EpochPlans.Cases) == 0 {
		t.Fatal("no epoch plan cases")
	}
	for _, c := range f.EpochPlans.Cases {
		t.Run(fmt.Sprintf("seed=%d/bs=%d/acc=%d", c.Seed, c.BatchSize, c.Accumulation), func(t *testing.T) {
			t.Parallel()
			want := strings.Fields(c.Digests)
			if len(want) != f.EpochPlans.MaxN {
				t.Fatalf("fixture has %d digests, want %d", len(want), f.EpochPlans.MaxN)
			}
			for n := 1; n <= f.EpochPlans.MaxN; n++ {
				var text strings.Builder
				for _, e := range c.Epochs {
					fmt.Fprintf(&text, "epoch %d\n", e)
					text.WriteString(renderPlan(mustBatches(t, n, c.BatchSize, c.Accumulation, c.Seed, e)))
				}
				if got := digest(text.String()); got != want[n-1] {
					t.Errorf("n=%d: plan digest = %s, want %s (regenerate the plan with scripts/fixtures/plan_fixtures.py to compare)", n, got, want[n-1])
				}
			}
		})
	}
}

func TestEpochBatchesFullPlans(t *testing.T) {
	t.Parallel()
	f := loadFixtures(t)
	for _, c := range f.FullPlans {
		got := renderPlan(mustBatches(t, c.N, c.BatchSize, c.Accumulation, c.Seed, c.Epoch))
		if diff := cmp.Diff(c.Plan, got); diff != "" {
			t.Errorf("EpochBatches(%d, %d, %d, %d, %d) mismatch (-want +got):\n%s", c.N, c.BatchSize, c.Accumulation, c.Seed, c.Epoch, diff)
		}
	}
}

func TestEpochBatchesShape(t *testing.T) {
	t.Parallel()
	// 35 items, batch 40, accumulation 2 (LiveMath with accumulation):
	// one step, the second batch refilled from its own seed.
	b := mustBatches(t, 35, 40, 2, 42, 1)
	if len(b) != 2 {
		t.Fatalf("got %d batches, want 2", len(b))
	}
	type shape struct {
		Index, Step, Accum int
		Seed               int64
		N                  int
		Refilled           bool
	}
	var got []shape
	for _, bt := range b {
		got = append(got, shape{bt.Index, bt.Step, bt.Accum, bt.Seed, len(bt.Items), bt.Refilled})
	}
	want := []shape{{0, 0, 0, 1043, 35, false}, {1, 0, 1, 1044, 35, true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("EpochBatches(35, 40, 2, 42, 1) shape mismatch (-want +got):\n%s", diff)
	}

	// 107 items, batch 40: 40/40/27, every item exactly once.
	b = mustBatches(t, 107, 40, 1, 42, 3)
	seen := map[int]int{}
	var sizes []int
	for _, bt := range b {
		sizes = append(sizes, len(bt.Items))
		for _, i := range bt.Items {
			seen[i]++
		}
	}
	if diff := cmp.Diff([]int{40, 40, 27}, sizes); diff != "" {
		t.Errorf("batch sizes mismatch (-want +got):\n%s", diff)
	}
	if len(seen) != 107 {
		t.Errorf("plan covers %d distinct items, want 107", len(seen))
	}

	// Appending to a batch must not write into the next one.
	b = mustBatches(t, 20, 8, 1, 0, 1)
	next := b[1].Items[0]
	_ = append(b[0].Items, -1)
	if b[1].Items[0] != next {
		t.Errorf("append to batch 0 overwrote batch 1")
	}
}

func TestEpochBatchesErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name              string
		n, bs, acc, epoch int
		wantErr           bool
		wantBatches       int
	}{
		{name: "empty split", n: 0, bs: 8, acc: 1, epoch: 1, wantBatches: 0},
		{name: "negative n", n: -1, bs: 8, acc: 1, epoch: 1, wantErr: true},
		{name: "zero batch", n: 10, bs: 0, acc: 1, epoch: 1, wantErr: true},
		{name: "zero accumulation", n: 10, bs: 8, acc: 0, epoch: 1, wantErr: true},
		{name: "epoch 0", n: 10, bs: 8, acc: 1, epoch: 0, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := EpochBatches(tt.n, tt.bs, tt.acc, 42, tt.epoch)
			if (err != nil) != tt.wantErr {
				t.Fatalf("EpochBatches(%d, %d, %d, 42, %d) error = %v, want error %v", tt.n, tt.bs, tt.acc, tt.epoch, err, tt.wantErr)
			}
			if len(b) != tt.wantBatches {
				t.Errorf("got %d batches, want %d", len(b), tt.wantBatches)
			}
		})
	}
}

func TestStepsPerEpoch(t *testing.T) {
	t.Parallel()
	// Spec §1.1 item 10: the shipped recipes with batch 40.
	tests := []struct{ n, bs, acc, want int }{
		{400, 40, 1, 10}, {35, 40, 1, 1}, {107, 40, 1, 3}, {50, 40, 1, 2},
		{80, 40, 1, 2}, {39, 40, 1, 1}, {400, 40, 2, 5}, {401, 40, 2, 6},
		{0, 40, 1, 0}, {10, 0, 1, 0}, {10, 8, 0, 0},
	}
	for _, tt := range tests {
		if got := StepsPerEpoch(tt.n, tt.bs, tt.acc); got != tt.want {
			t.Errorf("StepsPerEpoch(%d, %d, %d) = %d, want %d", tt.n, tt.bs, tt.acc, got, tt.want)
		}
	}
}

func renderMinibatches(fail, succ [][]int) string {
	join := func(xs [][]int) string {
		s := make([]string, len(xs))
		for i, x := range xs {
			s[i] = ints(x)
		}
		return strings.Join(s, " | ")
	}
	return "F " + join(fail) + "\nS " + join(succ) + "\n"
}

func idRange(base, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = base + i
	}
	return out
}

func TestMinibatchesMatchesFixture(t *testing.T) {
	t.Parallel()
	f := loadFixtures(t)
	for _, c := range f.Minibatches.Cases {
		want := strings.Fields(c.Digests)
		for nf := 0; nf <= 40; nf++ {
			fail, succ := Minibatches(idRange(1000, nf), idRange(2000, 40-nf), c.BatchSeed, c.Size)
			if got := digest(renderMinibatches(fail, succ)); got != want[nf] {
				t.Errorf("Minibatches(%d fail, %d succ, seed %d, size %d) digest = %s, want %s", nf, 40-nf, c.BatchSeed, c.Size, got, want[nf])
			}
		}
	}
	ex := f.Minibatches.Example
	fail, succ := Minibatches(idRange(1000, ex.NFail), idRange(2000, ex.NSucc), ex.BatchSeed, ex.Size)
	if diff := cmp.Diff(ex.Text, renderMinibatches(fail, succ)); diff != "" {
		t.Errorf("Minibatches example mismatch (-want +got):\n%s", diff)
	}
}

func TestMinibatchesGenericAndPure(t *testing.T) {
	t.Parallel()
	failures := []string{"a", "b", "c"}
	fail, succ := Minibatches(failures, nil, 7, 2)
	if succ != nil {
		t.Errorf("successes = %v, want nil", succ)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, failures); diff != "" {
		t.Errorf("Minibatches modified its input (-want +got):\n%s", diff)
	}
	if len(fail) != 2 || len(fail[0]) != 2 || len(fail[1]) != 1 {
		t.Errorf("Minibatches chunks = %v, want sizes [2 1]", fail)
	}
	// Same ids, same seed: same minibatches, whatever the type.
	fi, _ := Minibatches([]int{0, 1, 2}, nil, 7, 2)
	for i, mb := range fail {
		for j, s := range mb {
			if want := failures[fi[i][j]]; s != want {
				t.Errorf("string minibatch [%d][%d] = %s, want %s", i, j, s, want)
			}
		}
	}
}

func TestPartition(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		hard        []float64
		failureOnly bool
		wantFail    []int
		wantSucc    []int
	}{
		{name: "binary", hard: []float64{1, 0, 1, 0, 0}, wantFail: []int{1, 3, 4}, wantSucc: []int{0, 2}},
		{name: "failure only", hard: []float64{1, 0, 1}, failureOnly: true, wantFail: []int{1}},
		{name: "partial credit is success", hard: []float64{0.5, 1e-9, 0.999}, wantSucc: []int{0, 1, 2}},
		{name: "below threshold is both", hard: []float64{1e-10, -1}, wantFail: []int{0, 1}, wantSucc: []int{0, 1}},
		{name: "empty", hard: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			gotFail, gotSucc := Partition(tt.hard, tt.failureOnly)
			if diff := cmp.Diff(tt.wantFail, gotFail); diff != "" {
				t.Errorf("Partition(%v) failures mismatch (-want +got):\n%s", tt.hard, diff)
			}
			if diff := cmp.Diff(tt.wantSucc, gotSucc); diff != "" {
				t.Errorf("Partition(%v) successes mismatch (-want +got):\n%s", tt.hard, diff)
			}
		})
	}
}

func TestSlowUpdateSampleAndTopUpMatchFixture(t *testing.T) {
	t.Parallel()
	f := loadFixtures(t)
	for _, c := range f.SlowSamples.Cases {
		wantSample := strings.Fields(c.SampleDigests)
		wantTopUp := strings.Fields(c.TopupDigests)
		for n := 1; n <= f.SlowSamples.MaxN; n++ {
			sample := SlowUpdateSample(n, c.Seed, c.Epoch, c.Count)
			if got := digest(ints(sample)); got != wantSample[n-1] {
				t.Errorf("SlowUpdateSample(%d, %d, %d, %d) digest = %s, want %s", n, c.Seed, c.Epoch, c.Count, got, wantSample[n-1])
			}
			var b strings.Builder
			for _, tu := range TopUpOrder(n, c.Seed, c.Epoch, sample) {
				fmt.Fprintf(&b, "%d %d\n", tu.Item, tu.Seed)
			}
			if got := digest(b.String()); got != wantTopUp[n-1] {
				t.Errorf("TopUpOrder(%d, %d, %d) digest = %s, want %s", n, c.Seed, c.Epoch, got, wantTopUp[n-1])
			}
		}
	}
	ex := f.SlowSamples.Example
	if diff := cmp.Diff(ex.Sample, ints(SlowUpdateSample(ex.N, ex.Seed, ex.Epoch, ex.Count))); diff != "" {
		t.Errorf("SlowUpdateSample example mismatch (-want +got):\n%s", diff)
	}
}

func TestSlowUpdateSampleBounds(t *testing.T) {
	t.Parallel()
	if got := SlowUpdateSample(5, 42, 2, 20); len(got) != 5 {
		t.Errorf("SlowUpdateSample(5, ..., 20) has %d items, want 5", len(got))
	}
	if got := SlowUpdateSample(5, 42, 2, -1); len(got) != 0 {
		t.Errorf("SlowUpdateSample(5, ..., -1) has %d items, want 0", len(got))
	}
	all := SlowUpdateSample(30, 42, 2, 30)
	top := TopUpOrder(30, 42, 2, all[:10])
	if len(top) != 20 {
		t.Fatalf("TopUpOrder has %d candidates, want 20", len(top))
	}
	for idx, tu := range top {
		if tu.Item != all[10+idx] || tu.Seed != SlowSeed(42, 2)+int64(idx)+1 {
			t.Errorf("TopUpOrder[%d] = %+v, want item %d seed %d", idx, tu, all[10+idx], SlowSeed(42, 2)+int64(idx)+1)
		}
	}
}

// LiveMath's per-batch choice order is applied where episodes run, by
// package livemath (pkg/ cannot import plan); the fixture's CPython cases
// are checked against it here, where the fixture lives.
func TestChoicesMatchFixture(t *testing.T) {
	t.Parallel()
	f := loadFixtures(t)
	if len(f.Choices) == 0 {
		t.Fatal("no choice cases")
	}
	for _, c := range f.Choices {
		seed := livemath.PermutationSeed(c.BatchSeed, c.ItemID)
		if got := strconv.FormatUint(seed, 10); got != c.Seed {
			t.Errorf("livemath.PermutationSeed(%d, %q) = %s, want %s", c.BatchSeed, c.ItemID, got, c.Seed)
		}
		// Choice i's text is i, so the order read back is the permutation.
		choices := make([]score.Choice, c.N)
		for i := range choices {
			choices[i] = score.Choice{Label: string(rune('A' + i)), Text: strconv.Itoa(i)}
		}
		out, _ := livemath.Permute(choices, choices[0], seed)
		perm := make([]int, len(out))
		for k, ch := range out {
			perm[k], _ = strconv.Atoi(ch.Text)
		}
		if got := ints(perm); got != c.Perm {
			t.Errorf("livemath.Permute of %d choices (batch seed %d, item %q) = %s, want %s", c.N, c.BatchSeed, c.ItemID, got, c.Perm)
		}
	}
}

func BenchmarkEpochBatches(b *testing.B) {
	for i := range b.N {
		if _, err := EpochBatches(400, 40, 1, 42, i%4+1); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMinibatches(b *testing.B) {
	f, s := idRange(0, 13), idRange(100, 27)
	for i := range b.N {
		Minibatches(f, s, int64(i), 8)
	}
}
