// Package telemetry sets up OpenTelemetry for skillfleet processes and
// holds the helpers every layer uses to trace and measure model calls:
//
//   - Setup builds a TracerProvider (OTLP export over gRPC or HTTP, only
//     when the standard OTEL_EXPORTER_OTLP_* variables ask for it), the W3C
//     trace-context propagator, and a MeterProvider whose Prometheus
//     exporter is served on its own registry at --metrics-addr.
//   - StartChat/EndChat and WrapModel follow the GenAI semantic
//     conventions for model-call spans and metrics (names.go lists every
//     name used).
//   - Meters are the skillfleet counters and gauges.
//   - WithAttrs/AttrsFrom carry run, step, stage, role and task id in a
//     context; StartSpan opens run/epoch/step/stage/task spans from them.
//   - LogHandler adds trace_id and span_id to slog records.
//
// Prompt and completion text are recorded only when Options.TraceContent
// is set, and then through a Redactor. Error text is never recorded on
// spans, only the error's kind.
package telemetry

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/skillfleet/skillfleet/pkg/llm"
)

// Options configure Setup.
type Options struct {
	// ServiceName is service.name ("skillfleet-coordinator",
	// "skillfleet-worker"); OTEL_SERVICE_NAME overrides it.
	ServiceName    string
	ServiceVersion string
	// InstanceID is service.instance.id (a worker's id), optional.
	InstanceID string
	// TraceContent records prompt and completion text on model-call spans
	// (--trace-content). Off by default.
	TraceContent bool
	// Secrets are exact values (API keys the process holds) removed from
	// traced content, on top of the key-shape patterns.
	Secrets []string
	// MetricsAddr serves Prometheus metrics at http://MetricsAddr/metrics
	// (--metrics-addr). A bare port (":9464" or "9464") binds 127.0.0.1;
	// give "0.0.0.0:9464" to listen on every interface. Empty: no endpoint.
	MetricsAddr string
	// MetricsTLS, when set, serves the metrics endpoint over HTTPS.
	MetricsTLS *tls.Config
	// SpanExporter, when set, receives every span synchronously, in
	// addition to any OTLP exporter (tests: tracetest.NewInMemoryExporter).
	SpanExporter sdktrace.SpanExporter
	// SpanProcessor, when set, is registered as well.
	SpanProcessor sdktrace.SpanProcessor
	// MetricReader, when set, reads the meter provider as well (tests:
	// sdkmetric.NewManualReader).
	MetricReader sdkmetric.Reader
	// SetGlobal installs the providers and propagator as the otel globals
	// and routes otel's internal errors to Logger. Only main should.
	SetGlobal bool
	// Logger reports export and metrics-server failures (default: discard).
	Logger *slog.Logger
}

// Telemetry is a process's OpenTelemetry setup.
type Telemetry struct {
	TracerProvider *sdktrace.TracerProvider
	MeterProvider  *sdkmetric.MeterProvider
	// Propagator is W3C TraceContext plus Baggage. Use it for NATS headers
	// (with queue.HeaderCarrier) and pass it to otelgrpc.WithPropagators.
	Propagator propagation.TextMapPropagator
	// Tracer is the tracer of ScopeName.
	Tracer trace.Tracer
	// Meters are the instruments, created once on MeterProvider.
	Meters *Meters
	// Redactor cleans traced content.
	Redactor *Redactor

	traceContent bool
	exporter     string
	metricsAddr  string
	metricsH     http.Handler
}

// Setup builds the providers Options ask for. Call shutdown before the
// process exits: it flushes spans and stops the metrics endpoint.
func Setup(ctx context.Context, o Options) (_ *Telemetry, shutdown func(context.Context) error, err error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var closers []func(context.Context) error
	shutdown = func(ctx context.Context) error {
		var errs error
		for i := len(closers) - 1; i >= 0; i-- {
			errs = errors.Join(errs, closers[i](ctx))
		}
		return errs
	}
	defer func() {
		if err != nil {
			_ = shutdown(ctx)
		}
	}()

	res, err := newResource(ctx, o)
	if err != nil {
		return nil, nil, err
	}

	// Traces.
	tpOpts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	exp, kind, err := otlpExporter(ctx)
	if err != nil {
		return nil, nil, err
	}
	if exp != nil {
		tpOpts = append(tpOpts, sdktrace.WithBatcher(exp))
	}
	if o.SpanExporter != nil {
		tpOpts = append(tpOpts, sdktrace.WithSyncer(o.SpanExporter))
	}
	if o.SpanProcessor != nil {
		tpOpts = append(tpOpts, sdktrace.WithSpanProcessor(o.SpanProcessor))
	}
	tp := sdktrace.NewTracerProvider(tpOpts...)
	closers = append(closers, tp.Shutdown)

	// Metrics.
	mpOpts := []sdkmetric.Option{sdkmetric.WithResource(res)}
	var metricsH http.Handler
	if o.MetricsAddr != "" {
		reg := prometheus.NewRegistry()
		if err := reg.Register(collectors.NewGoCollector()); err != nil {
			return nil, nil, fmt.Errorf("telemetry: go collector: %w", err)
		}
		if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
			return nil, nil, fmt.Errorf("telemetry: process collector: %w", err)
		}
		pe, err := otelprom.New(otelprom.WithRegisterer(reg))
		if err != nil {
			return nil, nil, fmt.Errorf("telemetry: prometheus exporter: %w", err)
		}
		mpOpts = append(mpOpts, sdkmetric.WithReader(pe))
		metricsH = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	}
	if o.MetricReader != nil {
		mpOpts = append(mpOpts, sdkmetric.WithReader(o.MetricReader))
	}
	mp := sdkmetric.NewMeterProvider(mpOpts...)
	closers = append(closers, mp.Shutdown)
	meters, err := NewMeters(mp)
	if err != nil {
		return nil, nil, fmt.Errorf("telemetry: instruments: %w", err)
	}

	t := &Telemetry{
		TracerProvider: tp,
		MeterProvider:  mp,
		Propagator:     propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
		Tracer:         tp.Tracer(ScopeName),
		Meters:         meters,
		Redactor:       NewRedactor(o.Secrets...),
		traceContent:   o.TraceContent,
		exporter:       kind,
		metricsH:       metricsH,
	}

	if o.MetricsAddr != "" {
		ln, err := net.Listen("tcp", metricsListenAddr(o.MetricsAddr))
		if err != nil {
			return nil, nil, fmt.Errorf("telemetry: metrics endpoint: %w", err)
		}
		if o.MetricsTLS != nil {
			ln = tls.NewListener(ln, o.MetricsTLS)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", metricsH)
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("metrics endpoint stopped", "err", err)
			}
		}()
		closers = append(closers, func(ctx context.Context) error {
			err := srv.Shutdown(ctx)
			<-done
			return err
		})
		t.metricsAddr = ln.Addr().String()
	}

	if o.SetGlobal {
		otel.SetTracerProvider(tp)
		otel.SetMeterProvider(mp)
		otel.SetTextMapPropagator(t.Propagator)
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			log.Warn("telemetry export failed", "err", err)
		}))
	}
	return t, shutdown, nil
}

