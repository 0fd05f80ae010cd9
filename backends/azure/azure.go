// Package azure signs Azure OpenAI calls in with Microsoft Entra ID the way
// enterprises run them: the Azure CLI's sign-in, a managed identity, a
// Kubernetes workload identity, or a bearer token pasted into a variable.
// The first three go through the Azure SDK for Go's azidentity.
//
// A [Credential] hands out a bearer token per call and fetches a new one
// before the current one expires (and at once when the API refused it), so
// a run that outlives a token keeps going. Tokens are never logged, printed
// or put in an error: [Credential.String] names the mode only.
package azure

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
)

// Sign-in modes (model.azure_openai_auth_mode, backend option auth_mode).
const (
	// ModeAPIKey sends the key in the api-key header.
	ModeAPIKey = "api_key"
	// ModeAzureCLI uses the Azure CLI's sign-in (`az login`):
	// `az account get-access-token` is run for each new token.
	ModeAzureCLI = "azure_cli"
	// ModeManagedIdentity uses the host's managed identity (a VM's IMDS,
	// App Service, Cloud Shell, Azure Arc, ...), user-assigned when a client
	// id is given.
	ModeManagedIdentity = "managed_identity"
	// ModeWorkloadIdentity exchanges a Kubernetes service account token
	// (AZURE_FEDERATED_TOKEN_FILE) for an Entra ID token, as AKS's workload
	// identity webhook sets it up (AZURE_CLIENT_ID, AZURE_TENANT_ID).
	ModeWorkloadIdentity = "workload_identity"
	// ModeToken sends a bearer token read from a variable
	// (AZURE_OPENAI_AD_TOKEN by default); it is never refreshed.
	ModeToken = "token"
	// ModeOpenAICompatible talks to the endpoint as a plain OpenAI server
	// (SkillOpt's escape hatch for gateways in front of Azure).
	ModeOpenAICompatible = "openai_compatible"
)

// DefaultScope is the Entra ID scope of Azure OpenAI (Cognitive Services).
const DefaultScope = "https://cognitiveservices.azure.com/.default"

// Modes lists the canonical modes, in the order messages name them.
var Modes = []string{ModeAPIKey, ModeAzureCLI, ModeManagedIdentity, ModeWorkloadIdentity, ModeToken, ModeOpenAICompatible}

// aliases are other spellings of the modes. aad and azure_ad are
// SkillOpt's names of managed identity.
var aliases = map[string]string{
	"key": ModeAPIKey, "apikey": ModeAPIKey,
	"cli": ModeAzureCLI, "az": ModeAzureCLI, "az_cli": ModeAzureCLI,
	"aad": ModeManagedIdentity, "azure_ad": ModeManagedIdentity, "msi": ModeManagedIdentity, "managed": ModeManagedIdentity,
	"workload": ModeWorkloadIdentity,
	"bearer":   ModeToken, "ad_token": ModeToken,
	"compat": ModeOpenAICompatible, "openai": ModeOpenAICompatible,
}

// ParseMode returns the canonical spelling of a mode: case, surrounding
// space and "-" versus "_" are ignored, and aliases resolve.
func ParseMode(s string) (string, error) {
	k := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "-", "_")
	if a, ok := aliases[k]; ok {
		return a, nil
	}
	if slices.Contains(Modes, k) {
		return k, nil
	}
	return "", fmt.Errorf("unknown Azure sign-in mode %q (want %s)", s, strings.Join(Modes, ", "))
}

// IsEntra reports whether mode signs in through azidentity.
func IsEntra(mode string) bool {
	return mode == ModeAzureCLI || mode == ModeManagedIdentity || mode == ModeWorkloadIdentity
}

