package queue

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
)

// A publish written on a connection the server has just dropped fails
// with the socket's error; the client reconnects, so it is tried again
// rather than failing the task (a cell of a campaign failed on it when a
// NATS node was killed).
func TestBrokenConnectionIsTransient(t *testing.T) {
	reset := &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.ECONNRESET)}
	for _, err := range []error{
		reset,
		fmt.Errorf("nats: %w", reset),
		fmt.Errorf("flush: %w", syscall.EPIPE),
	} {
		if !Transient(err) {
			t.Errorf("Transient(%v) = false, want true", err)
		}
	}
	for _, err := range []error{errors.New("nats: maximum payload exceeded"), context.Canceled} {
		if Transient(err) {
			t.Errorf("Transient(%v) = true, want false", err)
		}
	}
	// A first error that is not transient comes back at once, untried.
	first := errors.New("nats: invalid subject")
	if _, err := PublishAsyncAgain(context.Background(), nil, nil, first); err != first {
		t.Errorf("PublishAsyncAgain(non-transient) = %v, want %v", err, first)
	}
}