func newResource(ctx context.Context, o Options) (*resource.Resource, error) {
	name := o.ServiceName
	if name == "" {
		name = "skillfleet"
	}
	kv := []attribute.KeyValue{attribute.String("service.name", name)}
	if o.ServiceVersion != "" {
		kv = append(kv, attribute.String("service.version", o.ServiceVersion))
	}
	if o.InstanceID != "" {
		kv = append(kv, attribute.String("service.instance.id", o.InstanceID))
	}
	// Later options win: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// override what the process says about itself.
	res, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithAttributes(kv...), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	return res, nil
}

// Exporter names the trace exporter in use: "otlp/grpc", "otlp/http" or
// "none" (for a startup log line).
func (t *Telemetry) Exporter() string {
	if t.exporter == "" {
		return "none"
	}
	return t.exporter
}

// TraceContent reports whether prompt and completion text are traced.
func (t *Telemetry) TraceContent() bool { return t.traceContent }

// MetricsAddr is the address the metrics endpoint listens on ("" if none);
// with MetricsAddr ":0" it tells which port was picked.
func (t *Telemetry) MetricsAddr() string { return t.metricsAddr }

// MetricsHandler serves the Prometheus registry (nil without MetricsAddr),
// for a process that would rather mount /metrics on a server it has.
func (t *Telemetry) MetricsHandler() http.Handler { return t.metricsH }

// WrapModel wraps m with this setup's tracer, meters and content policy;
// the call's attributes come from the context (see WithAttrs).
func (t *Telemetry) WrapModel(m llm.Model, provider string) *Model {
	return WrapModel(m, t.Tracer, t.Meters, func(ctx context.Context) ChatAttrs {
		return ChatAttrsFrom(ctx, provider, "")
	}, WithContent(t.traceContent, t.Redactor))
}

// metricsListenAddr binds a bare port to loopback.
func metricsListenAddr(addr string) string {
	if !strings.Contains(addr, ":") {
		return net.JoinHostPort("127.0.0.1", addr)
	}
	host, port, err := net.SplitHostPort(addr)
	if err == nil && host == "" {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

// Environment variables the OTLP setup reads (the exporters read the
// remaining OTEL_EXPORTER_OTLP_* ones — headers, timeout, TLS — themselves).
const (
	envEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	envProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	envTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	envTracesExporter = "OTEL_TRACES_EXPORTER"
	envSDKDisabled    = "OTEL_SDK_DISABLED"
)

// exportPlan decides from the environment whether and how to export:
// ("", nil) means no exporter.
func exportPlan(getenv func(string) string) (string, error) {
	if strings.EqualFold(strings.TrimSpace(getenv(envSDKDisabled)), "true") {
		return "", nil
	}
	switch e := strings.ToLower(strings.TrimSpace(getenv(envTracesExporter))); e {
	case "", "otlp":
	case "none":
		return "", nil
	default:
		return "", fmt.Errorf("telemetry: %s=%q is not supported (use otlp or none)", envTracesExporter, e)
	}
	if getenv(envTracesEndpoint) == "" && getenv(envEndpoint) == "" {
		return "", nil
	}
	proto := getenv(envTracesProtocol)
	if proto == "" {
		proto = getenv(envProtocol)
	}
	switch strings.ToLower(strings.TrimSpace(proto)) {
	case "", "grpc":
		// The OTLP spec's default is http/protobuf; skillfleet defaults to
		// gRPC because its documented collector (Jaeger) listens on 4317.
		return "otlp/grpc", nil
	case "http/protobuf":
		return "otlp/http", nil
	default:
		return "", fmt.Errorf("telemetry: OTLP protocol %q is not supported (use grpc or http/protobuf)", proto)
	}
}

func otlpExporter(ctx context.Context) (sdktrace.SpanExporter, string, error) {
	kind, err := exportPlan(os.Getenv)
	if err != nil || kind == "" {
		return nil, "", err
	}
	var exp sdktrace.SpanExporter
	switch kind {
	case "otlp/grpc":
		exp, err = otlptracegrpc.New(ctx)
	case "otlp/http":
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, "", fmt.Errorf("telemetry: %s exporter: %w", kind, err)
	}
	return exp, kind, nil
}
