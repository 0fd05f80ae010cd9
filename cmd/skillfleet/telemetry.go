package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/skillfleet/skillfleet/pkg/telemetry"
)

// keyVars are the environment variables whose values are redacted from
// traced content.
var keyVars = []string{"OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", "ANTHROPIC_API_KEY"}

// telemetryHook lets in-process tests add an in-memory span exporter and
// metric reader; nil in the binary.
var telemetryHook func(*telemetry.Options)

// traceLogger is a logger over h whose records written with a context
// that carries a span (the ...Context methods inside a traced stage or
// task) get trace_id and span_id, so a log line leads to its trace.
func traceLogger(h slog.Handler) *slog.Logger {
	return slog.New(telemetry.NewLogHandler(h))
}

// setupTelemetry starts tracing (exported only when OTEL_EXPORTER_OTLP_*
// is set) and, with metricsAddr, a Prometheus endpoint.
func setupTelemetry(ctx context.Context, service, instance, metricsAddr string, traceContent bool, log *slog.Logger, opts ...func(*telemetry.Options)) (*telemetry.Telemetry, func(), error) {
	var secrets []string
	for _, v := range keyVars {
		if s := os.Getenv(v); s != "" {
			secrets = append(secrets, s)
		}
	}
	o := telemetry.Options{
		ServiceName: service, ServiceVersion: build().Version, InstanceID: instance, TraceContent: traceContent,
		Secrets: secrets, MetricsAddr: metricsAddr, SetGlobal: true, Logger: log,
	}
	for _, f := range opts {
		f(&o)
	}
	if telemetryHook != nil {
		telemetryHook(&o)
	}
	tel, shutdown, err := telemetry.Setup(ctx, o)
	if err != nil {
		return nil, nil, err
	}
	if tel.Exporter() != "none" || tel.MetricsAddr() != "" {
		log.Info("telemetry", "traces", tel.Exporter(), "metrics_addr", tel.MetricsAddr())
	}
	return tel, func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = shutdown(sctx)
	}, nil
}
