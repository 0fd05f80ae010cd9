package officeqa

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/pkg/llm"
)

// Search modes (env.search_mode).
const (
	SearchOffline = "offline"
	// SearchCustom is SkillOpt's HTTP search API: POST {query,
	// max_num_results, provider} with the token from search_auth_env in
	// the Authorization header; results as a list of {title, url,
	// snippet}-like objects, bare or under a key such as "results".
	SearchCustom = "custom_search"
	// SearchAzureAI is an Azure AI Search index: search_api_url is the
	// index's docs/search URL (with api-version), the key from
	// search_auth_env goes in the api-key header, results under "value".
	SearchAzureAI = "azure_ai_search"
)

// Defaults of the search keys, SkillOpt's where it has them.
const (
	DefaultSearchAuthEnv     = "OFFICEQA_CUSTOM_SEARCH_AUTH"
	DefaultSearchProvider    = "duckduckgo"
	DefaultSearchMaxResults  = 4
	DefaultSearchTimeout     = 20 * time.Second
	DefaultQueriesPerTurn    = 4
	defaultSearchMaxRetries  = 4
	defaultSearchBackoff     = time.Second
	searchResultMaxChars     = 6000
	searchErrorDetailMaxSize = 300
)

// SearchConfig is the env keys of web search for OfficeQA.
type SearchConfig struct {
	Mode              string `json:"search_mode"`
	APIURL            string `json:"search_api_url"`
	AuthEnv           string `json:"search_auth_env"`
	Provider          string `json:"search_provider"`
	MaxNumResults     int    `json:"search_max_num_results"`
	TimeoutSeconds    int    `json:"search_timeout_seconds"`
	MaxQueriesPerTurn int    `json:"max_queries_per_turn"`
	// UseLocalTools keeps glob, read and grep beside search (default true).
	UseLocalTools *bool `json:"use_local_tools"`
}

// ErrSearchUnavailable marks a search that failed after its retries: an
// outage of the search service, which is an infrastructure failure of the
// episode, never an answer of the agent's.
var ErrSearchUnavailable = errors.New("search service unavailable")

// Searcher runs one query against the configured search service.
type Searcher struct {
	mode, url, provider, token string
	env                        string // the variable the token came from
	max                        int
	client                     *http.Client
	retries                    int
	backoff                    time.Duration
}

// newSearcher checks the search keys; nil for offline mode. The token is
// read from the environment here, so a missing one fails at start-up
// naming the variable, not at the first query.
func newSearcher(c SearchConfig) (*Searcher, error) {
	mode := strings.ToLower(strings.TrimSpace(c.Mode))
	switch mode {
	case "", SearchOffline:
		return nil, nil
	case "custom", SearchCustom:
		mode = SearchCustom
	case SearchAzureAI:
	case "azure", "azure_search":
		return nil, errors.New("env.search_mode: azure_search is SkillOpt's use of the model's built-in web search tool, which skillfleet's chat backends do not offer; use custom_search (an HTTP search API) or azure_ai_search (an Azure AI Search index)")
	default:
		return nil, fmt.Errorf("env.search_mode: unknown mode %q (offline, custom_search, azure_ai_search)", c.Mode)
	}
	if c.APIURL == "" {
		return nil, fmt.Errorf("env.search_api_url: required with search_mode %s", mode)
	}
	env := cmp.Or(c.AuthEnv, DefaultSearchAuthEnv)
	token := strings.TrimSpace(os.Getenv(env))
	if token == "" {
		return nil, fmt.Errorf("env.search_auth_env: $%s is empty; set it to the search service's key (search_mode %s)", env, mode)
	}
	timeout := DefaultSearchTimeout
	if c.TimeoutSeconds > 0 {
		timeout = time.Duration(c.TimeoutSeconds) * time.Second
	}
	return &Searcher{mode: mode, env: env, url: c.APIURL, provider: cmp.Or(c.Provider, DefaultSearchProvider), token: token,
		max: cmp.Or(c.MaxNumResults, DefaultSearchMaxResults), client: &http.Client{Timeout: timeout},
		retries: defaultSearchMaxRetries, backoff: defaultSearchBackoff}, nil
}

