package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/internal/jsonx"
	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/catalogue"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/prompts"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// ExecutorDeps are what an Executor needs to run tasks.
type ExecutorDeps struct {
	Logger *slog.Logger
	// Client fetches skill texts by hash when the task's context carries
	// no coordinator client (see [ClientFrom]).
	Client pb.CoordinatorClient
	// NewModel builds a model for a spec (called once per distinct spec,
	// with the context of the first task that needs it).
	NewModel func(ctx context.Context, spec *pb.ModelSpec) (llm.Model, error)
	// NewEnv builds a benchmark (called once per distinct name and config).
	NewEnv  func(name string, config []byte) (bench.Env, error)
	Prompts *prompts.Set
}

// Executor is the Handler that runs real tasks: benchmark episodes with the
// target model, and optimizer prompts with the optimizer model.
type Executor struct {
	d   ExecutorDeps
	log *slog.Logger

	mu     sync.Mutex
	models map[string]llm.Model
	envs   map[string]bench.Env
	skills map[string]string
}

// NewExecutor returns an Executor.
func NewExecutor(d ExecutorDeps) *Executor {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	return &Executor{d: d, log: d.Logger, models: map[string]llm.Model{}, envs: map[string]bench.Env{}, skills: map[string]string{}}
}

// Handle runs one task.
func (x *Executor) Handle(ctx context.Context, t *pb.Task) *pb.Result {
	start := time.Now()
	// The resilience layers log each failed attempt through this logger.
	ctx = llm.WithLogger(ctx, x.log.With("task_id", t.GetId(), "task_stage", t.GetStage()))
	var res *pb.Result
	switch k := t.GetKind().(type) {
	case *pb.Task_Rollout:
		res = x.rollout(ctx, k.Rollout)
	case *pb.Task_Noop:
		if d := k.Noop.GetSleepMs(); d > 0 {
			select {
			case <-time.After(time.Duration(d) * time.Millisecond):
			case <-ctx.Done():
				return failure(ctx.Err())
			}
		}
		res = &pb.Result{Outcome: pb.Outcome_OUTCOME_OK}
	default:
		ot := catalogue.Optimizer(t)
		if ot == nil {
			return &pb.Result{Outcome: pb.Outcome_OUTCOME_BAD_TASK, Error: "task has no kind"}
		}
		res = x.optimize(ctx, ot)
	}
	res.DurationMs = time.Since(start).Milliseconds()
	return res
}

func (x *Executor) model(ctx context.Context, spec *pb.ModelSpec) (llm.Model, error) {
	if spec == nil {
		return nil, errors.New("task names no model")
	}
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(spec)
	key := string(b)
	x.mu.Lock()
	defer x.mu.Unlock()
	if m, ok := x.models[key]; ok {
		return m, nil
	}
	m, err := x.d.NewModel(ctx, spec)
	if err != nil {
		return nil, err
	}
	x.models[key] = m
	return m, nil
}

func (x *Executor) env(name string, cfg []byte) (bench.Env, error) {
	key := name + "\x00" + string(cfg)
	x.mu.Lock()
	defer x.mu.Unlock()
	if e, ok := x.envs[key]; ok {
		return e, nil
	}
	e, err := x.d.NewEnv(name, cfg)
	if err != nil {
		return nil, err
	}
	x.envs[key] = e
	return e, nil
}

// Close releases what the benchmarks built for earlier tasks hold (an
// environment server's connection and its goroutines): every cached
// benchmark that has a Close. The owner calls it once its worker's Run has
// returned; a later task builds its benchmark again.
func (x *Executor) Close() error {
	x.mu.Lock()
	envs := x.envs
	x.envs = map[string]bench.Env{}
	x.mu.Unlock()
	var errs []error
	for _, e := range envs {
		if c, ok := e.(io.Closer); ok {
			if err := c.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close benchmark %s: %w", e.Name(), err))
			}
		}
	}
	return errors.Join(errs...)
}

