package sleep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/backends/handoff"
	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/pkg/config"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/nightly"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// ErrNoImprovement is `--assert-improves` failing: the night did not
// improve the skill.
var ErrNoImprovement = errors.New("the night did not improve")

// DefaultTargetTimeout bounds one replay call when target_timeout is unset.
const DefaultTargetTimeout = 5 * time.Minute

// Specs returns the night's two roles: the target that replays tasks and
// the optimizer that mines, reflects and judges. With target_backend set
// the target is built by train's role builder ([coordinator.RoleSpec])
// from the same keys a training config has; an agent CLI target
// (the exec backend) gets the skill installed under the live skill's own
// name, notes the skill files it opened, a plain SKILL.md included, and
// has no stall deadline (target_timeout bounds a call).
func Specs(n Night) (target, optimizer *pb.ModelSpec, err error) {
	c := n.Config
	if c.Backend == "" {
		return nil, nil, UsageError{errors.New("--backend is required (or backend: in the config): " + strings.Join(backends.Implementations(), ", "))}
	}
	if c.Model == "" {
		return nil, nil, UsageError{fmt.Errorf("--model is required for backend %s", c.Backend)}
	}
	timeout := c.TargetTimeout
	if timeout == 0 {
		timeout = DefaultTargetTimeout
	}
	optimizer = &pb.ModelSpec{Backend: c.Backend, Model: c.Model, BaseUrl: c.BaseURL, ApiKeyEnv: c.APIKeyEnv, TimeoutMs: DefaultTargetTimeout.Milliseconds()}
	if c.OptimizerModel != "" {
		optimizer.Model = c.OptimizerModel
	}
	if ChatFamily(c.Backend) {
		optimizer = chatSpec(n, optimizer.Model)
		if c.TargetBackend == "" {
			return nil, nil, UsageError{fmt.Errorf("--backend %s runs the miner, reflector and judge on an agent CLI: name the replay target too (--target-backend, e.g. claude_code_exec)", c.Backend)}
		}
	} else if len(n.OptimizerOptions) > 0 {
		optimizer.Options = map[string]string{}
		for k, v := range n.OptimizerOptions {
			optimizer.Options[k] = v
		}
	}
	if c.TargetBackend == "" {
		target = &pb.ModelSpec{Backend: c.Backend, Model: c.Model, BaseUrl: c.BaseURL, ApiKeyEnv: c.APIKeyEnv, TimeoutMs: timeout.Milliseconds(), MaxRetries: int32(c.TargetMaxRetries)}
		return target, optimizer, nil
	}
	rc := &config.Config{Model: config.Model{
		TargetBackend: c.TargetBackend, Target: c.Model, TargetBaseURL: c.TargetBaseURL, TargetAPIKeyEnv: c.TargetAPIKeyEnv,
		TargetOptions: c.TargetOptions, CodexExecPath: c.CodexExecPath, ClaudeCodeExecPath: c.ClaudeCodeExecPath,
		Timeout: timeout, MaxRetries: c.TargetMaxRetries,
	}}
	target = coordinator.RoleSpec(rc, config.RoleTarget)
	if target.GetBackend() == backends.BackendExec {
		if _, set := target.Options["skill_name"]; !set {
			target.Options["skill_name"] = n.skillName()
		}
		if _, set := target.Options["note_opened"]; !set {
			target.Options["note_opened"] = "always"
		}
		// A tool_called judge reads the backend's record of the agent's
		// tool calls (nightly.ScoreAgent), which must then lead every
		// reply: on whatever the options say.
		target.Options["note_tools"] = "true"
		// An agent's tool loop takes as long as it takes: target_timeout
		// bounds it, not a stall deadline learned from the process's
		// other (much faster) model calls.
		if _, set := target.Options["stall_deadline"]; !set {
			target.Options["stall_deadline"] = "off"
		}
	}
	return target, optimizer, nil
}

// skillName is the live skill's name: its directory's.
func (n Night) skillName() string {
	if n.SkillDir != "" {
		return filepath.Base(n.SkillDir)
	}
	return filepath.Base(filepath.Dir(n.SkillPath))
}

// CommandDeps are what a night command needs from the binary.
type CommandDeps struct {
	// NewModel builds a role's model in this process (the optimizer).
	NewModel func(*pb.ModelSpec) (llm.Model, error)
	// Run starts the night's fleet: in-process workers, the sim-llm.
	Run    coordinator.Deps
	Logger *slog.Logger
	// Shared, when set, is the fleet the night replays on instead of one
	// of its own (a sweep's cells share one).
	Shared *SharedFleet
}