// Config says how a [Credential] signs in.
type Config struct {
	// Mode is ModeAzureCLI, ModeManagedIdentity or ModeWorkloadIdentity.
	Mode string
	// Scope is the token's scope ("" = DefaultScope).
	Scope string
	// ClientID is the user-assigned managed identity's client id, or the
	// workload identity's application id ("" = AZURE_CLIENT_ID for
	// workload identity; the system-assigned identity for managed identity).
	ClientID string
	// TenantID is the tenant (workload identity: "" = AZURE_TENANT_ID;
	// Azure CLI: "" = the signed-in default).
	TenantID string
	// TokenFile is the workload identity's service account token file
	// ("" = AZURE_FEDERATED_TOKEN_FILE).
	TokenFile string
	// HTTPClient sends the token requests of managed and workload identity
	// (nil = the SDK's default transport).
	HTTPClient *http.Client
	// RefreshMargin is how long before expiry a token is replaced (0 = five
	// minutes, or half the token's lifetime when that is shorter).
	RefreshMargin time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Credential caches one bearer token and replaces it before it expires.
// It is safe for concurrent use: concurrent callers share one fetch.
type Credential struct {
	mode  string
	scope string
	src   azcore.TokenCredential
	cfg   Config

	mu      sync.Mutex
	tok     azcore.AccessToken
	got     time.Time
	fetches int
}

// New returns a credential for cfg. It contacts nothing: the first
// [Credential.Token] fetches the first token.
func New(cfg Config) (*Credential, error) {
	mode, err := ParseMode(cfg.Mode)
	if err != nil {
		return nil, err
	}
	var copts azcore.ClientOptions
	if cfg.HTTPClient != nil {
		copts.Transport = cfg.HTTPClient
	}
	var src azcore.TokenCredential
	switch mode {
	case ModeAzureCLI:
		src, err = azidentity.NewAzureCLICredential(&azidentity.AzureCLICredentialOptions{TenantID: cfg.TenantID})
	case ModeManagedIdentity:
		o := &azidentity.ManagedIdentityCredentialOptions{ClientOptions: copts}
		if cfg.ClientID != "" {
			o.ID = azidentity.ClientID(cfg.ClientID)
		}
		src, err = azidentity.NewManagedIdentityCredential(o)
	case ModeWorkloadIdentity:
		src, err = azidentity.NewWorkloadIdentityCredential(&azidentity.WorkloadIdentityCredentialOptions{
			ClientOptions: copts, ClientID: cfg.ClientID, TenantID: cfg.TenantID, TokenFilePath: cfg.TokenFile,
		})
	default:
		return nil, fmt.Errorf("azure: mode %s does not sign in with Entra ID", mode)
	}
	if err != nil {
		return nil, fmt.Errorf("azure %s: %s", mode, Hint(mode, err))
	}
	return NewFrom(mode, src, cfg), nil
}

// NewFrom wraps any token credential (a test double, a chain) with the
// cache and refresh of a Credential. mode only names it in messages.
func NewFrom(mode string, src azcore.TokenCredential, cfg Config) *Credential {
	scope := cfg.Scope
	if scope == "" {
		scope = DefaultScope
	}
	return &Credential{mode: mode, scope: scope, src: src, cfg: cfg}
}

// String names the credential without any token.
func (c *Credential) String() string { return fmt.Sprintf("azure.Credential(%s, %s)", c.mode, c.scope) }

// Mode is the credential's sign-in mode.
func (c *Credential) Mode() string { return c.mode }

// Fetches counts the tokens fetched so far (the first one included).
func (c *Credential) Fetches() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fetches
}

func (c *Credential) now() time.Time {
	if c.cfg.Now != nil {
		return c.cfg.Now()
	}
	return time.Now()
}

// fresh reports whether the cached token is still good at now.
func (c *Credential) fresh(now time.Time) bool {
	if c.tok.Token == "" {
		return false
	}
	if !c.tok.RefreshOn.IsZero() && !now.Before(c.tok.RefreshOn) {
		return false
	}
	margin := c.cfg.RefreshMargin
	if margin <= 0 {
		margin = 5 * time.Minute
		if life := c.tok.ExpiresOn.Sub(c.got); life > 0 && life/2 < margin {
			margin = life / 2
		}
	}
	return now.Before(c.tok.ExpiresOn.Add(-margin))
}

