package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/pkg/pricing"
)

// BenchmarkLivePoll is what following a live run costs the process serving
// the page, per poll of a paper-preset-sized run (40 steps recorded):
// progress.json written by the run's ProgressFile, then the page's watch
// checking the run dir and rebuilding what changed.
//
//	progress: a wave moved (progress.json changed), nothing decided
//	decision: a decision was also recorded (events.jsonl grew), so the
//	          decisions part is rebuilt and marshalled too
//	idle:     nothing changed since the last poll
//
// At one poll every 3 s, a page costs (progress + decision/k)/3 per wall
// second when a decision lands every k-th poll.
func BenchmarkLivePoll(b *testing.B) {
	for _, mode := range []string{"progress", "decision", "idle"} {
		b.Run(mode, func(b *testing.B) {
			dir := b.TempDir()
			r := newFakeRun(b, dir, 40)
			for range 40 {
				r.step()
			}
			s := &Server{o: Options{Prices: pricing.Default(), Poll: time.Hour}}
			s.ctx, s.cancel = context.WithCancel(context.Background())
			defer s.cancel()
			w := s.runWatch(&target{name: "run", dir: dir})
			pf := NewProgressFile(dir, time.Hour)
			defer pf.Close()
			pf.SetSpend(func() any {
				return []ProgressRow{{Stage: "rollout", Role: "target", Model: "gpt-4o-mini", Tasks: 320, Calls: 320, Input: 400000, Output: 40000},
					{Stage: "merge", Role: "optimizer", Model: "gpt-4o-mini", Tasks: 40, Calls: 41, Retries: 1, Input: 20000, Output: 2000}}
			})
			note, _ := json.Marshal(map[string]any{"type": "note", "msg": "a decision"})
			ev, err := os.OpenFile(filepath.Join(dir, "events.jsonl"), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer ev.Close()
			pf.Update(Progress{Head: "epoch 1/1 step 40/40", Step: 40, Steps: 40, Stage: "gate", Total: 200})
			pf.flush()
			w.refresh()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if mode == "idle" {
					if w.refresh() {
						b.Fatal("an idle poll found a change")
					}
					continue
				}
				if mode == "decision" {
					if _, err := ev.Write(append(note, '\n')); err != nil {
						b.Fatal(err)
					}
				}
				pf.Update(Progress{Head: "epoch 1/1 step 40/40", Step: 40, Steps: 40, Stage: "gate", Done: i % 200, Total: 200})
				pf.flush()
				// Polls 3 s apart see distinct modification times;
				// back-to-back writes may not (coarse clock ticks).
				mt := time.Unix(1e9, int64(i))
				if err := os.Chtimes(filepath.Join(dir, ProgressFileName), mt, mt); err != nil {
					b.Fatal(err)
				}
				if !w.refresh() {
					b.Fatal("a poll after progress.json changed found nothing")
				}
			}
		})
	}
}

// BenchmarkRunRebuild is the view rebuild a decision brings on, per step
// landing in a live run that has already recorded steps steps: the new
// step's record and event read, the decisions part (curves, steps table,
// rejected-edit buffer, spend curve) rebuilt and marshalled, and the live
// part built and marshalled. "reload" is the same view built from scratch
// (LoadRun, as a fresh page or a restarted server does), for comparison.
func BenchmarkRunRebuild(b *testing.B) {
	for _, steps := range []int{40, 200} {
		for _, mode := range []string{"step", "reload"} {
			b.Run(fmt.Sprintf("%s/steps=%d", mode, steps), func(b *testing.B) {
				dir := b.TempDir()
				r := newFakeRun(b, dir, steps+b.N)
				for range steps {
					r.step()
				}
				s := &Server{o: Options{Prices: pricing.Default(), Poll: time.Hour}}
				s.ctx, s.cancel = context.WithCancel(context.Background())
				defer s.cancel()
				w := s.runWatch(&target{name: "run", dir: dir})
				w.refresh()
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if mode == "reload" {
						if _, err := LoadRun(dir, pricing.Default()); err != nil {
							b.Fatal(err)
						}
						continue
					}
					b.StopTimer()
					r.step()
					b.StartTimer()
					if !w.refresh() {
						b.Fatal("a poll after a step landed found nothing")
					}
				}
			})
		}
	}
}

// BenchmarkStepPanel is one step panel request's work: "built" reads the
// step's files, diffs the skills and marshals (a page's first look at a
// step); "cached" is the same panel asked for again with its files
// unchanged (another page, a reload): stats only.
func BenchmarkStepPanel(b *testing.B) {
	dir := b.TempDir()
	r := newFakeRun(b, dir, 40)
	r.skill = strings.Repeat("- a rule of the skill, with some words in it\n", 60)
	for range 40 {
		r.step()
	}
	for _, mode := range []string{"built", "cached"} {
		b.Run(mode, func(b *testing.B) {
			var c stepCache
			b.ReportAllocs()
			for i := range b.N {
				if mode == "built" {
					c = stepCache{}
				}
				if _, err := c.get(dir, 1+i%40); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
