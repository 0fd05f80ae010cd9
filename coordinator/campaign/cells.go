package campaign

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync/atomic"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/coordinator/trainer"
	"github.com/skillfleet/skillfleet/pkg/config"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
	"github.com/skillfleet/skillfleet/pkg/telemetry"
)

// Cells starts a campaign's runs ([Deps.Run]) through [coordinator.Start],
// each with its own coordinator on the campaign's fleet, all served on the
// process's one gRPC endpoint (Base.Endpoint). A cell's run logs
// at info level, and writes its progress and its results, to the cell's
// log.
type Cells struct {
	// Base is every run's configuration: how it reaches the fleet (NATS,
	// the gRPC endpoint the runs share), the shared store and the prices.
	// Each run sets its own config, dir, weight, logger, progress and stop
	// rule; it starts no workers of its own. Without Base.Endpoint each
	// run listens on its own loopback port.
	Base coordinator.Config
	// Deps are what each run is given, made with the run's logger.
	Deps func(*slog.Logger) coordinator.Deps
	// Sets override keys of every cell's config, after the cell's own.
	Sets []string
}

// Run runs one run of a cell. A run dir another coordinator holds is
// [ErrBusy].
func (c *Cells) Run(ctx context.Context, r CellRun) error {
	log := slog.New(telemetry.NewLogHandler(slog.NewTextHandler(r.Log, &slog.HandlerOptions{Level: slog.LevelInfo})))
	cfg, err := coordinator.LoadConfig(r.Config, append(append([]string(nil), r.Cell.Sets...), c.Sets...))
	if err != nil {
		return err
	}
	for _, w := range cfg.Warnings {
		log.Warn("config", "warning", w.String())
	}
	rc := c.Base
	rc.Run, rc.Dir, rc.Weight, rc.Logger = cfg, r.Dir, r.Cell.Weight, log
	rc.Workers, rc.Concurrency = 0, 0
	rc.Progress = coordinator.NewProgress(r.Log, false)
	if r.Eval != nil {
		text, err := skillpkg.ReadInit(r.Eval.Skill, skillpkg.Limits{})
		if err != nil {
			return fmt.Errorf("eval: skill: %w", err)
		}
		rc.Eval = &coordinator.Eval{Split: r.Eval.Split, Names: []string{"skill"}, Skills: []string{string(text)}, WithBaselines: r.Eval.Baseline}
	} else {
		// A role whose credentials are refused fails the cell at the
		// next phase boundary, before the campaign's own rules.
		models := map[string]roleModel{}
		for _, role := range []string{config.RoleOptimizer, config.RoleTarget} {
			m := cfg.Model.Role(role)
			models[role] = roleModel{Model: m.Model, BaseURL: safeURL(m.BaseURL), KeyEnv: m.APIKeyEnv}
		}
		var acct atomic.Pointer[trainer.Accounting]
		rc.Stop = func() error {
			if a := acct.Load(); a != nil {
				rows, _ := a.Report()["rows"].([]trainer.Row)
				if err := credentialsRefused(rows, models); err != nil {
					return err
				}
			}
			if r.Stop != nil {
				return r.Stop()
			}
			return nil
		}
		rc.OnStart = func(run *coordinator.Run) error {
			acct.Store(run.Trainer().Accounting())
			r.Started(run.Trainer().Accounting())
			fmt.Fprintf(r.Log, "coordinator listening on %s\n", run.Hub().Addr())
			return run.WriteStart(r.Log)
		}
	}
	run, err := coordinator.Start(ctx, rc, c.Deps(log))
	if errors.Is(err, coordinator.ErrLocked) {
		return fmt.Errorf("%w: %w", ErrBusy, err)
	}
	if err != nil {
		return err
	}
	res, err := run.Wait()
	if err != nil {
		return err
	}
	return res.WriteText(r.Log, run.Dir())
}

// safeURL is u without its credentials and query, for messages.
func safeURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || u == "" {
		return ""
	}
	p.User, p.RawQuery, p.Fragment = nil, "", ""
	return p.String()
}
