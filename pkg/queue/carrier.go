package queue

import "github.com/nats-io/nats.go"

// HeaderCarrier carries W3C trace context in NATS headers. NATS header
// keys are case-sensitive, so keys are stored exactly as given (lower-case
// "traceparent", "tracestate") rather than canonicalised.
type HeaderCarrier nats.Header

// Get returns the value of key.
func (c HeaderCarrier) Get(key string) string {
	v := c[key]
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// Set sets key to value.
func (c HeaderCarrier) Set(key, value string) { c[key] = []string{value} }

// Keys lists the keys present.
func (c HeaderCarrier) Keys() []string {
	ks := make([]string, 0, len(c))
	for k := range c {
		ks = append(ks, k)
	}
	return ks
}
