package telemetry

import (
	"regexp"
	"strings"
)

// Redacted replaces a secret in recorded content.
const Redacted = "[REDACTED]"

// keyShapes matches strings shaped like common provider credentials:
// OpenAI/Anthropic-style "sk-..." keys, Google "AIza..." keys, bearer
// tokens, and "api_key=..."-style assignments. It is a safety net for
// content tracing, not a guarantee; the exact secrets a process holds are
// passed to NewRedactor as well.
var keyShapes = regexp.MustCompile(`(?i)` +
	`\bsk-[a-z0-9][a-z0-9_\-]{15,}` +
	`|\bAIza[0-9a-z_\-]{30,}` +
	`|\bbearer\s+[a-z0-9._\-~+/]{16,}=*` +
	`|\b(api[_-]?key|x-api-key|authorization|secret|password)(["']?\s*[:=]\s*["']?)[^\s"',;]{8,}`)

// Redactor removes secrets from text before it is recorded. The zero value
// and nil redact key-shaped strings only.
type Redactor struct {
	secrets []string
}

// NewRedactor returns a Redactor that also removes each of the exact
// secrets given (empty ones and ones shorter than 6 bytes are ignored: a
// short value would blank ordinary words).
func NewRedactor(secrets ...string) *Redactor {
	r := &Redactor{}
	for _, s := range secrets {
		if len(strings.TrimSpace(s)) >= 6 {
			r.secrets = append(r.secrets, s)
		}
	}
	return r
}

// Redact returns s with secrets replaced by [REDACTED].
func (r *Redactor) Redact(s string) string {
	if r != nil {
		for _, sec := range r.secrets {
			s = strings.ReplaceAll(s, sec, Redacted)
		}
	}
	return keyShapes.ReplaceAllStringFunc(s, func(m string) string {
		// Keep the name of an assignment ("api_key=") so the text stays readable.
		if sm := keyShapes.FindStringSubmatch(m); sm[1] != "" {
			return sm[1] + sm[2] + Redacted
		}
		return Redacted
	})
}