// SharedFleet is a fleet several nights of this process replay on at
// once: its NATS server and its gRPC endpoint, whose workers take every
// night's replays. Each night is a run of its own on it, named after its
// state dir too, so that nights started in the same second do not share
// a run id.
type SharedFleet struct {
	NATSURL  string
	Endpoint *coordinator.Endpoint
}

// RunCommand is `sleep run` and `sleep dry-run` on resolved flags: the
// night, its summary (or JSON) on stdout, and an error the command maps
// to its exit code: a [UsageError], [nightly.ErrLocked], [ErrStopped],
// [ErrBudget], [ErrNoImprovement], or an [*AgentFailure] (the replay
// agent failed: nothing staged, no score recorded).
func RunCommand(ctx context.Context, o *Options, n Night, persona string, d CommandDeps, stdout io.Writer) error {
	target, optSpec, err := Specs(n)
	if err != nil {
		return err
	}
	n.TargetModel, n.OptimizerModel, n.AgentTarget = target.GetModel(), optSpec.GetModel(), target.GetBackend() == backends.BackendExec
	if n.Cost, err = PriceFunc(n.Config, o.Prices, n.TargetModel, n.OptimizerModel); err != nil {
		return UsageError{err}
	}
	if n.TasksFile != "" {
		tf, err := nightly.LoadTasksFile(n.TasksFile)
		if err != nil {
			return UsageError{fmt.Errorf("--tasks-file: %w", err)}
		}
		if !tf.Reviewed && n.Config.Backend != backends.BackendSim {
			return UsageError{fmt.Errorf("--tasks-file %s: \"reviewed\" is false; read the tasks, then set it to true", n.TasksFile)}
		}
	}
	var ho *handoff.Store
	if n.Config.Backend == backends.BackendHandoff {
		if ho, err = o.handoffStore(n, target, optSpec); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "handoff: prompts and answers in %s\n", ho.Dir())
		n.HarvestSnapshot = HarvestSnapshotFile(ho.Dir())
	}
	optimizer, err := d.NewModel(optSpec)
	if err != nil {
		return UsageError{fmt.Errorf("backend %s: %w", optSpec.GetBackend(), err)}
	}
	nd := NightDeps{Optimizer: optimizer, Logger: d.Logger, Fleet: o.fleet(n.Config, target, d)}
	if ho != nil {
		nd.Pending = ho.Err
	}
	rep, err := RunNight(ctx, n, nd)
	if ho != nil {
		// Waiting calls win over whatever else stopped the night: the
		// batch is what moves it on.
		if herr := handoffOutcome(ho, stdout); herr != nil {
			return herr
		}
	}
	if rep == nil {
		return err
	}
	if ho != nil {
		// The night is over: the next one harvests afresh.
		if rerr := os.Remove(n.HarvestSnapshot); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			return rerr
		}
	}
	if persona != "" {
		fmt.Fprintf(stdout, "skillfleet sleep: persona %s sandbox %s\n", o.Persona, persona)
	}
	if o.JSON {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Fprintln(stdout, nightly.Redact(string(b)))
	} else {
		fmt.Fprint(stdout, nightly.Redact(rep.Summary()))
	}
	switch {
	case errors.Is(err, ErrBudget):
		return fmt.Errorf("night %d stopped: %w; nothing was accepted (raise max_tokens_per_night / --max-tokens, or --max-usd)", rep.Night, err)
	case err != nil:
		return err
	}
	if ho != nil {
		answered, tok := ho.Counts()
		fmt.Fprintf(stdout, "handoff: %d calls answered from %s (%d tokens, estimated)\n", answered, ho.AnswersDir(), tok)
	}
	if rep.Adopted > 0 {
		fmt.Fprintf(stdout, "adopted: %d file(s); undo with: %s --undo\n", rep.Adopted, n.AdoptCmd)
	}
	if o.AssertImproves && !rep.Improved(n.Persona) {
		return fmt.Errorf("--assert-improves: %w (%s: %s)", ErrNoImprovement, rep.Outcome.Action, rep.Outcome.Reason)
	}
	d.Logger.Info("night done", "night", rep.Night, "action", rep.Outcome.Action)
	return nil
}