// SearchSpec is the search tool offered to the model.
var SearchSpec = llm.Tool{Name: "search", Description: "Search the web for a query; returns the top results' titles, URLs and snippets.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"what to search for"}},"required":["query"]}`)}

// Search runs query and renders its results for the model. A service
// that keeps failing (5xx, 408, 429 or a transport error through every
// retry, or a 401/403) returns an error wrapping [ErrSearchUnavailable].
func (s *Searcher) Search(ctx context.Context, query string) (string, error) {
	var body []byte
	var err error
	if s.mode == SearchAzureAI {
		body, err = json.Marshal(map[string]any{"search": query, "top": s.max})
	} else {
		body, err = json.Marshal(map[string]any{"query": query, "max_num_results": s.max, "provider": s.provider})
	}
	if err != nil {
		return "", err
	}
	var last error
	for attempt := 0; attempt <= s.retries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(s.backoff << (attempt - 1)):
			}
		}
		raw, status, err := s.post(ctx, body)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			last = fmt.Errorf("%w: %s: %v", ErrSearchUnavailable, s.mode, redactToken(err.Error(), s.token))
			continue
		case status == http.StatusOK:
			return renderResults(query, raw), nil
		case status == 408 || status == 429 || status >= 500:
			last = fmt.Errorf("%w: %s answered HTTP %d: %s", ErrSearchUnavailable, s.mode, status, detail(raw, s.token))
			continue
		case status == 401 || status == 403:
			return "", fmt.Errorf("%w: %s refused the key in $%s (HTTP %d)", ErrSearchUnavailable, s.mode, s.env, status)
		default:
			// A bad query is the agent's to see and fix.
			return fmt.Sprintf("Query: %s\n\n[search error: HTTP %d: %s]", query, status, detail(raw, s.token)), nil
		}
	}
	return "", last
}

func (s *Searcher) post(ctx context.Context, body []byte) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if s.mode == SearchAzureAI {
		req.Header.Set("api-key", s.token)
	} else {
		req.Header.Set("Authorization", s.token)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return raw, resp.StatusCode, err
}

func detail(raw []byte, token string) string {
	return redactToken(truncate(strings.TrimSpace(string(raw)), searchErrorDetailMaxSize), token)
}

func redactToken(s, token string) string {
	if token == "" {
		return s
	}
	return strings.ReplaceAll(s, token, "[REDACTED]")
}

// renderResults lists the results of a search reply as numbered title,
// URL and snippet blocks; a reply that is not JSON is shown as text.
func renderResults(query string, raw []byte) string {
	var payload any
	if err := json.Unmarshal(raw, &payload); err != nil {
		return truncate(fmt.Sprintf("Query: %s\n\n%s", query, cmp.Or(strings.TrimSpace(string(raw)), "[empty response]")), searchResultMaxChars)
	}
	items := resultItems(payload)
	if len(items) == 0 {
		return fmt.Sprintf("Query: %s\n\n[no results]", query)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Query: %s", query)
	for i, it := range items {
		pick := func(keys ...string) string {
			for _, k := range keys {
				if s, ok := it[k].(string); ok && strings.TrimSpace(s) != "" {
					return strings.TrimSpace(s)
				}
			}
			return ""
		}
		fmt.Fprintf(&b, "\n\n[%d] %s", i+1, cmp.Or(pick("title", "name", "headline", "source"), fmt.Sprintf("Result %d", i+1)))
		if u := pick("url", "link", "href", "display_url"); u != "" {
			b.WriteString("\nURL: " + u)
		}
		if sn := pick("snippet", "description", "body", "text", "content", "chunk"); sn != "" {
			b.WriteString("\nSnippet: " + sn)
		}
	}
	return truncate(b.String(), searchResultMaxChars)
}

// resultItems finds the list of result objects in a search reply: the
// reply itself, or the first list under a key search APIs use for it.
func resultItems(payload any) []map[string]any {
	objects := func(l []any) []map[string]any {
		var out []map[string]any
		for _, v := range l {
			if m, ok := v.(map[string]any); ok {
				out = append(out, m)
			}
		}
		return out
	}
	switch p := payload.(type) {
	case []any:
		return objects(p)
	case map[string]any:
		for _, k := range []string{"results", "items", "data", "organic", "organic_results", "search_results", "webPages", "value"} {
			switch v := p[k].(type) {
			case []any:
				return objects(v)
			case map[string]any:
				if got := resultItems(v); len(got) > 0 {
					return got
				}
			}
		}
	}
	return nil
}
