package main

import (
	"flag"
	"strings"
)

// skillOptFlagKeys are the config keys SkillOpt's flat flags of
// scripts/train.py and scripts/eval_only.py set (`--target_model M` is
// model.target=M). The config then honours each key or refuses it naming
// what to use, as it does any SkillOpt key in a file.
var skillOptFlagKeys = map[string]string{
	"backend":                           "model.backend",
	"optimizer_model":                   "model.optimizer",
	"target_model":                      "model.target",
	"optimizer_backend":                 "model.optimizer_backend",
	"target_backend":                    "model.target_backend",
	"reasoning_effort":                  "model.reasoning_effort",
	"rewrite_reasoning_effort":          "model.rewrite_reasoning_effort",
	"rewrite_max_completion_tokens":     "model.rewrite_max_completion_tokens",
	"codex_trace_to_optimizer":          "model.codex_trace_to_optimizer",
	"num_epochs":                        "train.num_epochs",
	"train_size":                        "train.train_size",
	"steps_per_epoch":                   "train.steps_per_epoch",
	"batch_size":                        "train.batch_size",
	"accumulation":                      "train.accumulation",
	"seed":                              "train.seed",
	"minibatch_size":                    "gradient.minibatch_size",
	"merge_batch_size":                  "gradient.merge_batch_size",
	"analyst_workers":                   "gradient.analyst_workers",
	"failure_only":                      "gradient.failure_only",
	"edit_budget":                       "optimizer.learning_rate",
	"min_edit_budget":                   "optimizer.min_learning_rate",
	"lr_scheduler":                      "optimizer.lr_scheduler",
	"lr_control_mode":                   "optimizer.lr_control_mode",
	"skill_update_mode":                 "optimizer.skill_update_mode",
	"use_slow_update":                   "optimizer.use_slow_update",
	"slow_update_samples":               "optimizer.slow_update_samples",
	"longitudinal_pair_policy":          "optimizer.longitudinal_pair_policy",
	"use_meta_skill":                    "optimizer.use_meta_skill",
	"use_skill_aware_reflection":        "optimizer.use_skill_aware_reflection",
	"skill_aware_appendix_source":       "optimizer.skill_aware_appendix_source",
	"skill_aware_consolidate_threshold": "optimizer.skill_aware_consolidate_threshold",
	"use_gate":                          "evaluation.use_gate",
	"sel_env_num":                       "evaluation.sel_env_num",
	"test_env_num":                      "evaluation.test_env_num",
	"eval_test":                         "evaluation.eval_test",
	"env":                               "env.name",
	"skill_init":                        "env.skill_init",
	"out_root":                          "env.out_root",
}

// skillOptModelPrefixes are the families of SkillOpt's model flags, each
// the model key of its own name (`--azure_openai_auth_mode azure_cli` is
// model.azure_openai_auth_mode=azure_cli), with their per-role forms.
var skillOptModelPrefixes = []string{
	"azure_", "optimizer_azure_", "target_azure_",
	"qwen_chat_", "optimizer_qwen_chat_", "target_qwen_chat_",
	"minimax_", "codex_exec_", "claude_code_exec_", "cursor_exec_",
	"copilot_exec_", "copilot_chat_",
}

// skillOptEnvFlags are SkillOpt's flat flags that go to the benchmark's
// env section under their own name, as SkillOpt passes them.
var skillOptEnvFlags = map[string]bool{
	"data_path": true, "split_mode": true, "split_ratio": true, "split_seed": true, "split_dir": true,
	"split_output_dir": true, "data_root": true, "max_turns": true, "limit": true, "shuffle_choices": true,
	"use_theorem": true, "use_sketch": true, "image_detail": true, "judge_model": true,
	"judge_max_completion_tokens": true, "judge_retries": true, "mode": true, "max_steps": true,
	"max_api_workers": true, "max_analyst_rounds": true,
}

// skillOptFlagKey is the config key SkillOpt's flat flag name sets, or ""
// when name is none of SkillOpt's.
func skillOptFlagKey(name string) string {
	if k, ok := skillOptFlagKeys[name]; ok {
		return k
	}
	for _, p := range skillOptModelPrefixes {
		if strings.HasPrefix(name, p) {
			return "model." + name
		}
	}
	if skillOptEnvFlags[name] {
		return "env." + name
	}
	return ""
}

// skillOptArgs rewrites SkillOpt's flat flags among args (those of
// scripts/train.py and scripts/eval_only.py: `--target_model M`,
// `--num_epochs=2`, `--cfg-options k=v ...`) into --set KEY=VALUE, so a
// SkillOpt command line runs with `skillfleet train` or `eval` in place of
// `python scripts/train.py`. A flag fs defines keeps its meaning here
// (--config, --skill, --split, --workers); everything after "--" is left.
func skillOptArgs(fs *flag.FlagSet, args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			out = append(out, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if fs.Lookup(name) != nil {
			out = append(out, a)
			continue
		}
		if name == "cfg-options" || name == "cfg_options" {
			// SkillOpt's dotted overrides, as many as follow.
			if hasValue {
				out = append(out, "--set", value)
			}
			for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				out = append(out, "--set", args[i])
			}
			continue
		}
		key := skillOptFlagKey(name)
		if key == "" {
			out = append(out, a)
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				// Left for the parser to report as a flag without value.
				out = append(out, a)
				continue
			}
			i++
			value = args[i]
		}
		out = append(out, "--set", key+"="+value)
	}
	return out
}
