package config

import (
	"encoding/json"
	"log/slog"
)

// Redacted is what a non-empty [Secret] prints as.
const Redacted = "[redacted]"

// Secret holds a credential. Every way of printing or marshalling it
// (fmt, slog, JSON, YAML) shows [Redacted] instead of the value, so a
// Secret can sit in a config that is logged or written to disk. Only
// [Secret.Reveal] returns the value.
type Secret struct {
	v string
}

// NewSecret wraps a credential.
func NewSecret(v string) Secret { return Secret{v: v} }

// Reveal returns the credential. Call it only where the value is sent.
func (s Secret) Reveal() string { return s.v }

// IsZero reports whether the secret is empty.
func (s Secret) IsZero() bool { return s.v == "" }

// String returns [Redacted], or "" for an empty secret.
func (s Secret) String() string {
	if s.v == "" {
		return ""
	}
	return Redacted
}

// GoString redacts under %#v.
func (s Secret) GoString() string { return "config.Secret(" + `"` + s.String() + `"` + ")" }

// LogValue redacts in slog output.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalJSON writes the redacted form.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// MarshalYAML writes the redacted form.
func (s Secret) MarshalYAML() (any, error) { return s.String(), nil }

// MarshalText writes the redacted form (encoders that use TextMarshaler).
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }
