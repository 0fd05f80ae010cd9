package telemetry

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// Bucket boundaries the GenAI conventions recommend for the two
// gen_ai.client.* histograms.
var (
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
)

// Meters holds every instrument skillfleet records, created once. Its
// methods are safe for concurrent use; a nil *Meters records nothing.
//
// Attributes are kept low-cardinality: stage, role, kind, model, outcome.
// Run, step and task id belong on spans, never on metrics.
type Meters struct {
	tokenUsage  metric.Int64Histogram
	duration    metric.Float64Histogram
	tasks       metric.Int64Counter
	retries     metric.Int64Counter
	rateLimited metric.Int64Counter
	cacheHits   metric.Int64Counter
	tokensSaved metric.Int64Counter
	queueDepth  metric.Int64Gauge
	inFlight    metric.Int64UpDownCounter
	workers     metric.Int64Gauge
}

// NewMeters creates the instruments on mp (a no-op provider when nil).
func NewMeters(mp metric.MeterProvider) (*Meters, error) {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	m := mp.Meter(ScopeName)
	var ms Meters
	var err, e error
	ms.tokenUsage, e = m.Int64Histogram(MetricTokenUsage, metric.WithUnit("{token}"),
		metric.WithDescription("Tokens used per model call, by gen_ai.token.type (input includes cached reads)."),
		metric.WithExplicitBucketBoundaries(tokenBuckets...))
	err = errors.Join(err, e)
	ms.duration, e = m.Float64Histogram(MetricOperationDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of model calls, retries included."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	err = errors.Join(err, e)
	ms.tasks, e = m.Int64Counter(MetricTasks, metric.WithUnit("{task}"),
		metric.WithDescription("Tasks finished, by skillfleet.kind and skillfleet.outcome."))
	err = errors.Join(err, e)
	ms.retries, e = m.Int64Counter(MetricRetries, metric.WithUnit("{call}"),
		metric.WithDescription("Model calls repeated after a retryable failure."))
	err = errors.Join(err, e)
	ms.rateLimited, e = m.Int64Counter(MetricRateLimited, metric.WithUnit("{response}"),
		metric.WithDescription("HTTP 429 answers from model providers."))
	err = errors.Join(err, e)
	ms.cacheHits, e = m.Int64Counter(MetricCacheHits, metric.WithUnit("{task}"),
		metric.WithDescription("Tasks answered from the rollout cache instead of a model."))
	err = errors.Join(err, e)
	ms.tokensSaved, e = m.Int64Counter(MetricCacheTokensSaved, metric.WithUnit("{token}"),
		metric.WithDescription("Tokens the rollout cache saved (the recorded usage of the cached result)."))
	err = errors.Join(err, e)
	ms.queueDepth, e = m.Int64Gauge(MetricQueueDepth, metric.WithUnit("{task}"),
		metric.WithDescription("Tasks waiting in the work-queue stream."))
	err = errors.Join(err, e)
	ms.inFlight, e = m.Int64UpDownCounter(MetricInFlight, metric.WithUnit("{task}"),
		metric.WithDescription("Tasks dispatched (coordinator) or running (worker) and not yet finished."))
	err = errors.Join(err, e)
	ms.workers, e = m.Int64Gauge(MetricWorkers, metric.WithUnit("{worker}"),
		metric.WithDescription("Workers currently registered."))
	err = errors.Join(err, e)
	if err != nil {
		return nil, err
	}
	return &ms, nil
}

// CallAttrs labels one model call's metrics.
type CallAttrs struct {
	Provider      string
	RequestModel  string
	ResponseModel string
	Stage         string
	Role          string
	// ErrorType is empty for a successful call.
	ErrorType string
}

func (c CallAttrs) set() attribute.Set {
	kv := []attribute.KeyValue{KeyOperationName.String(OperationChat)}
	if c.Provider != "" {
		kv = append(kv, KeyProviderName.String(c.Provider))
	}
	if c.RequestModel != "" {
		kv = append(kv, KeyRequestModel.String(c.RequestModel))
	}
	if c.ResponseModel != "" {
		kv = append(kv, KeyResponseModel.String(c.ResponseModel))
	}
	if c.Stage != "" {
		kv = append(kv, KeyStage.String(c.Stage))
	}
	if c.Role != "" {
		kv = append(kv, KeyRole.String(c.Role))
	}
	if c.ErrorType != "" {
		kv = append(kv, KeyErrorType.String(c.ErrorType))
	}
	return attribute.NewSet(kv...)
}

// RecordCall records one model call: its duration always, its token usage
// when it succeeded (the conventions record usage only when it is known).
func (m *Meters) RecordCall(ctx context.Context, a CallAttrs, d time.Duration, u Usage) {
	if m == nil {
		return
	}
	set := a.set()
	m.duration.Record(ctx, d.Seconds(), metric.WithAttributeSet(set))
	if a.ErrorType != "" {
		return
	}
	m.tokenUsage.Record(ctx, u.Input, metric.WithAttributeSet(set), metric.WithAttributes(KeyTokenType.String(TokenTypeInput)))
	m.tokenUsage.Record(ctx, u.Output, metric.WithAttributeSet(set), metric.WithAttributes(KeyTokenType.String(TokenTypeOutput)))
}

// RecordTask counts one finished task of kind with outcome ("ok",
// "failed", "invalid_reply", "cancelled", ...).
func (m *Meters) RecordTask(ctx context.Context, kind, outcome string) {
	if m == nil {
		return
	}
	m.tasks.Add(ctx, 1, metric.WithAttributes(KeyKind.String(kind), KeyOutcome.String(outcome)))
}

// RecordRetries counts n repeated model calls at stage.
func (m *Meters) RecordRetries(ctx context.Context, stage string, n int64) {
	if m == nil || n <= 0 {
		return
	}
	m.retries.Add(ctx, n, metric.WithAttributes(KeyStage.String(stage)))
}

// RecordRateLimited counts n 429 answers from provider.
func (m *Meters) RecordRateLimited(ctx context.Context, provider string, n int64) {
	if m == nil || n <= 0 {
		return
	}
	m.rateLimited.Add(ctx, n, metric.WithAttributes(KeyProviderName.String(provider)))
}

// RecordCacheHit counts one task of kind answered from the cache, saving
// tokensSaved tokens.
func (m *Meters) RecordCacheHit(ctx context.Context, kind string, tokensSaved int64) {
	if m == nil {
		return
	}
	m.cacheHits.Add(ctx, 1, metric.WithAttributes(KeyKind.String(kind)))
	if tokensSaved > 0 {
		m.tokensSaved.Add(ctx, tokensSaved, metric.WithAttributes(KeyKind.String(kind)))
	}
}

// SetQueueDepth records the number of tasks waiting in the stream.
func (m *Meters) SetQueueDepth(ctx context.Context, n int64) {
	if m == nil {
		return
	}
	m.queueDepth.Record(ctx, n)
}

// AddInFlight adds delta (+1 on start, -1 on finish) to the in-flight
// tasks of kind.
func (m *Meters) AddInFlight(ctx context.Context, kind string, delta int64) {
	if m == nil {
		return
	}
	m.inFlight.Add(ctx, delta, metric.WithAttributes(KeyKind.String(kind)))
}

// SetWorkers records the number of registered workers.
func (m *Meters) SetWorkers(ctx context.Context, n int64) {
	if m == nil {
		return
	}
	m.workers.Record(ctx, n)
}

// Campaign metric names: each cell's spend so far, as the campaign
// process serving it sees it (labelled by campaign and cell: a campaign
// has as many series as cells, a bounded number).
const (
	MetricCellTokens = "skillfleet.campaign.cell.tokens"
	MetricCellCalls  = "skillfleet.campaign.cell.calls"
	MetricCellCost   = "skillfleet.campaign.cell.cost"
)

// CellSpend is one campaign cell's spend so far.
type CellSpend struct {
	Cell   string
	Calls  int64
	Tokens int64
	// USD is the priced spend; Priced says whether there is one.
	USD    float64
	Priced bool
}

// ObserveCampaign reports, at each collection, the spend cells returns
// for each cell of the campaign named campaign, as gauges on mp.
func ObserveCampaign(mp metric.MeterProvider, campaign string, cells func() []CellSpend) error {
	m := mp.Meter(ScopeName)
	tokens, e1 := m.Int64ObservableGauge(MetricCellTokens, metric.WithUnit("{token}"),
		metric.WithDescription("Input and output tokens a campaign cell has spent (training and its no-skill measurement)."))
	calls, e2 := m.Int64ObservableGauge(MetricCellCalls, metric.WithUnit("{call}"),
		metric.WithDescription("Model calls a campaign cell has made."))
	cost, e3 := m.Float64ObservableGauge(MetricCellCost, metric.WithUnit("{USD}"),
		metric.WithDescription("A campaign cell's spend in US dollars at the campaign's prices."))
	if err := errors.Join(e1, e2, e3); err != nil {
		return err
	}
	_, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, c := range cells() {
			attrs := metric.WithAttributes(KeyCampaign.String(campaign), KeyCell.String(c.Cell))
			o.ObserveInt64(tokens, c.Tokens, attrs)
			o.ObserveInt64(calls, c.Calls, attrs)
			if c.Priced {
				o.ObserveFloat64(cost, c.USD, attrs)
			}
		}
		return nil
	}, tokens, calls, cost)
	return err
}
