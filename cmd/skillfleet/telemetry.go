package main

import (
	"context"
	"log/slog"

	"github.com/skillfleet/skillfleet/pkg/telemetry"
)

// telemetryHook lets in-process tests add an in-memory span exporter and
// metric reader; nil in the binary.
var telemetryHook func(*telemetry.Options)

// setupTelemetry starts tracing (exported only when OTEL_EXPORTER_OTLP_*
// is set) and, with metricsAddr, a Prometheus endpoint.
func setupTelemetry(ctx context.Context, service, instance, metricsAddr string, traceContent bool, log *slog.Logger, opts ...func(*telemetry.Options)) (*telemetry.Telemetry, func(), error) {
	o := telemetry.Options{
		ServiceName: service, ServiceVersion: build().Version, InstanceID: instance, TraceContent: traceContent,
		MetricsAddr: metricsAddr, SetGlobal: true, Logger: log,
	}
	for _, f := range opts {
		f(&o)
	}
	if telemetryHook != nil {
		telemetryHook(&o)
	}
	return telemetry.Start(ctx, o)
}
