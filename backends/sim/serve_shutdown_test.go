package sim

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// pipeListener is a net.Listener whose connections are in-memory pipes,
// so that a server runs inside a synctest bubble on its fake clock.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// dial opens a connection to the server and sends nothing on it.
func (l *pipeListener) dial() net.Conn {
	client, server := net.Pipe()
	l.conns <- server
	return client
}

// A client that dialed for a call it then cancelled leaves a connection
// that never carries a request. Serve ends without the 5 seconds
// net/http's Shutdown gives such a connection: the end of every run
// waited for it.
func TestServeEndsWithoutWaitingForAnUnusedConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		ln := newPipeListener()
		done := make(chan error, 1)
		go func() {
			done <- Serve(ctx, ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
		}()
		conn := ln.dial()
		defer conn.Close()
		synctest.Wait()
		start := time.Now()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took >= time.Second {
			t.Errorf("Serve took %v to end with an unused connection open, want well under net/http's 5s", took)
		}
		// The server closed its end: the client sees the connection end.
		if _, err := conn.Read(make([]byte, 1)); err == nil {
			t.Error("the unused connection is still open")
		}
	})
}
