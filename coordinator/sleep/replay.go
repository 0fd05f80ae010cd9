package sleep

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/nightly"
	"github.com/skillfleet/skillfleet/pkg/prompts"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// Replay is one judged attempt at a task.
type Replay struct {
	TaskID     string  `json:"task_id"`
	Stage      string  `json:"stage"`
	Sample     int     `json:"sample"`
	Hard       float64 `json:"hard"`
	Soft       float64 `json:"soft"`
	Answer     string  `json:"answer,omitempty"`
	FailReason string  `json:"fail_reason,omitempty"`
	// Err is an infrastructure failure (no score), and Outcome its kind
	// (the result's outcome name).
	Err     string `json:"error,omitempty"`
	Outcome string `json:"outcome,omitempty"`
	// Opened are the skill files the agent opened, as an agent CLI
	// target's reply notes them.
	Opened []string `json:"opened,omitempty"`
	// Tools are the tool calls an agent CLI target's stream showed, as
	// its reply's tools note names them ("Bash(git)").
	Tools []string  `json:"tools,omitempty"`
	Usage llm.Usage `json:"usage"`
	Calls int       `json:"calls"`
	// Fresh is false when the result was not measured by this request (a
	// result recorded before, or a cache hit).
	Fresh bool `json:"fresh"`
}

// ReplayRequest asks for one attempt at each task under a document
// ([nightly.ComposeDocs] of skill and memory).
type ReplayRequest struct {
	Stage  string
	Doc    string
	Tasks  []nightly.Task
	Sample int
}

// Replayer runs replays.
type Replayer interface {
	Replay(ctx context.Context, r ReplayRequest) ([]Replay, error)
}

// HubReplayer replays through the coordinator hub: each attempt is a
// rollout task of the "sleep" benchmark, run by whichever worker takes it.
type HubReplayer struct {
	Hub   *coordinator.Hub
	RunID string
	// Target is the model the attempts use.
	Target *pb.ModelSpec
	// BenchConfig is the sleep benchmark's config JSON.
	BenchConfig []byte
	Timeout     time.Duration
}

func hashHex(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write(p)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Replay implements Replayer.
func (h *HubReplayer) Replay(ctx context.Context, r ReplayRequest) ([]Replay, error) {
	docHash := hashHex([]byte(r.Doc))[:16]
	h.Hub.AddSkill(docHash, r.Doc)
	target, _ := proto.Marshal(h.Target)
	tasks := make([]*pb.Task, len(r.Tasks))
	fresh := make([]bool, len(r.Tasks))
	for i, t := range r.Tasks {
		item, err := json.Marshal(t)
		if err != nil {
			return nil, err
		}
		id := hashHex([]byte(docHash), item, []byte(fmt.Sprint(r.Sample)), target, h.BenchConfig)[:24]
		tasks[i] = &pb.Task{
			Id: h.RunID + "/rollout/" + id, RunId: h.RunID, Stage: r.Stage, TimeoutMs: h.Timeout.Milliseconds(),
			Kind: &pb.Task_Rollout{Rollout: &pb.RolloutTask{Target: h.Target, Bench: nightly.EnvName, BenchConfig: h.BenchConfig,
				Item: item, Split: t.Split, SkillHash: docHash, Sample: int32(r.Sample)}},
		}
		_, seen := h.Hub.D.Lookup(tasks[i].GetId())
		fresh[i] = !seen
	}
	futs, err := h.Hub.D.Submit(ctx, tasks...)
	if err != nil {
		return nil, err
	}
	out := make([]Replay, len(futs))
	for i, f := range futs {
		res, err := f.Wait(ctx)
		if err != nil {
			return nil, err
		}
		rp := Replay{TaskID: r.Tasks[i].ID, Stage: r.Stage, Sample: r.Sample, Fresh: fresh[i] && !res.GetCached()}
		if u := res.GetUsage(); u != nil {
			rp.Usage = llm.Usage{InputTokens: u.GetInputTokens(), OutputTokens: u.GetOutputTokens()}
			rp.Calls = int(u.GetCalls())
		}
		if res.GetOutcome() != pb.Outcome_OUTCOME_OK || res.GetRollout() == nil {
			rp.Err, rp.Outcome = fmt.Sprintf("%s: %s", res.GetOutcome(), res.GetError()), res.GetOutcome().String()
		} else {
			ro := res.GetRollout()
			rp.Hard, rp.Soft, rp.Answer, rp.FailReason = ro.GetHard(), ro.GetSoft(), ro.GetAnswer(), ro.GetFailReason()
			rp.Opened, rp.Tools = skillpkg.NotedFiles(rp.Answer), notedTools(rp.Answer)
		}
		out[i] = rp
	}
	return out, nil
}

// LocalReplayer runs the sleep benchmark in this process (tests, and
// `sleep dry-run --local`).
type LocalReplayer struct {
	Model llm.Model
	Name  string
	Env   *nightly.Env
}

// Replay implements Replayer.
func (l *LocalReplayer) Replay(ctx context.Context, r ReplayRequest) ([]Replay, error) {
	out := make([]Replay, len(r.Tasks))
	for i, t := range r.Tasks {
		item, err := json.Marshal(t)
		if err != nil {
			return nil, err
		}
		ep, err := l.Env.Episode(ctx, l.Model, benchRequest(t, item, r, l.Name))
		rp := Replay{TaskID: t.ID, Stage: r.Stage, Sample: r.Sample, Fresh: true}
		if ep != nil {
			rp.Usage, rp.Calls = ep.Usage, ep.Calls
		}
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return nil, err
			}
			rp.Err, rp.Outcome = err.Error(), llm.KindOf(err).String()
		} else {
			rp.Hard, rp.Soft, rp.Answer, rp.FailReason = ep.Hard, ep.Soft, ep.Answer, ep.FailReason
			rp.Opened, rp.Tools = skillpkg.NotedFiles(rp.Answer), notedTools(rp.Answer)
		}
		out[i] = rp
	}
	return out, nil
}

// notedTools returns the tool calls a reply's tools note names (after the
// opened-files note; nil without a note).
func notedTools(reply string) []string {
	_, calls, _ := prompts.CutToolsNote(skillpkg.CutNote(reply))
	return calls
}
