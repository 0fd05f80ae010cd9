package telemetry

import (
	"context"
	"os"
	"time"
)

// KeyEnvVars are the environment variables that hold model API keys:
// [Start] removes their values from traced content.
var KeyEnvVars = []string{"OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", "ANTHROPIC_API_KEY"}

// stopGrace bounds how long the stop function [Start] returns waits for
// spans to flush and the metrics endpoint to close.
const stopGrace = 5 * time.Second

// Start is [Setup] for a process: the values of the [KeyEnvVars] that
// are set join o.Secrets, the trace exporter and metrics address are
// logged to o.Logger when either is on, and stop shuts everything down
// within a few seconds, also after ctx has ended.
func Start(ctx context.Context, o Options) (tel *Telemetry, stop func(), err error) {
	for _, v := range KeyEnvVars {
		if s := os.Getenv(v); s != "" {
			o.Secrets = append(o.Secrets, s)
		}
	}
	tel, shutdown, err := Setup(ctx, o)
	if err != nil {
		return nil, nil, err
	}
	if o.Logger != nil && (tel.Exporter() != "none" || tel.MetricsAddr() != "") {
		o.Logger.Info("telemetry", "traces", tel.Exporter(), "metrics_addr", tel.MetricsAddr())
	}
	return tel, func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopGrace)
		defer cancel()
		_ = shutdown(sctx)
	}, nil
}
