package telemetry

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
)

// TestStart checks what Start adds to Setup: the API keys in the
// environment are redacted, the metrics endpoint is logged, and stop
// closes the endpoint even after the start context has ended.
func TestStart(t *testing.T) {
	const key = "sk-process-key-value-0123456789"
	t.Setenv("ANTHROPIC_API_KEY", key)
	var buf bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	tel, stop, err := Start(ctx, Options{MetricsAddr: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if got := tel.Redactor.Redact("key " + key); strings.Contains(got, key) {
		t.Errorf("Redact kept the key from $ANTHROPIC_API_KEY: %q", got)
	}
	if !strings.Contains(buf.String(), "metrics_addr="+tel.MetricsAddr()) {
		t.Errorf("log = %q, want the metrics address", buf.String())
	}
	cancel()
	stop()
	if c, err := net.Dial("tcp", tel.MetricsAddr()); err == nil {
		_ = c.Close()
		t.Errorf("metrics endpoint %s still accepts connections after stop", tel.MetricsAddr())
	}
}
