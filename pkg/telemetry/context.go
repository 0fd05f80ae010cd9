package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
)

// Attrs are the skillfleet coordinates of the work a context belongs to.
// The coordinator sets Run, then Epoch and Step, then Stage; a worker sets
// them from the task it runs, with TaskID, Kind and Role. The model wrapper
// and the span helpers read them back. Campaign and Cell name the campaign
// cell the work is done for: set with [WithCell], they also travel as W3C
// baggage with the trace context, so that a worker's task and model-call
// spans carry them too.
type Attrs struct {
	Campaign string
	Cell     string
	Run      string
	Epoch    int
	Step     int
	Stage    string
	Role     string // target or optimizer
	TaskID   string
	Kind     string // task kind: rollout, reflect, merge, ...
}

type attrsKey struct{}

// WithAttrs returns ctx carrying a overlaid on the attrs ctx already carries:
// non-zero fields of a replace, zero fields keep the outer value.
func WithAttrs(ctx context.Context, a Attrs) context.Context {
	cur := AttrsFrom(ctx)
	if a.Campaign != "" {
		cur.Campaign = a.Campaign
	}
	if a.Cell != "" {
		cur.Cell = a.Cell
	}
	if a.Run != "" {
		cur.Run = a.Run
	}
	if a.Epoch != 0 {
		cur.Epoch = a.Epoch
	}
	if a.Step != 0 {
		cur.Step = a.Step
	}
	if a.Stage != "" {
		cur.Stage = a.Stage
	}
	if a.Role != "" {
		cur.Role = a.Role
	}
	if a.TaskID != "" {
		cur.TaskID = a.TaskID
	}
	if a.Kind != "" {
		cur.Kind = a.Kind
	}
	return context.WithValue(ctx, attrsKey{}, cur)
}

// AttrsFrom returns the attrs ctx carries (zero when none); Campaign and
// Cell, when not set in ctx itself, come from its baggage (a context
// extracted from a task's headers).
func AttrsFrom(ctx context.Context) Attrs {
	a, _ := ctx.Value(attrsKey{}).(Attrs)
	if a.Campaign == "" || a.Cell == "" {
		b := baggage.FromContext(ctx)
		if a.Campaign == "" {
			a.Campaign = b.Member(string(KeyCampaign)).Value()
		}
		if a.Cell == "" {
			a.Cell = b.Member(string(KeyCell)).Value()
		}
	}
	return a
}

// WithCell returns ctx marked as the work of a campaign's cell: its attrs
// and its baggage (which the task headers and gRPC metadata carry to the
// workers) name both. A name that baggage cannot carry stays in the attrs.
func WithCell(ctx context.Context, campaign, cell string) context.Context {
	ctx = WithAttrs(ctx, Attrs{Campaign: campaign, Cell: cell})
	b := baggage.FromContext(ctx)
	for _, m := range [][2]string{{string(KeyCampaign), campaign}, {string(KeyCell), cell}} {
		if m[1] == "" {
			continue
		}
		mem, err := baggage.NewMemberRaw(m[0], m[1])
		if err != nil {
			continue
		}
		if nb, err := b.SetMember(mem); err == nil {
			b = nb
		}
	}
	return baggage.ContextWithBaggage(ctx, b)
}

// KeyValues returns the set fields as span attributes. skillfleet.step is
// present whenever a run or stage is (step 0 is the baseline), and never
// negative: the trainer numbers the tasks of an epoch-level wave (the
// pair waves between epochs) with step −epoch, which is the epoch, not a
// step.
func (a Attrs) KeyValues() []attribute.KeyValue {
	var kv []attribute.KeyValue
	if a.Campaign != "" {
		kv = append(kv, KeyCampaign.String(a.Campaign))
	}
	if a.Cell != "" {
		kv = append(kv, KeyCell.String(a.Cell))
	}
	if a.Run != "" {
		kv = append(kv, KeyRun.String(a.Run))
	}
	epoch := a.Epoch
	if a.Step < 0 && epoch == 0 {
		epoch = -a.Step
	}
	if epoch != 0 {
		kv = append(kv, KeyEpoch.Int(epoch))
	}
	if a.Step > 0 || (a.Step == 0 && (a.Run != "" || a.Stage != "")) {
		kv = append(kv, KeyStep.Int(a.Step))
	}
	if a.Stage != "" {
		kv = append(kv, KeyStage.String(a.Stage))
	}
	if a.Role != "" {
		kv = append(kv, KeyRole.String(a.Role))
	}
	if a.TaskID != "" {
		kv = append(kv, KeyTaskID.String(a.TaskID))
	}
	if a.Kind != "" {
		kv = append(kv, KeyKind.String(a.Kind))
	}
	return kv
}
