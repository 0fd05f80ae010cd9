package nightly

import (
	"regexp"
	"strings"
)

// secretPatterns are the secret-shaped strings the harvester removes from
// every piece of text before it leaves the harvester: provider keys with a
// recognisable prefix, bearer tokens, JWTs, private-key blocks, credentials
// in URLs and the values of password/secret/token/key assignments.
var secretPatterns = []struct {
	kind string
	re   *regexp.Regexp
	// keep is the number of leading submatches kept verbatim (the name of
	// an assignment, the scheme and user of a URL); 0 replaces the match.
	keep int
	// hints are lower-case strings one of which every match contains: a
	// text without any is not searched (a cheap pre-filter for long texts).
	hints []string
}{
	{"private_key", regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)`), 0, []string{"private key-----"}},
	{"url_credentials", regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]+:)([^\s@/]+)(@)`), 1, []string{"://"}},
	{"api_key", regexp.MustCompile(`\bsk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_\-]{16,}`), 0, []string{"sk-"}},
	{"aws_key", regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`), 0, []string{"akia", "asia"}},
	{"github_token", regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})`), 0, []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}},
	{"slack_token", regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9-]{10,}`), 0, []string{"xox"}},
	{"google_key", regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{30,}`), 0, []string{"aiza"}},
	{"jwt", regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`), 0, []string{"eyj"}},
	// Azure storage and Service Bus connection strings, and the signature
	// of a shared access signature (SAS) URL or token.
	{"azure_key", regexp.MustCompile(`(?i)(\b(?:AccountKey|SharedAccessKey)=)([A-Za-z0-9+/]{16,}={0,2})`), 1, []string{"accountkey=", "sharedaccesskey="}},
	{"azure_sas", regexp.MustCompile(`(?i)((?:[?&;]|\b)sig=)([A-Za-z0-9%+/=_\-]{16,})`), 1, []string{"sig="}},
	{"bearer", regexp.MustCompile(`(?i)(\bbearer\s+)([A-Za-z0-9._~+/=\-]{12,})`), 1, []string{"bearer"}},
	// name = value, name: value, name is value, --name value; the value is
	// what goes.
	{"assignment", regexp.MustCompile(`(?i)(\b[a-z0-9_.\-]*(?:password|passwd|pwd|passphrase|secret|token|api[_\-]?key|apikey|access[_\-]?key|private[_\-]?key|client[_\-]?secret|credentials?)["']?(?:\s*[:=]\s*|\s+is\s+|\s+))(["']?)([^\s"'` + "`" + `,;]{4,})`), 2,
		[]string{"password", "passwd", "pwd", "passphrase", "secret", "token", "api", "apikey", "key", "credential"}},
}

// Redacted marks where a secret was removed.
const redactedMark = "[REDACTED]"

// Redact returns s with every secret-shaped string replaced by a
// "[REDACTED:kind]" marker.
func Redact(s string) string {
	if s == "" {
		return s
	}
	lower := strings.ToLower(s)
	for _, p := range secretPatterns {
		hinted := false
		for _, h := range p.hints {
			if strings.Contains(lower, h) {
				hinted = true
				break
			}
		}
		if !hinted || !p.re.MatchString(s) {
			continue
		}
		kind := p.kind
		keep := p.keep
		s = p.re.ReplaceAllStringFunc(s, func(m string) string {
			if keep == 0 {
				return "[REDACTED:" + kind + "]"
			}
			sub := p.re.FindStringSubmatch(m)
			if kind == "assignment" {
				val := sub[3]
				// Words that are clearly not secrets ("password reset",
				// "token budget") are prose, not a value.
				if looksLikeProse(val) {
					return m
				}
				return sub[1] + sub[2] + "[REDACTED:secret]"
			}
			out := strings.Join(sub[1:keep+1], "") + "[REDACTED:" + kind + "]"
			if kind == "url_credentials" {
				out += sub[3]
			}
			return out
		})
	}
	return s
}

// looksLikeProse reports whether an assignment's "value" is an ordinary
// lower-case word (the sentence "the token budget is 40k"), which is kept.
func looksLikeProse(v string) bool {
	if strings.HasPrefix(v, redactedMark[:9]) {
		return true // already redacted
	}
	letters := 0
	for _, r := range v {
		switch {
		case r >= 'a' && r <= 'z':
			letters++
		case r == '-':
		default:
			return false
		}
	}
	return letters == len(v) && len(v) <= 12 && proseWords[v]
}

var proseWords = map[string]bool{
	"is": true, "was": true, "the": true, "a": true, "an": true, "and": true, "or": true, "to": true, "for": true,
	"of": true, "in": true, "on": true, "with": true, "reset": true, "budget": true, "limit": true, "limits": true,
	"count": true, "counts": true, "usage": true, "field": true, "file": true, "files": true, "env": true,
	"manager": true, "rotation": true, "expired": true, "missing": true, "required": true, "from": true,
	"here": true, "there": true, "this": true, "that": true, "it": true, "not": true, "set": true, "unset": true,
	"needed": true, "should": true, "must": true, "will": true, "can": true, "per": true, "at": true, "into": true,
}

// ContainsSecret reports whether s still holds a secret-shaped string.
func ContainsSecret(s string) bool { return Redact(s) != s }