// fleet starts a night's replays on an embedded NATS server with
// in-process workers, or on --nats with external ones, and with sim_llm
// a sim-llm the target is pointed at; its run dir is removed afterwards
// unless --keep-run.
func (o *Options) fleet(c nightly.Config, target *pb.ModelSpec, d CommandDeps) func(context.Context, int, time.Time, []byte) (Replayer, func(), error) {
	return func(ctx context.Context, night int, started time.Time, benchCfg []byte) (Replayer, func(), error) {
		runDir := filepath.Join(o.StateDir, "runs", fmt.Sprintf("night-%04d-%s-%d", night, started.Format("20060102-150405"), os.Getpid()))
		runID := filepath.Base(runDir)
		if d.Shared != nil {
			abs, _ := filepath.Abs(o.StateDir)
			runID += "-" + hashHex([]byte(abs))[:12]
		}
		var stops []func()
		stop := func() {
			for i := len(stops) - 1; i >= 0; i-- {
				stops[i]()
			}
			if !o.KeepRun {
				_ = os.RemoveAll(runDir)
			}
		}
		if c.SimLLM {
			if d.Run.SimLLM == nil {
				return nil, nil, errors.New("sim_llm is set but this binary starts no sim-llm")
			}
			url, stopSim, err := d.Run.SimLLM(ctx)
			if err != nil {
				return nil, nil, err
			}
			stops = append(stops, stopSim)
			target.BaseUrl, target.ApiKeyEnv = url, ""
			if target.GetBackend() != backends.BackendExec {
				target.Backend = backends.BackendOpenAI
			}
		}
		cfg := coordinator.Config{Dir: runDir, ID: runID, NATSURL: o.NATSURL, NATSReplicas: o.NATSReplicas,
			Workers: o.Workers, Concurrency: o.Concurrency, NoSync: true, Logger: d.Logger}
		if d.Shared != nil {
			cfg.NATSURL, cfg.Endpoint, cfg.Workers = d.Shared.NATSURL, d.Shared.Endpoint, 0
		}
		fleet, err := coordinator.Start(ctx, cfg, d.Run)
		if err != nil {
			stop()
			return nil, nil, err
		}
		stops = append(stops, func() { fleet.Stop(); _, _ = fleet.Wait() })
		return &HubReplayer{Hub: fleet.Hub(), RunID: runID, Target: target, BenchConfig: benchCfg, Timeout: 10 * time.Minute}, stop, nil
	}
}

// ChatFamily reports whether family runs an agent CLI in chat mode for the
// optimizer's roles (claude_chat, codex_chat, copilot_chat, pi_chat,
// opencode_chat; codex_exec as SkillOpt's --backend codex).
func ChatFamily(family string) bool {
	f, ok := backends.LookupFamily(family)
	return ok && f.Backend == backends.BackendExec && f.Agent != "" && !f.TargetOnly
}

func chatFamilies() []string {
	var out []string
	for _, f := range backends.Families() {
		if ChatFamily(f.Name) {
			out = append(out, f.Name)
		}
	}
	return out
}

// chatSpec is the optimizer's spec on an agent CLI's chat family: the
// miner, reflector and judge each a call of the CLI in chat mode (no
// tools), its program from --codex-exec-path or --claude-code-exec-path,
// on the user's own CLI login when no --base-url names a provider (or
// with option user_login=true, which signs the calls at --base-url with
// the login), as a training config's optimizer_backend of that family.
func chatSpec(n Night, model string) *pb.ModelSpec {
	c := n.Config
	opts := map[string]any{"mode": "chat"}
	if c.BaseURL == "" {
		opts["user_login"] = "true"
	}
	for k, v := range n.OptimizerOptions {
		opts[k] = v
	}
	rc := &config.Config{Model: config.Model{
		OptimizerBackend: c.Backend, Optimizer: model, OptimizerBaseURL: c.BaseURL, OptimizerAPIKeyEnv: c.APIKeyEnv,
		OptimizerOptions: opts, CodexExecPath: c.CodexExecPath, ClaudeCodeExecPath: c.ClaudeCodeExecPath, Timeout: DefaultTargetTimeout,
	}}
	spec := coordinator.RoleSpec(rc, config.RoleOptimizer)
	if _, set := spec.Options["stall_deadline"]; !set {
		spec.Options["stall_deadline"] = "off"
	}
	return spec
}