func (x *Executor) skill(ctx context.Context, hash string) (string, error) {
	x.mu.Lock()
	s, ok := x.skills[hash]
	x.mu.Unlock()
	if ok {
		return s, nil
	}
	client := ClientFrom(ctx)
	if client == nil {
		client = x.d.Client
	}
	if client == nil {
		return "", fmt.Errorf("fetch skill %s: no coordinator to fetch it from", hash)
	}
	resp, err := client.GetSkill(ctx, &pb.GetSkillRequest{Hash: hash})
	if err != nil {
		return "", fmt.Errorf("fetch skill %s: %w", hash, err)
	}
	x.mu.Lock()
	if len(x.skills) > 256 {
		clear(x.skills)
	}
	x.skills[hash] = resp.GetText()
	x.mu.Unlock()
	return resp.GetText(), nil
}

func (x *Executor) rollout(ctx context.Context, rt *pb.RolloutTask) *pb.Result {
	env, err := x.env(rt.GetBench(), rt.GetBenchConfig())
	if err != nil {
		return &pb.Result{Outcome: pb.Outcome_OUTCOME_BAD_TASK, Error: fmt.Sprintf("benchmark %q: %v", rt.GetBench(), err)}
	}
	m, err := x.model(ctx, rt.GetTarget())
	if err != nil {
		return &pb.Result{Outcome: pb.Outcome_OUTCOME_BAD_TASK, Error: fmt.Sprintf("target model: %v", err)}
	}
	skillText, err := x.skill(ctx, rt.GetSkillHash())
	if err != nil {
		return failure(err)
	}
	var fields struct {
		ID       any    `json:"id"`
		TaskType string `json:"task_type"`
	}
	_ = json.Unmarshal(rt.GetItem(), &fields)
	item := bench.Item{ID: fmt.Sprint(fields.ID), TaskType: fields.TaskType, Raw: rt.GetItem()}
	spec := rt.GetTarget()
	req := bench.EpisodeRequest{
		Item: item, Skill: skillText, Split: rt.GetSplit(), Sample: int(rt.GetSample()),
		EvalFeedback: rt.GetEvalFeedback(), BatchSeed: rt.GetBatchSeed(), Model: spec.GetModel(),
		MaxTokens: int(spec.GetMaxTokens()), Timeout: time.Duration(spec.GetTimeoutMs()) * time.Millisecond,
	}
	if spec.Temperature != nil {
		v := spec.GetTemperature()
		req.Temperature = &v
	}
	mt := newMeter(m)
	ep, err := env.Episode(ctx, mt, req)
	// The meter saw every call the episode made through the model; a
	// benchmark that reports calls made some other way keeps its counts.
	usage, metered := mt.result(spec.GetModel())
	if !metered && ep != nil {
		usage = usageOf(ep.Usage, ep.Calls, ep.FailedCalls, ep.Retries, ep.RateLimited, spec.GetModel())
	}
	if err != nil {
		r := failure(err)
		if usage != nil {
			r.Usage = usage
		}
		return r
	}
	traj, _ := json.Marshal(ep.Messages)
	return &pb.Result{
		Outcome: pb.Outcome_OUTCOME_OK,
		Usage:   usage,
		Body: &pb.Result_Rollout{Rollout: &pb.RolloutResult{
			ItemId: item.ID, Hard: ep.Hard, Soft: ep.Soft, Answer: ep.Answer, FailReason: ep.FailReason,
			TaskType: ep.TaskType, Trajectory: traj, NTurns: int32(ep.NTurns), TaskDescription: ep.TaskDescription,
		}},
	}
}

