// Package envserver drives interactive text environments over the
// environment-server protocol (proto/skillfleet/envserver/v1): the
// multi-turn agent loop shared by the textgame reference benchmark and
// ALFWorld.
package envserver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/llm"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/envserver/v1"
)

// Notes is the household games' failure taxonomy for the analyst prompts
// (textgame and alfworld).
const Notes = `Household-game failures usually fall into: (1) acting before looking: taking or putting at a receptacle not visited or still closed; (2) repeating an action that changes nothing ("Nothing happens."); (3) forgetting the object's required state (clean, hot, cool) before placing it; (4) searching the same places again instead of unvisited ones; (5) replies that are not one of the listed actions. Only winning within the step limit scores.`

// Config is the env keys of a benchmark played over the protocol.
type Config struct {
	bench.Common
	// EnvServer is the server's host:port (required).
	EnvServer string `json:"env_server"`
	// MaxSteps bounds an episode (default 50).
	MaxSteps int `json:"max_steps"`
	// History is how many past steps each prompt repeats (default 10).
	History int `json:"history"`
}

// Item is one game to play.
type Item struct {
	ID       string `json:"id"`
	Game     string `json:"game,omitempty"`
	Gamefile string `json:"gamefile,omitempty"`
	TaskType string `json:"task_type,omitempty"`
}

// Env plays items' games on one server.
type Env struct {
	name  string
	cfg   Config
	notes string

	once sync.Once
	cc   *grpc.ClientConn
	err  error
}

// New returns an environment named name (its registry key).
func New(name string, cfg Config, notes string) (*Env, error) {
	if strings.TrimSpace(cfg.EnvServer) == "" {
		return nil, fmt.Errorf("env.env_server: required (the environment server's host:port)")
	}
	cfg.MaxSteps = cmp.Or(cfg.MaxSteps, 50)
	cfg.History = cmp.Or(cfg.History, 10)
	return &Env{name: name, cfg: cfg, notes: notes}, nil
}

// Name returns the registry key.
func (e *Env) Name() string { return e.name }

// AnalystNotes is the benchmark's failure taxonomy.
func (e *Env) AnalystNotes() string { return e.notes }

func (e *Env) client() (pb.EnvServerClient, error) {
	e.once.Do(func() {
		e.cc, e.err = grpc.NewClient(e.cfg.EnvServer, grpc.WithTransportCredentials(insecure.NewCredentials()))
	})
	if e.err != nil {
		return nil, fmt.Errorf("environment server %s: %w", e.cfg.EnvServer, e.err)
	}
	return pb.NewEnvServerClient(e.cc), nil
}

// Close closes the connection to the server, if one was made; the
// client's goroutines end with it. Episodes after Close fail.
func (e *Env) Close() error {
	var cc *grpc.ClientConn
	e.once.Do(func() { e.err = errors.New("closed") })
	if e.err == nil {
		cc = e.cc
	}
	if cc == nil {
		return nil
	}
	return cc.Close()
}

var actionTag = regexp.MustCompile(`(?is)<action>(.*?)</action>`)

// ExtractAction reads the action from a reply: the last <action>…</action>,
// else the last non-empty line; "" when there is none.
func ExtractAction(reply string) string {
	if m := actionTag.FindAllStringSubmatch(reply, -1); len(m) > 0 {
		return strings.TrimSpace(m[len(m)-1][1])
	}
	lines := strings.Split(reply, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return strings.Trim(l, "`\"' ")
		}
	}
	return ""
}

const system = `You are an agent in a household text environment. Each turn you see the task, what happened so far, the current observation and the actions available.
Choose exactly one action and reply with it inside <action></action>, copied from the list.`

type stepLog struct{ action, observation string }

func (e *Env) prompt(skill, task, obs string, hist []stepLog, acts []string) string {
	var b strings.Builder
	b.WriteString(bench.SkillSection(skill))
	b.WriteString("\nTask: " + task + "\n")
	if len(hist) > 0 {
		b.WriteString("\nRecent steps:\n")
		for _, h := range hist[max(0, len(hist)-e.cfg.History):] {
			fmt.Fprintf(&b, "> %s\n%s\n", h.action, h.observation)
		}
	}
	b.WriteString("\nObservation: " + obs + "\n")
	if len(acts) > 0 {
		b.WriteString("\nAvailable actions: " + strings.Join(acts, " | ") + "\n")
	}
	b.WriteString("\nReply with one action inside <action></action>.")
	return b.String()
}

