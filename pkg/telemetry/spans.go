package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// StartSpan overlays a on the attrs ctx carries (see WithAttrs), starts a
// span named name with all of them as attributes, and returns a context
// carrying both. Use it for the run, epoch, step, stage and task spans:
//
//	ctx, span := telemetry.StartSpan(ctx, tr, telemetry.SpanStep, telemetry.Attrs{Epoch: e, Step: g})
//	defer telemetry.End(span, &err)
func StartSpan(ctx context.Context, tracer trace.Tracer, name string, a Attrs, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	ctx = WithAttrs(ctx, a)
	opts = append([]trace.SpanStartOption{trace.WithAttributes(AttrsFrom(ctx).KeyValues()...)}, opts...)
	return tracer.Start(ctx, name, opts...)
}

// StageSpanName is the name of a stage's span: "skillfleet.stage rollout".
func StageSpanName(stage string) string { return SpanStage + " " + stage }

// TaskSpanName is the name of a task's span: "skillfleet.task reflect".
func TaskSpanName(kind string) string { return SpanTask + " " + kind }

// End ends span, first marking it failed when *errp (errp may be nil) is a
// non-nil error. Only the error's kind goes on the span, never its text.
func End(span trace.Span, errp *error) {
	if errp != nil && *errp != nil {
		span.SetAttributes(KeyErrorType.String(ErrorType(*errp)))
		span.SetStatus(codes.Error, errorDescription(*errp))
	}
	span.End()
}
