package backends_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/pkg/config"
)

// loadModel loads a minimal sim config whose model block is model.
func loadModel(t *testing.T, model string, sets ...string) *config.Config {
	t.Helper()
	dir := t.TempDir()
	skill := filepath.Join(dir, "skill.md")
	if err := os.WriteFile(skill, []byte("# skill\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "run.yaml")
	body := "env:\n  name: sim\n  skill_init: " + skill + "\nmodel:\n" + model
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(path, sets)
	if err != nil {
		t.Fatalf("config.Load: %v", err)
	}
	return c
}

func TestCheckConfigRefusesUnimplementedFamilies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, model string
		field, msg  string // "" field: accepted
	}{
		{name: "default azure", model: "  optimizer: gpt-5.5\n"},
		{name: "sim", model: "  backend: sim\n"},
		{name: "claude label", model: "  backend: claude\n"},
		{name: "codex", model: "  backend: codex\n"},
		{name: "qwen target", model: "  backend: qwen\n"},
		{name: "claude code target", model: "  backend: claude_code_exec\n"},
		{name: "cursor with a command", model: "  backend: cursor\n  target_options:\n    command: [\"cursor-agent\", \"-p\"]\n"},
		{name: "copilot chat", model: "  backend: copilot\n"},
		{name: "claude chat on a login", model: "  backend: claude\n  optimizer_backend: claude_chat\n"},
		{name: "pi target", model: "  target_backend: pi_exec\n"},
		{name: "unknown label", model: "  backend: gemini\n",
			field: "model.backend", msg: "client family gemini (optimizer) is not implemented"},
		{name: "unknown target family", model: "  target_backend: gemini_chat\n",
			field: "model.target_backend", msg: "client family gemini_chat (target) is not implemented by any backend (supported: anthropic, azure,"},
		{name: "pi as optimizer", model: "  optimizer_backend: opencode_exec\n",
			field: "model.optimizer_backend", msg: "opencode_exec runs an agent CLI and can only be the target backend"},
		{name: "agent CLI as optimizer", model: "  optimizer_backend: claude_code_exec\n",
			field: "model.optimizer_backend", msg: "claude_code_exec runs an agent CLI and can only be the target backend"},
		{name: "exec without a command", model: "  target_backend: exec\n",
			field: "model.target_options", msg: "exec needs option command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := backends.CheckConfig(loadModel(t, tt.model))
			if tt.field == "" {
				if err != nil {
					t.Fatalf("CheckConfig = %v, want nil", err)
				}
				return
			}
			var fe *config.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("CheckConfig = %v, want a *config.FieldError", err)
			}
			if fe.Field != tt.field || !strings.Contains(fe.Msg, tt.msg) || !strings.HasSuffix(fe.File, "run.yaml") {
				t.Errorf("CheckConfig = %q (field %s), want field %s with %q, naming run.yaml", err, fe.Field, tt.field, tt.msg)
			}
		})
	}
}

// TestFamiliesReachAnImplementation: every family a config may name is
// served by a backend New builds, and the implementations' own names are
// families, so the table cannot point at nothing.
func TestFamiliesReachAnImplementation(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, f := range backends.Families() {
		if seen[f.Name] {
			t.Errorf("family %s listed twice", f.Name)
		}
		seen[f.Name] = true
		_, err := backends.New(t.Context(), backends.Spec{Backend: f.Backend, Model: "m", BaseURL: "http://127.0.0.1:1/v1"}, backends.Deps{})
		if errors.Is(err, backends.ErrUnknownBackend) {
			t.Errorf("family %s -> backend %s: %v", f.Name, f.Backend, err)
		}
		if g, ok := backends.LookupFamily(f.Name); !ok || g != f {
			t.Errorf("LookupFamily(%s) = %+v, %v, want %+v", f.Name, g, ok, f)
		}
	}
	for _, want := range []string{"openai", "openai_compatible", "azure", "anthropic", "exec", "sim", "openai_chat", "claude_code_exec"} {
		if !seen[want] {
			t.Errorf("Families() lacks %s", want)
		}
	}
	for _, want := range []string{"copilot_chat", "claude_chat", "cursor_exec", "copilot_exec", "pi_exec", "opencode_exec", "pi_chat", "opencode_chat", "codex_chat"} {
		if f, _ := backends.LookupFamily(want); f.Backend != "exec" || f.Agent == "" {
			t.Errorf("family %s = %+v, want an agent CLI", want, f)
		}
	}
}

// TestShippedConfigsHaveBackends: every config in configs/ names families
// a backend implements.
func TestShippedConfigsHaveBackends(t *testing.T) {
	root, _ := filepath.Abs("..")
	t.Chdir(root)
	files, _ := filepath.Glob("configs/*.yaml")
	if len(files) < 8 {
		t.Fatalf("found %d configs", len(files))
	}
	for _, f := range files {
		if filepath.Base(f) == "prices.yaml" {
			continue
		}
		c, err := config.Load(f, nil)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if err := backends.CheckConfig(c); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// Telemetry names each implementation's provider as the OpenTelemetry
// GenAI conventions do where they have a name, else by the backend's own.
func TestProvider(t *testing.T) {
	t.Parallel()
	want := map[string]string{"openai": "openai", "openai_compatible": "openai", "azure": "azure.ai.openai",
		"anthropic": "anthropic", "sim": "sim", "exec": "exec", "handoff": "handoff", "not_a_backend": "not_a_backend"}
	for backend, w := range want {
		if got := backends.Provider(backend); got != w {
			t.Errorf("Provider(%q) = %q, want %q", backend, got, w)
		}
	}
	for _, name := range backends.Implementations() {
		if _, ok := want[name]; !ok {
			t.Errorf("implementation %q has no provider case in this test", name)
		}
		if _, ok := backends.LookupFamily(name); !ok {
			t.Errorf("LookupFamily(%q) fails: every implementation is a family", name)
		}
	}
}
