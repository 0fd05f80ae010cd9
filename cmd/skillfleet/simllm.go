package main

import (
	"context"
	"fmt"
	"io"
	"os"

	simmodel "github.com/skillfleet/skillfleet/backends/sim"
)

func runSimLLM(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sim-llm", "sim-llm [--addr 127.0.0.1:8089] [flags]", stderr)
	addr := fs.String("addr", "127.0.0.1:8089", "listen address (loopback unless you say otherwise)")
	latency := fs.Duration("latency", 0, "fixed latency added to every reply")
	median := fs.Duration("latency-median", 0, "log-normal latency: median (overrides --latency)")
	p99 := fs.Duration("latency-p99", 0, "log-normal latency: 99th percentile (a heavy tail: e.g. 10x the median)")
	rpm := fs.Int("rpm", 0, "requests per minute before 429 + Retry-After (0 = no limit)")
	tpm := fs.Int("tpm", 0, "prompt tokens per minute before 429 + Retry-After (0 = no limit)")
	f500 := fs.Float64("fault-500", 0, "fraction of requests answered 500")
	fdrop := fs.Float64("fault-drop", 0, "fraction of requests whose connection is dropped")
	fstall := fs.Float64("fault-stall", 0, "fraction of requests that stall past the client's timeout")
	stallRate := fs.Float64("stall-rate", 0, "fraction of requests accepted and never answered until the client leaves (same as --fault-stall)")
	stallFor := fs.Duration("stall-for", 0, "longest a stalled request is held before the connection is closed (0 = 10m)")
	fmal := fs.Float64("fault-malformed", 0, "fraction of optimizer requests answered with non-JSON text")
	fseed := fs.Int64("fault-seed", 1, "seed of the fault draws")
	eps := fs.Float64("epsilon", 0, "target noise: chance an outcome flips (0 = default 0.03, <0 = none)")
	harm := fs.Float64("harmful-rate", 0, "chance an analyst proposal is harmful or irrelevant (0 = default 0.2, <0 = never)")
	repro := fs.Float64("repropose-rate", 0, "chance a rejected edit is proposed again (0 = default 0.3, <0 = never)")
	trajPad := fs.String("trajectory-pad", "0", "pad every sim benchmark target reply to this size (e.g. 50KB), so rollouts carry trajectories as large as a real agent's; decisions do not change")
	keyEnv := fs.String("api-key-env", "", "require the key held by this environment variable as a bearer token")
	if help, err := parse(fs, args); help || err != nil {
		return err
	}
	if *stallRate != 0 {
		if *fstall != 0 && *fstall != *stallRate {
			return fmt.Errorf("sim-llm: --stall-rate %v and --fault-stall %v disagree; give one", *stallRate, *fstall)
		}
		*fstall = *stallRate
	}
	for name, v := range map[string]float64{"--fault-500": *f500, "--fault-drop": *fdrop, "--stall-rate": *fstall, "--fault-malformed": *fmal} {
		if v < 0 || v > 1 {
			return fmt.Errorf("sim-llm: %s %v: want a fraction in [0, 1]", name, v)
		}
	}
	if *median > 0 && *p99 > 0 && *p99 < *median {
		return fmt.Errorf("sim-llm: --latency-p99 %v is below --latency-median %v", *p99, *median)
	}
	o := simmodel.ServerOptions{
		Latency: simmodel.Latency{Fixed: *latency, Median: *median, P99: *p99}, RPM: *rpm, TPM: *tpm,
		FaultRate500: *f500, FaultRateDrop: *fdrop, FaultRateStall: *fstall, FaultRateMalformed: *fmal, FaultSeed: *fseed, StallFor: *stallFor,
	}
	if *keyEnv != "" {
		o.APIKey = os.Getenv(*keyEnv)
	}
	padSize, err := simmodel.ParseSize(*trajPad)
	if err != nil {
		return fmt.Errorf("sim-llm: --trajectory-pad: %w", err)
	}
	m := simmodel.New(simmodel.Options{Epsilon: *eps, HarmfulRate: *harm, ReproposeRate: *repro, TrajectoryPad: padSize})
	bound, wait, err := simmodel.ListenAndServe(ctx, *addr, simmodel.NewServer(m, o))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "sim-llm (a deterministic test double, not a real model) listening on http://%s/v1\n", bound)
	return wait()
}
