package trainer

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// The reflect and aggregate stages of a step run as a stream: each
// accumulation batch's analysts start as soon as its rollouts are in — SkillOpt's minibatches are cut from the batch's whole
// partition, so they need every rollout of the batch and no other — and
// each merge starts as soon as the patches it merges exist. The patches,
// their order, the merge groups and every payload are exactly those of the
// staged loop (all analysts, then each merge level), so the same calls are
// made and every decision is the same; only waiting is saved.

// pseq is an ordered sequence of patches whose elements become known over
// time, and whose end is known once no more can come.
type pseq struct {
	mu    sync.Mutex
	items [][]prompts.Item
	done  bool
	err   error
	wake  chan struct{}
}

func newPseq() *pseq { return &pseq{wake: make(chan struct{})} }

func (s *pseq) push(p []prompts.Item) {
	s.mu.Lock()
	s.items = append(s.items, p)
	close(s.wake)
	s.wake = make(chan struct{})
	s.mu.Unlock()
}

// end marks the sequence complete (err: it ended on an error).
func (s *pseq) end(err error) {
	s.mu.Lock()
	if !s.done {
		s.done, s.err = true, err
		close(s.wake)
		s.wake = make(chan struct{})
	}
	s.mu.Unlock()
}

// at waits until element i is known (ok) or the sequence ended without it.
func (s *pseq) at(ctx context.Context, i int) (_ []prompts.Item, ok bool, _ error) {
	for {
		s.mu.Lock()
		if i < len(s.items) {
			p := s.items[i]
			s.mu.Unlock()
			return p, true, nil
		}
		if s.done {
			err := s.err
			s.mu.Unlock()
			return nil, false, err
		}
		wake := s.wake
		s.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

// streamTree merges one side's patches level by level in groups of
// merge_batch_size until one patch remains, starting each merge as soon as
// its group is known.
func (t *Trainer) streamTree(ctx context.Context, g int, side string, in *pseq) ([]prompts.Item, error) {
	name := prompts.MergeFailure
	if side == "success" {
		name = prompts.MergeSuccess
	}
	for level := 1; ; level++ {
		first, ok, err := in.at(ctx, 0)
		if err != nil || !ok {
			return nil, err
		}
		if _, ok, err = in.at(ctx, 1); err != nil {
			return nil, err
		} else if !ok {
			return first, nil // one patch left
		}
		in = t.mergeLevel(ctx, g, name, level, in)
	}
}

// mergeLevel is one level of a merge tree over in: group gi holds in's
// elements gi*k … gi*k+k-1; a group of one passes through, every other
// group is merged by one call, started as soon as its members are known.
// The returned sequence holds the groups' outcomes in group order.
func (t *Trainer) mergeLevel(ctx context.Context, g int, name string, level int, in *pseq) *pseq {
	type slot struct {
		done  chan struct{}
		items []prompts.Item
		err   error
	}
	out := newPseq()
	k := t.s.MergeBatchSize
	var mu sync.Mutex
	var slots []*slot
	more := make(chan struct{}, 1) // a slot was added, or the groups ended
	ended := false
	add := func(sl *slot, last bool) {
		mu.Lock()
		if sl != nil {
			slots = append(slots, sl)
		}
		ended = ended || last
		mu.Unlock()
		select {
		case more <- struct{}{}:
		default:
		}
	}
	go func() { // groups, in order
		for gi := 0; ; gi++ {
			var grp [][]prompts.Item
			for j := range k {
				p, ok, err := in.at(ctx, gi*k+j)
				if err != nil {
					sl := &slot{done: make(chan struct{}), err: err}
					close(sl.done)
					add(sl, true)
					return
				}
				if !ok {
					break
				}
				grp = append(grp, p)
			}
			if len(grp) == 0 {
				add(nil, true)
				return
			}
			sl := &slot{done: make(chan struct{})}
			if len(grp) == 1 {
				sl.items = grp[0]
				close(sl.done)
			} else {
				go func() {
					sl.items, sl.err = t.mergeGroup(ctx, g, name, level, gi, grp)
					close(sl.done)
				}()
			}
			last := len(grp) < k
			add(sl, last)
			if last {
				return
			}
		}
	}()
	go func() { // outcomes, in group order
		for next := 0; ; {
			mu.Lock()
			var sl *slot
			if next < len(slots) {
				sl = slots[next]
			}
			fin := ended && next >= len(slots)
			mu.Unlock()
			if fin {
				out.end(nil)
				return
			}
			if sl == nil {
				<-more
				continue
			}
			<-sl.done
			if sl.err != nil {
				out.end(sl.err)
				return
			}
			out.push(sl.items)
			next++
		}
	}()
	return out
}

// mergeGroup merges one group of patches with one call; a failed or empty
// reply falls back to the group's items concatenated.
func (t *Trainer) mergeGroup(ctx context.Context, g int, name string, level, gi int, grp [][]prompts.Item) ([]prompts.Item, error) {
	res, err := t.optimize(ctx, []optCall{{Stage: "merge", Step: g, Name: name, Index: level*100 + gi, Mode: t.s.UpdateMode, Skill: t.st.Current,
		Payload: prompts.MergeInput{Kind: name, Mode: t.s.UpdateMode, Skill: t.st.Current, MetaSkill: t.metaSkillBlock(), Level: level, Patches: grp}}})
	if err != nil {
		return nil, err
	}
	var items []prompts.Item
	if r := res[0]; r.OK {
		var rep prompts.MergeReply
		if json.Unmarshal(r.JSON, &rep) == nil {
			items = rep.Items(t.s.UpdateMode)
		}
	}
	if items == nil {
		// Fallback: the group's items concatenated.
		for _, p := range grp {
			for _, it := range p {
				if it.MergeLevel == 0 {
					it.MergeLevel = level
				}
				items = append(items, it)
			}
		}
		return items, nil
	}
	for k := range items {
		items[k].MergeLevel = level
	}
	return items, nil
}

// reflectAndMerge runs a step's rollouts, analysts and the two merge trees
// as one stream and returns each batch's outcome (analyst outcomes in call
// order), each side's merged patch, and when the last analyst landed.
func (t *Trainer) reflectAndMerge(ctx context.Context, g int, current string, batches []plannedBatch) (outs []*batchOut, failMerged, succMerged []prompts.Item, reflected time.Time, err error) {
	brs := make([]*batchReflect, len(batches))
	errs := make([]error, len(batches))
	ready := make([]chan struct{}, len(batches))
	for i, b := range batches {
		ready[i] = make(chan struct{})
		go func() {
			defer close(ready[i])
			brs[i], errs[i] = t.startReflect(ctx, g, current, b)
		}()
	}
	// last is when the last analyst landed; each feed sets it as it ends,
	// and it is read only after both feeds have ended (feeds, below).
	var (
		mu    sync.Mutex
		last  time.Time
		feeds sync.WaitGroup
	)
	feed := func(side string, s *pseq) {
		defer feeds.Done()
		defer func() {
			mu.Lock()
			if now := t.now(); now.After(last) {
				last = now
			}
			mu.Unlock()
		}()
		for i := range batches {
			<-ready[i]
			if errs[i] != nil {
				s.end(errs[i])
				return
			}
			br := brs[i]
			for c, sd := range br.sides {
				if sd != side {
					continue
				}
				a, err := t.analystOutcome(ctx, g, br, c)
				if err != nil {
					s.end(err)
					return
				}
				if a.patch != nil {
					s.push(a.patch)
				}
			}
		}
		s.end(nil)
	}
	fail, succ := newPseq(), newPseq()
	feeds.Add(2)
	go feed(prompts.AnalystFailure, fail)
	go feed(prompts.AnalystSuccess, succ)
	err = parallel(
		func() (err error) { failMerged, err = t.streamTree(ctx, g, "failure", fail); return },
		func() (err error) { succMerged, err = t.streamTree(ctx, g, "success", succ); return },
	)
	for i := range batches {
		<-ready[i]
		if err == nil {
			err = errs[i]
		}
	}
	if err != nil {
		return nil, nil, nil, time.Time{}, err
	}
	outs = make([]*batchOut, len(batches))
	for i, br := range brs {
		br.collect()
		outs[i] = br.o
	}
	// Both trees consumed their sequence to its end, so both feeds are
	// past their last analyst.
	feeds.Wait()
	return outs, failMerged, succMerged, last, nil
}
