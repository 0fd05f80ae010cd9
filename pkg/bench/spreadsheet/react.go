package spreadsheet

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// ModeReact is the agent mode: the model works on the first test case
// step by step with tools — it runs Python against the input workbook and
// reads what the program printed — and then submits one program, which is
// run on every test case and scored as in single mode.
const ModeReact = "react"

// Tool names of react mode.
const (
	ToolRunPython = "run_python"
	ToolSubmit    = "submit_solution"
)

// reactMaxTurns is react mode's default env.max_turns: model replies per
// episode, each of which may call tools.
const reactMaxTurns = 12

// observationMax bounds what a tool call hands back to the model.
const observationMax = 4000

var codeParams = json.RawMessage(`{"type":"object","properties":{"code":{"type":"string","description":"A complete Python program. INPUT_PATH and OUTPUT_PATH are defined before it runs."}},"required":["code"]}`)

var reactTools = []llm.Tool{
	{Name: ToolRunPython, Parameters: codeParams, Description: "Run a Python program (openpyxl available) against a fresh copy of the task's input workbook, in an isolated sandbox. " +
		"Returns its exit status, what it printed (cut to 4000 characters) and whether it saved a workbook at OUTPUT_PATH. Nothing is kept between runs."},
	{Name: ToolSubmit, Parameters: codeParams, Description: "Submit the final program. It is run on the task's input workbook and on other workbooks of the same layout, " +
		"and the cells at the answer position of what it saves at OUTPUT_PATH are checked. Ends the task."},
}

const reactSystem = `You solve spreadsheet tasks with two tools.
run_python runs a Python program against a fresh copy of the input workbook: use it to look at the sheets, try an approach and print what you need to check it.
submit_solution hands in your final program; it is run on this workbook and on others of the same layout, so find cells by their labels and the data's extent, not by fixed row counts.
In every program INPUT_PATH (the input workbook) and OUTPUT_PATH (where the result must be saved) are already defined: do not assign them.
Write values, not formulas, into the answer cells (a formula written by openpyxl has no computed value).`

// reactEpisode runs the tool loop on the first case and scores the
// submitted program on every case.
func (e *Env) reactEpisode(ctx context.Context, m llm.Model, req bench.EpisodeRequest, it Item, cases []Case, preview string, ep *bench.Episode) (*bench.Episode, error) {
	input, err := ReadRegular(cases[0].Input, GoldLimits.MaxFile)
	if err != nil {
		return nil, fmt.Errorf("spreadsheet item %s: input workbook: %w", req.Item.ID, err)
	}
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: reactSystem + "\n\n" + bench.SkillSection(req.Skill)},
		{Role: llm.RoleUser, Content: e.prompt(it, preview)},
	}
	var rec bench.Recorder
	var code, reason, isolation string
	submitted, lastRan := false, ""
	for turn := 1; turn <= e.cfg.MaxTurns && !submitted; turn++ {
		r := bench.TargetRequest(req, msgs)
		r.Tools = reactTools
		resp, err := rec.Chat(ctx, m, r)
		if err != nil {
			return rec.Failed(Name, req.Item.ID, err)
		}
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: resp.Content, ToolCalls: resp.ToolCalls})
		if len(resp.ToolCalls) == 0 {
			// A reply without a tool call ends the loop; a program in it
			// counts as the submission.
			if c, ok := ExtractCode(resp.Content); ok {
				code, submitted = c, true
			}
			break
		}
		for _, call := range resp.ToolCalls {
			obs, c, isSubmit, err := e.reactTool(ctx, call, input)
			if err != nil {
				return nil, fmt.Errorf("spreadsheet item %s: %w", req.Item.ID, err)
			}
			if c != "" && !isSubmit {
				lastRan = c
			}
			if isSubmit && !submitted {
				code, submitted = c, true
				obs = "Submitted; the program is now run on every test workbook."
			} else if isSubmit {
				obs = "A solution was already submitted in this reply; this one is ignored."
			}
			msgs = append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: call.ID, Content: obs})
		}
	}
	passed := 0
	switch {
	case submitted:
		run, err := e.runCases(ctx, it, cases, code, false)
		if err != nil {
			return rec.Failed(Name, req.Item.ID, err)
		}
		passed, reason, isolation = run.passed, run.detail, run.isolation
	case lastRan != "":
		// No submission: the last program the agent ran is its answer, as
		// a person's last attempt would be.
		code = lastRan
		run, err := e.runCases(ctx, it, cases, code, false)
		if err != nil {
			return rec.Failed(Name, req.Item.ID, err)
		}
		passed, isolation = run.passed, run.isolation
		reason = strings.TrimSpace("no solution submitted; the last program run was scored\n" + run.detail)
	default:
		reason = "no solution submitted and no program run"
	}
	if passed == len(cases) {
		reason = ""
	}
	return finishEpisode(ep, &rec, msgs, code, reason, isolation, passed, len(cases)), nil
}

// reactTool carries out one tool call: the observation for the model and
// the program the call carried. An error is the host's problem (the
// sandbox could not run anything), never the model's.
func (e *Env) reactTool(ctx context.Context, call llm.ToolCall, input []byte) (obs, code string, submit bool, err error) {
	var args struct {
		Code string `json:"code"`
	}
	if call.Name != ToolRunPython && call.Name != ToolSubmit {
		return fmt.Sprintf("error: no tool named %q; the tools are %s and %s", call.Name, ToolRunPython, ToolSubmit), "", false, nil
	}
	if jerr := json.Unmarshal([]byte(call.Arguments), &args); jerr != nil || strings.TrimSpace(args.Code) == "" {
		return fmt.Sprintf(`error: the arguments of %s must be a JSON object {"code": "<the program>"}`, call.Name), "", false, nil
	}
	if call.Name == ToolSubmit {
		return "", args.Code, true, nil
	}
	res, err := e.box.Run(ctx, args.Code, input, RunOptions{})
	if err != nil {
		return "", "", false, err
	}
	return observation(res, e.box.Limits.withDefaults().Wall.String()), args.Code, false, nil
}

// observation describes a run for the model: how it ended, what it
// printed and whether it saved a workbook. The saved workbook is not
// opened here (it is the program's, untrusted): the program prints what
// it wants to see.
func observation(res RunResult, wall string) string {
	var b strings.Builder
	switch {
	case res.TimedOut:
		fmt.Fprintf(&b, "The program was stopped after %s (time limit).\n", wall)
	case res.Limit != "":
		fmt.Fprintf(&b, "The program ran into the %s limit (exit %d).\n", res.Limit, res.ExitCode)
	default:
		fmt.Fprintf(&b, "Exit status %d.\n", res.ExitCode)
	}
	out := strings.TrimSpace(res.Output)
	if out == "" {
		out = "(nothing printed)"
	}
	if len(out) > observationMax {
		out = strings.ToValidUTF8(out[:observationMax], "") + fmt.Sprintf("\n… (cut; %d characters in all)", len(res.Output))
	}
	b.WriteString("Output:\n" + out + "\n")
	if w := res.Workbook; w != nil && w.Type == "file" {
		fmt.Fprintf(&b, "A workbook was saved at OUTPUT_PATH (%d bytes).", w.Size)
	} else {
		b.WriteString("No workbook was saved at OUTPUT_PATH.")
	}
	return b.String()
}
