package backends_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/pkg/config"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

func loadKeys(t *testing.T, model string) (*config.Config, error) {
	t.Helper()
	seed, err := filepath.Abs("../configs/skills/generic_seed.md")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "run.yaml")
	body := "env:\n  name: sim\n  skill_init: " + seed + "\nmodel:\n" + model
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(p, nil)
	if err != nil {
		return nil, err
	}
	return c, backends.CheckConfig(c)
}

// The qwen_chat_* keys reach a qwen_chat role's wire: base URL, timeout,
// the max-tokens cap, the thinking mode; role-prefixed keys win.
func TestQwenKeysHonoured(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var bodies []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		mu.Lock()
		bodies = append(bodies, m)
		mu.Unlock()
		_, _ = w.Write([]byte(`{"object":"chat.completion","model":"q","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`))
	}))
	defer srv.Close()
	c, err := loadKeys(t, `  backend: qwen
  target: Qwen/Qwen3-8B
  qwen_chat_base_url: `+srv.URL+`/v1
  qwen_chat_timeout_seconds: 42
  qwen_chat_max_tokens: 300
  qwen_chat_temperature: 0.3
  qwen_chat_thinking_mode: enabled
  target_qwen_chat_thinking_mode: disabled
`)
	if err != nil {
		t.Fatal(err)
	}
	r := c.Model.Role(config.RoleTarget)
	if r.Backend != "qwen_chat" || r.BaseURL != srv.URL+"/v1" || r.Timeout != 42*time.Second || r.APIKeyEnv != config.QwenKeyEnv ||
		r.Temperature == nil || *r.Temperature != 0.3 {
		t.Fatalf("target role = %+v", r)
	}
	if c.Model.Role(config.RoleOptimizer).Backend == "qwen_chat" {
		t.Fatal("the optimizer of label qwen is not openai_chat")
	}
	opts := map[string]string{}
	for k, v := range r.Options {
		opts[k] = v.(string)
	}
	m, err := backends.New(t.Context(), backends.Spec{Backend: "openai", Model: r.Model, BaseURL: r.BaseURL, Options: opts}, backends.Deps{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	for _, asked := range []int{0, 100, 5000} {
		if _, err := m.Chat(t.Context(), &llm.Request{MaxTokens: asked, Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}); err != nil {
			t.Fatal(err)
		}
	}
	var caps []float64
	for _, b := range bodies {
		caps = append(caps, b["max_tokens"].(float64))
		if k, _ := b["chat_template_kwargs"].(map[string]any); k["enable_thinking"] != false {
			t.Errorf("chat_template_kwargs = %v, want enable_thinking false (the target's own key)", b["chat_template_kwargs"])
		}
	}
	if len(caps) != 3 || caps[0] != 300 || caps[1] != 100 || caps[2] != 300 {
		t.Errorf("max_tokens sent = %v, want [300 100 300] (the cap, the smaller request, the cap)", caps)
	}
}

func TestQwenAndAzureKeysRefusedOrWarned(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ model, want string }{
		{"  backend: qwen\n  qwen_chat_timeout_seconds: 0\n", "model.qwen_chat_timeout_seconds: must be > 0"},
		{"  backend: qwen\n  target_qwen_chat_max_tokens: -1\n", "model.target_qwen_chat_max_tokens: must be > 0"},
		{"  backend: qwen\n  qwen_chat_temperature: 3\n", "model.qwen_chat_temperature: must be in [0, 2]"},
		{"  azure_openai_auth_mode: azure_clii\n", "model.azure_openai_auth_mode"},
	} {
		if _, err := loadKeys(t, tc.model); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.model, err, tc.want)
		}
	}
	c, err := loadKeys(t, "  backend: anthropic\n  qwen_chat_max_tokens: 100\n  azure_openai_auth_mode: azure_cli\n  backend_x: 1\n")
	if err == nil {
		t.Fatal("unknown key model.backend_x accepted")
	}
	c, err = loadKeys(t, "  backend: anthropic\n  qwen_chat_max_tokens: 100\n  azure_openai_auth_mode: azure_cli\n  target_qwen_chat_thinking_mode: enabled\n")
	if err != nil {
		t.Fatal(err)
	}
	var ws []string
	for _, w := range c.Warnings {
		ws = append(ws, w.String())
	}
	got := strings.Join(ws, "\n")
	for _, want := range []string{
		"model.qwen_chat_max_tokens: has no effect: no role uses the qwen_chat family",
		"model.azure_openai_auth_mode: has no effect: no role uses the azure_openai (openai_chat) family",
		"model.target_qwen_chat_thinking_mode: has no effect: the target role does not use the qwen_chat family",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings do not say %q:\n%s", want, got)
		}
	}
	// The same keys where the family is used: no warning.
	c, err = loadKeys(t, "  backend: qwen\n  qwen_chat_max_tokens: 100\n  azure_openai_auth_mode: azure_cli\n")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range c.Warnings {
		if strings.Contains(w.Msg, "has no effect") {
			t.Errorf("unexpected warning: %s", w)
		}
	}
	// Keys a shared _base_ file sets for every backend are not the user's
	// doing: the demo config inherits them and must load without warnings.
	base, err := filepath.Abs("../configs/_base_/default.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err = loadKeys(t, "  backend: anthropic\n_base_: "+base+"\n")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range c.Warnings {
		if strings.Contains(w.Msg, "has no effect") {
			t.Errorf("a key inherited from _base_/default.yaml warned: %s", w)
		}
	}
}
