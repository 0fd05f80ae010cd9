package officeqa

import (
	"time"

	"github.com/skillfleet/skillfleet/pkg/bench"
)

// SetSearchBackoff shortens the wait between search retries for tests.
func SetSearchBackoff(e bench.Env, d time.Duration) {
	e.(*Env).search.backoff = d
}