// Episode plays one game: reset, then one target call per step until the
// game is done or MaxSteps run out. An empty or unreadable reply becomes
// "look"; a failed model call or server error is an infrastructure error.
func (e *Env) Episode(ctx context.Context, m llm.Model, req bench.EpisodeRequest) (*bench.Episode, error) {
	var it Item
	if err := json.Unmarshal(req.Item.Raw, &it); err != nil {
		return nil, fmt.Errorf("%s item %s: %w", e.name, req.Item.ID, err)
	}
	game := cmp.Or(it.Game, it.Gamefile)
	if game == "" {
		return nil, fmt.Errorf("%s item %s: no game or gamefile", e.name, req.Item.ID)
	}
	cl, err := e.client()
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	reset, err := cl.Reset(rctx, &pb.ResetRequest{Game: game, Seed: req.BatchSeed})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("%s item %s: reset %q on %s: %w", e.name, req.Item.ID, game, e.cfg.EnvServer, err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = cl.Close(cctx, &pb.CloseRequest{Session: reset.GetSession()})
	}()
	task := cmp.Or(reset.GetTask(), "see the observation")
	obs, acts := reset.GetObservation(), reset.GetAdmissibleActions()
	var rec bench.Recorder
	var hist []stepLog
	msgs := []llm.Message{{Role: llm.RoleSystem, Content: system}, {Role: llm.RoleUser, Content: obs}}
	won, done, steps, looks := false, false, 0, 0
	for steps < e.cfg.MaxSteps && !done {
		steps++
		user := e.prompt(req.Skill, task, obs, hist, acts)
		resp, err := rec.Chat(ctx, m, bench.TargetRequest(req, []llm.Message{{Role: llm.RoleSystem, Content: system}, {Role: llm.RoleUser, Content: user}}))
		if err != nil {
			return rec.Failed(e.name, req.Item.ID, err)
		}
		action := ExtractAction(resp.Content)
		if action == "" {
			action, looks = "look", looks+1
		}
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		st, err := cl.Step(sctx, &pb.StepRequest{Session: reset.GetSession(), Action: action})
		cancel()
		if err != nil {
			return rec.Failed(e.name, req.Item.ID, fmt.Errorf("step %d (%q) on %s: %w", steps, action, e.cfg.EnvServer, err))
		}
		obs, acts, done, won = st.GetObservation(), st.GetAdmissibleActions(), st.GetDone(), st.GetWon()
		hist = append(hist, stepLog{action, obs})
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: resp.Content}, llm.Message{Role: llm.RoleUser, Content: obs})
	}
	var hard float64
	reason := ""
	switch {
	case won:
		hard = 1
	case !done:
		reason = fmt.Sprintf("Timeout after %d steps", steps)
	default:
		reason = "Episode ended without completing the task"
	}
	msgs = append(msgs, evalMessage(won, reason, task, steps, e.cfg.MaxSteps, looks))
	ep := &bench.Episode{Hard: hard, Soft: hard, FailReason: reason, TaskType: cmp.Or(it.TaskType, req.Item.TaskType, TaskTypeOf(game)),
		TaskDescription: task, Messages: msgs, NTurns: steps}
	if len(hist) > 0 {
		ep.Answer = hist[len(hist)-1].action
	}
	rec.Fill(ep)
	return ep, nil
}

// evalMessage is the trajectory's closing system message for the analysts:
// the outcome and what winning meant (a game has no gold answer).
func evalMessage(won bool, reason, task string, steps, maxSteps, looks int) llm.Message {
	var b strings.Builder
	if won {
		fmt.Fprintf(&b, "evaluation result: correct (hard 1, soft 1): the game was won after %d steps", steps)
	} else {
		fmt.Fprintf(&b, "evaluation result: incorrect (hard 0, soft 0): %s", reason)
	}
	fmt.Fprintf(&b, "; gold: complete the task %q within %d steps", task, maxSteps)
	if looks > 0 {
		fmt.Fprintf(&b, "; %d of %d replies had no readable action and became \"look\"", looks, steps)
	}
	return llm.Message{Role: llm.RoleSystem, Content: b.String()}
}

// ALFWorld task types, matched as substrings of the game file path; the
// longer names first so that pick_and_place does not shadow them.
var taskTypes = []string{"pick_two_obj_and_place", "look_at_obj_in_light", "pick_heat_then_place_in_recep",
	"pick_cool_then_place_in_recep", "pick_clean_then_place_in_recep", "pick_and_place"}

// TaskTypeOf derives an ALFWorld task type from a game file path.
func TaskTypeOf(game string) string {
	for _, t := range taskTypes {
		if strings.Contains(game, t) {
			return t
		}
	}
	return ""
}
