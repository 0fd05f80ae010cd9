// Command mechanisms is the helper of scripts/mechanisms.sh, which checks
// that the training loop's mechanisms (gate, rejected-edit buffer,
// learning-rate budget) matter on the simulated benchmark.
//
//	mechanisms seed-skill -preset demo -seed 3 -out skill.md
//	mechanisms table DIR
//
// seed-skill writes the weak initial skill of a sim world, so that a run
// with --set env.seed=S starts from that world's seed skill. table reads
// DIR/<variant>-<seed>/summary.json for every run under DIR and prints one
// row per variant: mean best and final test score, mean tokens, then the
// per-seed values (best/final/tokens/accepts-rejects), variants in the
// order given by -variants.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: mechanisms seed-skill|table [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "seed-skill":
		err = seedSkill(os.Args[2:])
	case "table":
		err = table(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q (want seed-skill or table)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mechanisms:", err)
		os.Exit(1)
	}
}

func seedSkill(args []string) error {
	fs := flag.NewFlagSet("seed-skill", flag.ContinueOnError)
	preset := fs.String("preset", simbench.PresetDemo, "sim preset (demo or paper)")
	seed := fs.Int64("seed", 0, "world seed (env.seed)")
	out := fs.String("out", "", "file to write (default: stdout)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	s, err := simbench.SeedSkill(*preset, *seed)
	if err != nil {
		return err
	}
	if *out == "" {
		_, err = fmt.Print(s)
		return err
	}
	return os.WriteFile(*out, []byte(s), 0o644)
}

// summary is the part of a run's summary.json the table reads.
type summary struct {
	TestHard map[string]float64 `json:"test_hard"`
	Tokens   struct {
		Input  int64 `json:"input_tokens"`
		Output int64 `json:"output_tokens"`
	} `json:"tokens"`
	Accepts int `json:"accepts"`
	Rejects int `json:"rejects"`
	Skips   int `json:"skips"`
}

type run struct {
	seed string
	s    summary
}

func table(args []string) error {
	fs := flag.NewFlagSet("table", flag.ContinueOnError)
	variants := fs.String("variants", "defaults,no_gate,no_step_buffer,lr50", "variants, in table order")
	seeds := fs.String("seeds", "1,2,3,4,5", "seeds, in column order")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("table wants one directory")
	}
	dir := fs.Arg(0)
	seedList := strings.Split(*seeds, ",")
	type row struct {
		name string
		runs []run
	}
	var rows []row
	for _, v := range strings.Split(*variants, ",") {
		r := row{name: v}
		for _, seed := range seedList {
			b, err := os.ReadFile(filepath.Join(dir, v+"-"+seed, "summary.json"))
			if err != nil {
				fmt.Fprintf(os.Stderr, "mechanisms: %s seed %s: no summary (%v)\n", v, seed, err)
				continue
			}
			var s summary
			if err := json.Unmarshal(b, &s); err != nil {
				return fmt.Errorf("%s seed %s: %w", v, seed, err)
			}
			r.runs = append(r.runs, run{seed: seed, s: s})
		}
		rows = append(rows, r)
	}
	fmt.Printf("%-15s %4s %9s %9s %9s %7s %7s  %s\n", "variant", "runs", "best", "final", "tokens", "accept", "reject", "per seed: best/final/tokens(k)/accepts-rejects")
	for _, r := range rows {
		var best, final, tok, acc, rej float64
		var per []string
		for _, x := range r.runs {
			t := float64(x.s.Tokens.Input + x.s.Tokens.Output)
			best += x.s.TestHard["best"]
			final += x.s.TestHard["final"]
			tok += t
			acc += float64(x.s.Accepts)
			rej += float64(x.s.Rejects)
			per = append(per, fmt.Sprintf("s%s=%.3f/%.3f/%.0fk/%d-%d", x.seed, x.s.TestHard["best"], x.s.TestHard["final"], t/1000, x.s.Accepts, x.s.Rejects))
		}
		n := float64(len(r.runs))
		if n == 0 {
			fmt.Printf("%-15s %4d\n", r.name, 0)
			continue
		}
		fmt.Printf("%-15s %4d %9.3f %9.3f %8.0fk %7.1f %7.1f  %s\n", r.name, len(r.runs), best/n, final/n, tok/n/1000, acc/n, rej/n, strings.Join(per, " "))
	}
	return nil
}
