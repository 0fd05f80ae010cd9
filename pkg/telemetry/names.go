package telemetry

import "go.opentelemetry.io/otel/attribute"

// This file is the one place that spells span names, attribute keys and
// metric names. The gen_ai.* names follow the OpenTelemetry GenAI semantic
// conventions as published in semconv v1.41.0 (the last version the Go
// module go.opentelemetry.io/otel/semconv carries the GenAI namespace in;
// v1.42.0 dropped it from the Go package, so the keys are spelled out here
// rather than imported). The conventions are still "Development" stability;
// when they change, change them here.

// ScopeName is the instrumentation scope of every tracer and meter this
// package creates.
const ScopeName = "github.com/skillfleet/skillfleet/pkg/telemetry"

// Span names. A model call's span is named "chat {model}" (see ChatSpanName);
// the others nest run > epoch > step > stage > task > model call.
const (
	SpanRun = "skillfleet.run"
	// SpanEval is an evaluation run's root (the skills it scores).
	SpanEval = "skillfleet.eval"
	// SpanCampaign lasts as long as a campaign process serves the
	// campaign; it links every cell this process runs.
	SpanCampaign = "skillfleet.campaign"
	// SpanCell is the root of one campaign cell's trace: its training run
	// and its no-skill measurement, or its evaluation, are under it.
	SpanCell  = "skillfleet.cell"
	SpanEpoch = "skillfleet.epoch"
	SpanStep  = "skillfleet.step"
	// SpanStage is suffixed with the stage: "skillfleet.stage rollout".
	SpanStage = "skillfleet.stage"
	// SpanTask is suffixed with the task kind: "skillfleet.task rollout".
	SpanTask = "skillfleet.task"
	// SpanDispatch is the coordinator's publish of one task (producer kind).
	SpanDispatch = "skillfleet.dispatch"
)

// OperationChat is the gen_ai.operation.name of a chat completion.
const OperationChat = "chat"

// GenAI semantic-convention attribute keys.
const (
	KeyOperationName  = attribute.Key("gen_ai.operation.name")
	KeyProviderName   = attribute.Key("gen_ai.provider.name")
	KeyRequestModel   = attribute.Key("gen_ai.request.model")
	KeyResponseModel  = attribute.Key("gen_ai.response.model")
	KeyRequestMaxTok  = attribute.Key("gen_ai.request.max_tokens")
	KeyRequestTemp    = attribute.Key("gen_ai.request.temperature")
	KeyRequestSeed    = attribute.Key("gen_ai.request.seed")
	KeyFinishReasons  = attribute.Key("gen_ai.response.finish_reasons")
	KeyInputTokens    = attribute.Key("gen_ai.usage.input_tokens")
	KeyOutputTokens   = attribute.Key("gen_ai.usage.output_tokens")
	KeyCacheReadTok   = attribute.Key("gen_ai.usage.cache_read.input_tokens")
	KeyCacheCreateTok = attribute.Key("gen_ai.usage.cache_creation.input_tokens")
	// KeyReasoningTok is semconv v1.41.0's reasoning-token attribute. Like
	// the cache attributes, its value is included in output_tokens.
	KeyReasoningTok = attribute.Key("gen_ai.usage.reasoning.output_tokens")
	// KeyTokenType distinguishes the gen_ai.client.token.usage series.
	KeyTokenType = attribute.Key("gen_ai.token.type")
	// KeyErrorType is the general semconv error.type attribute.
	KeyErrorType = attribute.Key("error.type")

	// KeyInputMessages and KeyOutputMessages carry prompt and completion
	// text, only on the content event, only when content tracing is on.
	KeyInputMessages  = attribute.Key("gen_ai.input.messages")
	KeyOutputMessages = attribute.Key("gen_ai.output.messages")
)

// EventContent is the span event that carries prompt and completion text
// when content tracing is on (the GenAI conventions' opt-in details event).
const EventContent = "gen_ai.client.inference.operation.details"

// Token types of gen_ai.client.token.usage.
const (
	TokenTypeInput  = "input"
	TokenTypeOutput = "output"
)

// skillfleet attribute keys.
const (
	KeyStage = attribute.Key("skillfleet.stage")
	KeyRole  = attribute.Key("skillfleet.role")
	KeyRun   = attribute.Key("skillfleet.run")
	// KeyCampaign and KeyCell name a campaign and one of its cells.
	KeyCampaign = attribute.Key("skillfleet.campaign")
	KeyCell     = attribute.Key("skillfleet.cell")
	KeyStep     = attribute.Key("skillfleet.step")
	KeyEpoch    = attribute.Key("skillfleet.epoch")
	KeyTaskID   = attribute.Key("skillfleet.task_id")
	KeyKind     = attribute.Key("skillfleet.kind")
	// KeyOutcome is a task's outcome: ok, failed, invalid_reply, cancelled, ...
	KeyOutcome = attribute.Key("skillfleet.outcome")
	// KeyAttempts is how many provider calls one logical call took.
	KeyAttempts = attribute.Key("skillfleet.attempts")
	// KeyRateLimited counts 429 answers seen on the way to a reply.
	KeyRateLimited = attribute.Key("skillfleet.rate_limited")
	// KeyFailedInputTok and KeyFailedOutputTok are the billed usage of
	// failed attempts of one logical call (not part of gen_ai.usage.*).
	KeyFailedInputTok  = attribute.Key("skillfleet.usage.failed.input_tokens")
	KeyFailedOutputTok = attribute.Key("skillfleet.usage.failed.output_tokens")
)

// Metric names. The Prometheus exporter turns dots into underscores and
// adds unit and _total suffixes (docs/observability.md lists the results).
const (
	MetricTokenUsage        = "gen_ai.client.token.usage"
	MetricOperationDuration = "gen_ai.client.operation.duration"
	MetricTasks             = "skillfleet.tasks"
	MetricRetries           = "skillfleet.retries"
	MetricRateLimited       = "skillfleet.rate_limited"
	MetricCacheHits         = "skillfleet.cache.hits"
	MetricCacheTokensSaved  = "skillfleet.cache.tokens_saved"
	MetricQueueDepth        = "skillfleet.queue.depth"
	MetricInFlight          = "skillfleet.tasks.in_flight"
	MetricWorkers           = "skillfleet.workers"
)

// ChatSpanName is the GenAI span name of a chat call: "chat {model}", or
// "chat" when the model is unknown.
func ChatSpanName(operation, model string) string {
	if operation == "" {
		operation = OperationChat
	}
	if model == "" {
		return operation
	}
	return operation + " " + model
}
