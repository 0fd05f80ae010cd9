package coordinator

import (
	"cmp"
	"fmt"
	"io"
	"os"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/config"
	"github.com/skillfleet/skillfleet/pkg/pricing"
	"github.com/skillfleet/skillfleet/pkg/usage"
)

// EvalItems are the items an evaluation of split scores each skill on:
// the selection split is cut to sel_env_num and the test split to
// test_env_num, as the trainer's own measurements are.
func EvalItems(splits *bench.Splits, split string, selEnvNum, testEnvNum int) ([]bench.Item, error) {
	items, err := splits.Get(split)
	if err != nil {
		return nil, err
	}
	limit := 0
	switch split {
	case bench.SplitVal:
		limit = selEnvNum
	case bench.SplitTest:
		limit = testEnvNum
	}
	if limit > 0 && limit < len(items) {
		items = items[:limit]
	}
	return items, nil
}

// WriteEvalEstimate writes to w the calls, tokens and dollars the
// evaluation e of a run of cfg would spend, and makes no call: the items
// are loaded (a generated world in a temporary directory), counted and
// measured.
func WriteEvalEstimate(w io.Writer, cfg *config.Config, prices *pricing.Table, e Eval) error {
	tmp, err := os.MkdirTemp("", "skillfleet-estimate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	splits, err := LoadSplits(cfg, tmp)
	if err != nil {
		return err
	}
	s, err := FromConfig(cfg, "estimate", tmp)
	if err != nil {
		return configErr(err)
	}
	split, names, skills := e.Split, e.Names, e.Skills
	if e.WithBaselines {
		names = append([]string{"no_skill", "seed_skill"}, names...)
		skills = append([]string{"", s.SkillInit}, skills...)
	}
	items, err := EvalItems(splits, split, s.SelEnvNum, s.TestEnvNum)
	if err != nil {
		return configErr(fmt.Errorf("eval: --split: %w", err))
	}
	itemTok := int64(0)
	for _, it := range items {
		itemTok += int64(len(it.Raw))
	}
	itemTok = itemTok/int64(max(len(items), 1))/4 + 1
	maxOut := int64(cmp.Or(int(s.Target.GetMaxTokens()), 4096))
	model := s.Target.GetModel()
	fmt.Fprintf(w, "estimate for an evaluation of %s: %s on %s, split %s (%d items) × %d skills\n\n",
		cfg.File, cfg.Env.Name, model, split, len(items), len(skills))
	var calls, in int64
	var usdLo, usdHi float64
	priced := true
	for i, text := range skills {
		n := int64(len(items))
		perCall := int64(len(text)/4+1) + itemTok + 150
		fmt.Fprintf(w, "  %-12s %6d calls  %s input tokens  %s–%s output tokens\n", names[i], n,
			usage.FormatCount(n*perCall), usage.FormatCount(n*5), usage.FormatCount(n*maxOut))
		calls += n
		in += n * perCall
		lo, err1 := prices.Cost(model, n*perCall, 0, n*5)
		hi, err2 := prices.Cost(model, n*perCall, 0, n*maxOut)
		if err1 != nil || err2 != nil {
			priced = false
		}
		usdLo += lo
		usdHi += hi
	}
	fmt.Fprintf(w, "  %-12s %6d calls  %s input tokens\n\n", "total", calls, usage.FormatCount(in))
	if priced {
		fmt.Fprintf(w, "cost: $%.2f – $%.2f (short replies to replies at the output cap; prices of %s as of %s)\n", usdLo, usdHi, prices.Source(), prices.AsOf())
	} else {
		fmt.Fprintf(w, "cost: not priced (%s is not in the price table; give one with --prices)\n", model)
	}
	fmt.Fprintln(w, "tokens: about four characters a token; items and skills measured; the rollout cache may make some calls free")
	return nil
}
