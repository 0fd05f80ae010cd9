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

// setupTelemetry starts tracing (exported only when OTEL_EXPORTER_OTLP_*
// is set) and, with metricsAddr, a Prometheus endpoint.
func setupTelemetry(ctx context.Context, service, instance, metricsAddr string, traceContent bool, log *slog.Logger) (*telemetry.Telemetry, func(), error) {
	var secrets []string
	for _, v := range keyVars {
		if s := os.Getenv(v); s != "" {
			secrets = append(secrets, s)
		}
	}
	tel, shutdown, err := telemetry.Setup(ctx, telemetry.Options{
		ServiceName: service, ServiceVersion: version, InstanceID: instance, TraceContent: traceContent,
		Secrets: secrets, MetricsAddr: metricsAddr, SetGlobal: true, Logger: log,
	})
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
