package telemetry

import (
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"
)

// Span names of a result's way from a worker to its run's coordinator:
// the worker's report of one result and the coordinator's recording of
// it, both in the trace of the task the result answers.
const (
	SpanReport = "skillfleet.report"
	SpanRecord = "skillfleet.record"
)

// tracedRPC says which Coordinator calls get gRPC spans: GetSkill, made
// for a task, joins the task's trace. Register and Heartbeat belong to no
// task (traced, each would be a trace of its own, and a fleet's
// heartbeats would bury its runs in a trace search), and the Report
// stream outlives every task it carries: each result gets its own
// report and record spans instead (SpanReport, SpanRecord).
func tracedRPC(info *stats.RPCTagInfo) bool {
	return strings.HasSuffix(info.FullMethodName, "/GetSkill")
}

// GRPCServerOptions trace the coordinator's side of workers' calls with
// this setup's providers (nil t: none).
func (t *Telemetry) GRPCServerOptions() []grpc.ServerOption {
	if t == nil {
		return nil
	}
	return []grpc.ServerOption{grpc.StatsHandler(otelgrpc.NewServerHandler(
		otelgrpc.WithTracerProvider(t.TracerProvider), otelgrpc.WithMeterProvider(t.MeterProvider),
		otelgrpc.WithPropagators(t.Propagator), otelgrpc.WithFilter(tracedRPC)))}
}

// GRPCDialOptions trace a worker's calls to a coordinator with this
// setup's providers (nil t: none).
func (t *Telemetry) GRPCDialOptions() []grpc.DialOption {
	if t == nil {
		return nil
	}
	return []grpc.DialOption{grpc.WithStatsHandler(otelgrpc.NewClientHandler(
		otelgrpc.WithTracerProvider(t.TracerProvider), otelgrpc.WithMeterProvider(t.MeterProvider),
		otelgrpc.WithPropagators(t.Propagator), otelgrpc.WithFilter(tracedRPC)))}
}
