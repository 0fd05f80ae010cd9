// Package plan holds SkillOpt's seeded sampling decisions as pure functions
// over item indices: which train items form each rollout batch, how a
// batch's results are cut into analyst minibatches, which items the epoch
// boundary samples. (The ratio split of a raw data set is
// pkg/bench.RatioSplit; LiveMath's answer-choice order, seeded by a batch's
// Seed, is pkg/bench/livemath's, applied where episodes run.)
//
// Every shuffle is CPython's random.Random(seed).shuffle (package pyrand),
// with the seeds of spec §10.1, so a plan here is the plan SkillOpt makes
// (Rule 1). Items are named by their index in the split's file order; the
// caller maps indices to items. Minibatches and samples take their input in
// item order, never completion order (fix B3).
package plan

import (
	"fmt"

	"github.com/skillfleet/skillfleet/internal/pyrand"
)

// FailureThreshold is the hard score below which a result counts as a
// failure (SkillOpt: hard falsy or < 1e-9).
const FailureThreshold = 1e-9

// Batch is one rollout batch of an epoch.
type Batch struct {
	// Index is b, the batch's 0-based position in the epoch:
	// Step*accumulation + Accum.
	Index int
	// Step is the 0-based step within the epoch; Accum the 0-based
	// accumulation slot within the step.
	Step, Accum int
	// Seed is the batch seed, seed + 1000*epoch + Index + 1. It seeds the
	// batch's minibatch shuffles and LiveMath's choice permutations.
	Seed int64
	// Items are train indices (file order) in rollout order.
	Items []int
	// Refilled is set when the epoch's slice was empty and the batch was
	// refilled from a fresh shuffle seeded with Seed.
	Refilled bool
}

// StepsPerEpoch returns ceil(n / (batchSize*accumulation)), SkillOpt's
// derived steps_per_epoch. It returns 0 when any argument is not positive.
func StepsPerEpoch(n, batchSize, accumulation int) int {
	if n <= 0 || batchSize <= 0 || accumulation <= 0 {
		return 0
	}
	per := batchSize * accumulation
	return (n + per - 1) / per
}

// EpochBatches returns the batches of epoch (1-based) over a train split of
// n items. The items are shuffled with seed + 1000*epoch and cut into
// consecutive slices of batchSize (the last may be short); batch b gets seed
// + 1000*epoch + b + 1. A slice past the end of the shuffled items (a tiny
// split with accumulation) is refilled with the first batchSize items of the
// split, in file order, shuffled with the batch's own seed.
//
// There are StepsPerEpoch(n, batchSize, accumulation) * accumulation
// batches, in order.
func EpochBatches(n, batchSize, accumulation int, seed int64, epoch int) ([]Batch, error) {
	switch {
	case n < 0:
		return nil, fmt.Errorf("train size %d is negative", n)
	case batchSize <= 0:
		return nil, fmt.Errorf("batch size %d is not positive", batchSize)
	case accumulation <= 0:
		return nil, fmt.Errorf("accumulation %d is not positive", accumulation)
	case epoch <= 0:
		return nil, fmt.Errorf("epoch %d is not positive (epochs are 1-based)", epoch)
	}
	epochSeed := seed + 1000*int64(epoch)
	order := pyrand.Perm(epochSeed, n)
	count := StepsPerEpoch(n, batchSize, accumulation) * accumulation
	batches := make([]Batch, count)
	for b := range batches {
		bt := Batch{
			Index: b,
			Step:  b / accumulation,
			Accum: b % accumulation,
			Seed:  epochSeed + int64(b) + 1,
		}
		lo, hi := b*batchSize, min((b+1)*batchSize, n)
		if lo < hi {
			bt.Items = order[lo:hi:hi]
		} else {
			fresh := pyrand.Perm(bt.Seed, n)
			bt.Items = fresh[:min(batchSize, n)]
			bt.Refilled = true
		}
		batches[b] = bt
	}
	return batches, nil
}

// Partition splits a batch's results, given by their hard scores in item
// order, into failure and success positions as SkillOpt's reflect does:
// failures are results with hard == 0 or hard < 1e-9; successes are
// results with hard != 0, or none when failureOnly is set.
//
// The two rules overlap: a hard score that is non-zero but below 1e-9
// (a tiny or negative value) is in both lists, as in SkillOpt. NaN is a
// success only (non-zero and not below the threshold).
func Partition(hard []float64, failureOnly bool) (failures, successes []int) {
	for i, h := range hard {
		if h == 0 || h < FailureThreshold {
			failures = append(failures, i)
		}
		if h != 0 && !failureOnly {
			successes = append(successes, i)
		}
	}
	return failures, successes
}

// Minibatches cuts a batch's failures and successes into analyst
// minibatches of at most size items: failures shuffled with batchSeed,
// successes with batchSeed + 1, each then cut into consecutive chunks.
// The inputs must be in item order (fix B3) and are not modified. It
// returns nil slices for empty inputs and panics if size is not positive.
func Minibatches[T any](failures, successes []T, batchSeed int64, size int) (fail, succ [][]T) {
	if size <= 0 {
		panic("plan: minibatch size must be positive")
	}
	return Chunk(Shuffled(failures, batchSeed), size), Chunk(Shuffled(successes, batchSeed+1), size)
}

// Shuffled returns a copy of items shuffled by random.Random(seed).shuffle.
func Shuffled[T any](items []T, seed int64) []T {
	out := make([]T, len(items))
	copy(out, items)
	pyrand.New(seed).Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// Chunk cuts items into consecutive slices of size (the last may be
// short). The chunks share items' backing array, capped so an append to
// one chunk cannot write into the next. It panics if size is not positive.
func Chunk[T any](items []T, size int) [][]T {
	if size <= 0 {
		panic("plan: chunk size must be positive")
	}
	if len(items) == 0 {
		return nil
	}
	out := make([][]T, 0, (len(items)+size-1)/size)
	for lo := 0; lo < len(items); lo += size {
		hi := min(lo+size, len(items))
		out = append(out, items[lo:hi:hi])
	}
	return out
}

// SlowSeed returns seed + 2000*epoch, the seed of the epoch boundary's
// train sample and top-up order (slow update and meta skill).
func SlowSeed(seed int64, epoch int) int64 {
	return seed + 2000*int64(epoch)
}

// SlowUpdateSample returns the train items the epoch boundary compares:
// the split shuffled with SlowSeed(seed, epoch), first count items (all of
// them when count >= n).
func SlowUpdateSample(n int, seed int64, epoch, count int) []int {
	order := pyrand.Perm(SlowSeed(seed, epoch), n)
	return order[:max(0, min(count, n))]
}

// TopUp is one candidate of the longitudinal top-up scan.
type TopUp struct {
	// Item is a train index.
	Item int
	// Seed is the item's batch seed, SlowSeed + idx + 1, where idx is the
	// candidate's 0-based position in the scan.
	Seed int64
}

// TopUpOrder returns the order in which the `changed` longitudinal policy
// scans for more pairs: the train split shuffled with SlowSeed(seed,
// epoch), as for the sample, without the items in seen.
func TopUpOrder(n int, seed int64, epoch int, seen []int) []TopUp {
	skip := make(map[int]bool, len(seen))
	for _, i := range seen {
		skip[i] = true
	}
	base := SlowSeed(seed, epoch)
	var out []TopUp
	for _, item := range pyrand.Perm(base, n) {
		if skip[item] {
			continue
		}
		out = append(out, TopUp{Item: item, Seed: base + int64(len(out)) + 1})
	}
	return out
}