func (x *Executor) optimize(ctx context.Context, ot *pb.OptimizerTask) *pb.Result {
	m, err := x.model(ctx, ot.GetModel())
	if err != nil {
		return &pb.Result{Outcome: pb.Outcome_OUTCOME_BAD_TASK, Error: fmt.Sprintf("optimizer model: %v", err)}
	}
	var payload any = json.RawMessage(ot.GetPayload())
	sys, user, err := x.d.Prompts.Render(ot.GetPrompt(), ot.GetMode(), payload, prompts.RenderOptions{Bench: ot.GetBench()})
	if err != nil {
		return &pb.Result{Outcome: pb.Outcome_OUTCOME_BAD_TASK, Error: fmt.Sprintf("render prompt %s: %v", ot.GetPrompt(), err)}
	}
	spec := ot.GetModel()
	req := &llm.Request{
		Model:    spec.GetModel(),
		Messages: []llm.Message{{Role: llm.RoleSystem, Content: sys}, {Role: llm.RoleUser, Content: user}},
		Timeout:  time.Duration(spec.GetTimeoutMs()) * time.Millisecond, MaxTokens: int(spec.GetMaxTokens()),
		ReasoningEffort: spec.GetReasoningEffort(), Stage: ot.GetPrompt(),
	}
	if spec.Temperature != nil {
		v := spec.GetTemperature()
		req.Temperature = &v
	}
	mt := newMeter(m)
	resp, err := mt.Chat(ctx, req)
	if err != nil {
		r := failure(err)
		if u, ok := mt.result(spec.GetModel()); ok {
			r.Usage = u
		}
		return r
	}
	raw, repaired, err := jsonx.Extract(resp.Content)
	if err == nil {
		err = catalogue.CheckReply(ot.GetPrompt(), raw)
	}
	if err != nil {
		// The task is retried: the unusable reply is a cause like any other.
		mt.addCause(llm.CauseInvalidReply)
	}
	usage, _ := mt.result(spec.GetModel())
	if err != nil {
		return &pb.Result{Outcome: pb.Outcome_OUTCOME_INVALID_REPLY, Error: fmt.Sprintf("%s reply: %v", ot.GetPrompt(), err), Usage: usage,
			Body: &pb.Result_Optimizer{Optimizer: &pb.OptimizerResult{Content: resp.Content}}}
	}
	return &pb.Result{Outcome: pb.Outcome_OUTCOME_OK, Usage: usage,
		Body: &pb.Result_Optimizer{Optimizer: &pb.OptimizerResult{Content: resp.Content, Json: raw, Repaired: repaired}}}
}

func usageOf(u llm.Usage, calls, failed, retries, limited int, model string) *pb.Usage {
	return &pb.Usage{
		InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens, ReasoningTokens: u.ReasoningTokens,
		Calls: int32(calls), FailedCalls: int32(failed), Retries: int32(retries), RateLimited: int32(limited), Model: model,
	}
}

// failure maps an error to a typed outcome; never a score.
func failure(err error) *pb.Result {
	o := pb.Outcome_OUTCOME_MODEL_ERROR
	switch llm.KindOf(err) {
	case llm.KindRateLimited:
		o = pb.Outcome_OUTCOME_RATE_LIMITED
	case llm.KindTimeout:
		o = pb.Outcome_OUTCOME_TIMEOUT
	case llm.KindCancelled:
		o = pb.Outcome_OUTCOME_CANCELLED
	case llm.KindInvalidReply:
		o = pb.Outcome_OUTCOME_INVALID_REPLY
	case llm.KindInvalidRequest:
		// Sending the same request again gets the same answer.
		o = pb.Outcome_OUTCOME_BAD_TASK
	}
	r := &pb.Result{Outcome: o, Error: err.Error()}
	// A retried call that finally failed still made (and may have paid
	// for) its attempts; the coordinator's accounting must see them.
	var re *backends.RetryError
	if errors.As(err, &re) {
		r.Usage = usageOf(re.FailedUsage, re.Attempts, re.Attempts, max(re.Attempts-1, 0), re.RateLimited, "")
	} else if u := llm.BilledUsage(err); u != (llm.Usage{}) {
		r.Usage = usageOf(u, 1, 1, 0, 0, "")
	}
	return r
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