// Token returns a bearer token valid for a while yet, fetching a new one
// when the cached one is within its refresh margin of expiry. An error
// says what to fix (sign in, the identity, the variables) and never holds
// a token.
func (c *Credential) Token(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fresh(c.now()) {
		return c.tok.Token, nil
	}
	tok, err := c.src.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{c.scope}})
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fmt.Errorf("azure %s: %s", c.mode, Hint(c.mode, err))
	}
	if tok.Token == "" {
		return "", fmt.Errorf("azure %s: the token service returned an empty token", c.mode)
	}
	c.tok, c.got = tok, c.now()
	c.fetches++
	return tok.Token, nil
}

// Invalidate drops token if it is the cached one, so that the next Token
// fetches a new one (the API refused it: revoked, or expired early).
func (c *Credential) Invalidate(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tok.Token == token {
		c.tok = azcore.AccessToken{}
	}
}

// Hint words a sign-in failure with what to do about it. The SDK's
// message is kept (trimmed to its first lines: its troubleshooting links
// follow) and never holds a token.
func Hint(mode string, err error) string {
	msg := firstLines(err.Error(), 3)
	var fix string
	switch mode {
	case ModeAzureCLI:
		fix = "sign in with `az login` (the Azure CLI must be on PATH), or set azure_openai_auth_mode: api_key with AZURE_OPENAI_API_KEY"
		if strings.Contains(msg, "executable not found") {
			fix = "the Azure CLI `az` is not on PATH: install it and run `az login`, or set azure_openai_auth_mode: api_key with AZURE_OPENAI_API_KEY"
		}
	case ModeManagedIdentity:
		fix = "this host has no usable managed identity (on Azure: assign one and grant it the Cognitive Services OpenAI User role; for a user-assigned identity set azure_openai_managed_identity_client_id)"
	case ModeWorkloadIdentity:
		fix = "workload identity needs AZURE_CLIENT_ID, AZURE_TENANT_ID and AZURE_FEDERATED_TOKEN_FILE (set by AKS's workload identity webhook)"
	}
	if fix == "" {
		return msg
	}
	return msg + "; " + fix
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	var keep []string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "---") || strings.HasPrefix(l, "To troubleshoot") {
			continue
		}
		keep = append(keep, l)
		if len(keep) == n {
			break
		}
	}
	return strings.Join(keep, " ")
}

// shared holds one Credential per sign-in, so every model a process
// builds for the same identity shares one cached token (and one `az` run
// per refresh).
var shared = struct {
	sync.Mutex
	m map[string]*Credential
}{m: map[string]*Credential{}}

// Shared returns the process's credential for cfg, making it on first
// use. Configs that differ only in HTTPClient, RefreshMargin or Now share
// the first one's; the variables the SDK reads (PATH for `az`, the
// managed and workload identity ones) are part of the identity.
func Shared(cfg Config) (*Credential, error) {
	mode, err := ParseMode(cfg.Mode)
	if err != nil {
		return nil, err
	}
	key := strings.Join([]string{mode, cfg.Scope, cfg.ClientID, cfg.TenantID, cfg.TokenFile,
		os.Getenv("PATH"), os.Getenv("IDENTITY_ENDPOINT"), os.Getenv("IDENTITY_HEADER"), os.Getenv("MSI_ENDPOINT"),
		os.Getenv("AZURE_CLIENT_ID"), os.Getenv("AZURE_TENANT_ID"), os.Getenv("AZURE_FEDERATED_TOKEN_FILE")}, "\x00")
	shared.Lock()
	defer shared.Unlock()
	if c, ok := shared.m[key]; ok {
		return c, nil
	}
	c, err := New(cfg)
	if err != nil {
		return nil, err
	}
	shared.m[key] = c
	return c, nil
}
