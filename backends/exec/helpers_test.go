package exec_test

import (
	"context"
	"testing"
)

var context_DeadlineExceeded = context.DeadlineExceeded

func context_WithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithCancel(t.Context())
}
