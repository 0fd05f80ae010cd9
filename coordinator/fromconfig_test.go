package coordinator_test

import (
	"path/filepath"
	"testing"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/pkg/config"
)

// TestRoleOptionsReachTheBackend: model.<role>_options arrive in the wire
// spec as strings (mappings as JSON), and SkillOpt's exec harness keys name
// the agent and its binary unless an option says otherwise.
func TestRoleOptionsReachTheBackend(t *testing.T) {
	t.Parallel()
	root, _ := filepath.Abs("..")
	cfg, err := config.Load(filepath.Join(root, "configs", "demo.yaml"), []string{
		"env.skill_init=" + filepath.Join(root, "configs", "skills", "sim_demo_seed.md"),
		"runtime.sim_llm=false",
		"model.optimizer_backend=openai_compatible",
		"model.optimizer_options.rpm=600",
		"model.optimizer_options.chat_template_kwargs={enable_thinking: false}",
		"model.target_backend=codex_exec",
		"model.codex_exec_path=/opt/codex/bin/codex",
		"model.target_options.timeout=90s",
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := coordinator.FromConfig(cfg, "r", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	opt, tgt := s.Optimizer.GetOptions(), s.Target.GetOptions()
	if s.Optimizer.GetBackend() != "openai" || opt["rpm"] != "600" || opt["chat_template_kwargs"] != `{"enable_thinking":false}` {
		t.Errorf("optimizer spec = %v %v", s.Optimizer.GetBackend(), opt)
	}
	if s.Target.GetBackend() != "exec" || tgt["agent"] != "codex" || tgt["bin"] != "/opt/codex/bin/codex" || tgt["timeout"] != "90s" {
		t.Errorf("target spec = %v %v", s.Target.GetBackend(), tgt)
	}
}
