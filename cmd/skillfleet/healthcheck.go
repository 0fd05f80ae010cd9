package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/skillfleet/skillfleet/internal/serve"
)

// runHealthcheck GETs a health URL and succeeds on a 2xx answer: the
// container healthcheck of an image that has no shell, curl or wget
// (docker-compose.yml's worker and sim-llm).
func runHealthcheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("healthcheck", "healthcheck [--timeout 3s] URL", stderr)
	timeout := fs.Duration("timeout", 3*time.Second, "give up after this long")
	pos, help, err := parseInterspersed(fs, args)
	if help || err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{errors.New("healthcheck: give exactly one URL, e.g. http://127.0.0.1:8081/healthz")}
	}
	url := pos[0]
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	body, err := serve.Probe(ctx, url)
	var bad serve.BadURLError
	if errors.As(err, &bad) {
		return usageError{fmt.Errorf("healthcheck: %w", err)}
	}
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	fmt.Fprintf(stdout, "%s", body)
	return nil
}
