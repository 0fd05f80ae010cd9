package backends

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/pkg/llm"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// Backend names New knows without Deps.Extra.
const (
	BackendOpenAI           = "openai"
	BackendOpenAICompatible = "openai_compatible"
	BackendAzure            = "azure"
	BackendAnthropic        = "anthropic"
	BackendExec             = "exec"
)

// Default key variables per backend, used when Spec.APIKeyEnv is empty.
const (
	DefaultOpenAIKeyEnv = "OPENAI_API_KEY"
	// DefaultOpenAIBaseURLEnv names the server when the spec names none.
	DefaultOpenAIBaseURLEnv = "OPENAI_BASE_URL"
	DefaultAzureKeyEnv      = "AZURE_OPENAI_API_KEY"
	DefaultAzureTokenEnv    = "AZURE_OPENAI_AD_TOKEN"
	DefaultAnthropicKeyEnv  = "ANTHROPIC_API_KEY"
)

// DefaultMaxRetries is the retry bound when a spec sets none.
const DefaultMaxRetries = 4

// Spec says which model to call and how. It mirrors proto ModelSpec and
// never holds a secret.
type Spec struct {
	// Backend: openai (or openai_compatible), azure, anthropic, exec, or
	// one registered in Deps.Extra (sim).
	Backend string
	// Model is the model name (Azure: also the deployment unless the
	// "deployment" option names one).
	Model string
	// BaseURL is the server ("" = the backend's default; required for azure).
	BaseURL string
	// APIKeyEnv names the environment variable holding the key ("" = the
	// backend's default variable).
	APIKeyEnv string
	// Temperature, MaxTokens, ReasoningEffort and Timeout are request
	// defaults: they apply to a request that leaves the field unset.
	Temperature     *float64
	MaxTokens       int
	ReasoningEffort string
	// Timeout bounds each call (each attempt).
	Timeout time.Duration
	// MaxRetries bounds retries after the first attempt (0 = default 4,
	// negative = none).
	MaxRetries int
	// Options are backend-specific settings (see the package doc).
	Options map[string]string
}

// SpecFromProto converts the wire spec.
func SpecFromProto(m *pb.ModelSpec) Spec {
	s := Spec{
		Backend: m.GetBackend(), Model: m.GetModel(), BaseURL: m.GetBaseUrl(), APIKeyEnv: m.GetApiKeyEnv(),
		MaxTokens: int(m.GetMaxTokens()), ReasoningEffort: m.GetReasoningEffort(),
		Timeout: time.Duration(m.GetTimeoutMs()) * time.Millisecond, MaxRetries: int(m.GetMaxRetries()), Options: m.GetOptions(),
	}
	if m.Temperature != nil {
		v := m.GetTemperature()
		s.Temperature = &v
	}
	return s
}

// String describes the spec (it holds no secret: only the variable name).
func (s Spec) String() string {
	return fmt.Sprintf("%s/%s", s.Backend, s.Model)
}

// options reads Spec.Options, collecting every malformed value so that
// New reports them all, each naming its key.
type options struct {
	backend string
	m       map[string]string
	errs    []string
}

func newOptions(s Spec) *options { return &options{backend: s.Backend, m: s.Options} }

func (o *options) bad(key, want string) {
	o.errs = append(o.errs, fmt.Sprintf("option %s=%q: want %s", key, o.m[key], want))
}

func (o *options) err() error {
	if len(o.errs) == 0 {
		return nil
	}
	return fmt.Errorf("backend %s: %s", o.backend, strings.Join(o.errs, "; "))
}

func (o *options) str(key, def string) string {
	if v, ok := o.m[key]; ok && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v)
	}
	return def
}

func (o *options) oneOf(key, def string, allowed ...string) string {
	v := o.str(key, def)
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	o.bad(key, "one of "+strings.Join(allowed, ", "))
	return def
}

// int is key's non-negative integer; 0 (the consumer's default) when
// unset or invalid.
func (o *options) int(key string) int64 {
	v := o.str(key, "")
	if v == "" {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		o.bad(key, "a non-negative integer")
		return 0
	}
	return n
}

func (o *options) bool(key string, def bool) bool {
	v := o.str(key, "")
	if v == "" {
		return def
	}
	switch strings.ToLower(v) {
	case "true", "1", "yes", "on":
		return true
	case "false", "0", "no", "off":
		return false
	}
	o.bad(key, "true or false")
	return def
}

// duration is key's non-negative duration; 0 (the consumer's default)
// when unset or invalid.
func (o *options) duration(key string) time.Duration {
	v := o.str(key, "")
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		o.bad(key, `a non-negative duration such as "30s"`)
		return 0
	}
	return d
}

func (o *options) jsonObject(key string) map[string]any {
	v := o.str(key, "")
	if v == "" {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(v), &m); err != nil || m == nil {
		o.bad(key, "a JSON object")
		return nil
	}
	return m
}

func (o *options) list(key string) ([]string, bool) {
	v, ok := o.m[key]
	if !ok {
		return nil, false
	}
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out, true
}

// defaults fills a request's unset fields from the spec.
type defaults struct {
	next llm.Model
	spec Spec
}

func (d *defaults) Chat(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	r := *req
	if r.Model == "" {
		r.Model = d.spec.Model
	}
	if r.Temperature == nil {
		r.Temperature = d.spec.Temperature
	}
	if r.MaxTokens == 0 {
		r.MaxTokens = d.spec.MaxTokens
	}
	if r.ReasoningEffort == "" {
		r.ReasoningEffort = d.spec.ReasoningEffort
	}
	if r.Timeout == 0 {
		r.Timeout = d.spec.Timeout
	}
	return d.next.Chat(ctx, &r)
}

func (d *defaults) String() string { return describe(d.next) }
