// Package runview shows a run this process starts while it runs: on a
// terminal, a status line with the run's spend below its plain lines; with
// the dashboard, progress.json in the run dir (the spend per stage × role
// × model included) and the dashboard serving the run and its fleet.
package runview

import (
	"cmp"
	"context"
	"io"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/coordinator/trainer"
	"github.com/skillfleet/skillfleet/internal/fleet"
	"github.com/skillfleet/skillfleet/internal/ui"
	"github.com/skillfleet/skillfleet/pkg/pricing"
	"github.com/skillfleet/skillfleet/pkg/store"
)

// View routes a run's progress to the terminal's status line and, with
// the dashboard, to progress.json.
type View struct {
	console   *ui.Console
	file      *ui.ProgressFile
	srv       *ui.Server
	listeners []func(ui.Progress)
}

// New writes the run's plain lines to stdout; terminal says stdout is one
// (then a status line follows the run below them).
func New(stdout io.Writer, terminal bool) *View {
	v := &View{console: ui.NewConsole(stdout, terminal)}
	if t := v.console.Terminal(); t != nil {
		v.listeners = append(v.listeners, t.Update)
	}
	return v
}

// Out is where the run's plain lines go ([coordinator.NewProgress]).
func (v *View) Out() io.Writer { return v.console }

// Options say how a run is shown.
type Options struct {
	// Prices price the spend (nil: the built-in table).
	Prices *pricing.Table
	// Dashboard, when its Addr is set, is served on the run dir with the
	// run's fleet and Prices; Announce gets its address.
	Dashboard ui.Options
	Announce  io.Writer
	// ProgressFile keeps progress.json in the run dir up to date without a
	// dashboard in this process (for one in another: skillfleet ui, or
	// the dashboard that launched the run).
	ProgressFile bool
	// Registry and Levels are the workers and shared rate limits the
	// dashboard's fleet page shows (see [fleet.Status]); both may be nil.
	Registry store.Registry
	Levels   fleet.BucketLevels
}

// Attach follows run r: its progress prog, its spend (the trainer's
// accounting), and, with the dashboard, serves it until Close.
func (v *View) Attach(ctx context.Context, r *coordinator.Run, prog *coordinator.Progress, o Options) error {
	prices := cmp.Or(o.Prices, pricing.Default())
	acct := r.Trainer().Accounting()
	if t := v.console.Terminal(); t != nil {
		t.SetSpend(func() (int64, *float64) {
			b := prices.Price(acct.PriceRows())
			tok := acct.Total().Tokens()
			if !b.Complete() {
				return tok, nil
			}
			return tok, &b.Total
		})
	}
	if o.Dashboard.Addr != "" || o.ProgressFile {
		v.file = ui.NewProgressFile(r.Dir(), 0)
		v.file.SetSpend(func() any { return progressRows(acct) })
		v.listeners = append(v.listeners, v.file.Update)
	}
	if o.Dashboard.Addr != "" {
		d := o.Dashboard
		d.Prices, d.Fleet = prices, fleet.Status(r.Hub(), o.Registry, o.Levels)
		srv, err := ui.ServeAnnounced(ctx, d, o.Announce, r.Dir())
		if err != nil {
			return err
		}
		v.srv = srv
	}
	prog.Listen(v.listen)
	return nil
}

// progressRows is the accounting as progress.json's spend rows.
func progressRows(acct *trainer.Accounting) []ui.ProgressRow {
	rows, _ := acct.Report()["rows"].([]trainer.Row)
	out := make([]ui.ProgressRow, len(rows))
	for i, r := range rows {
		out[i] = ui.NewProgressRow(r.Stage, r.Role, r.Model, r.Totals)
	}
	return out
}

func (v *View) listen(p ui.Progress) {
	for _, f := range v.listeners {
		f(p)
	}
}

// Close stops the dashboard, writes progress.json a last time and ends
// the status line.
func (v *View) Close() {
	if v.srv != nil {
		v.srv.Close()
	}
	if v.file != nil {
		_ = v.file.Close()
	}
	v.console.Close()
}
