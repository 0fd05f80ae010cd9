// Package storetest holds test helpers for pkg/store: [RedisServer] runs a
// real redis-server for a test, [Run] is the conformance suite every store
// implementation passes, and [Clock] is a fake clock for in-process stores.
package storetest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// EnvRedisServer names a redis-server binary to use instead of the one on PATH.
const EnvRedisServer = "SKILLFLEET_REDIS_SERVER"

// readyTimeout bounds the wait for a started redis-server to answer PING.
const readyTimeout = 10 * time.Second

// Server is a redis-server child process owned by one test. It listens on
// a unix socket in a temporary directory, or on a loopback TCP port with
// [TCP]; the address stays the same across [Server.Restart]. It persists
// nothing: a restart loses every key, as a Redis without persistence does.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	args []string

	network, addr string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// ServerOption configures [RedisServer].
type ServerOption func(*Server)

// TCP makes the server listen on a free loopback TCP port instead of a
// unix socket (for clients in other processes or network namespaces).
func TCP() ServerOption { return func(s *Server) { s.network = "tcp" } }

// Args appends redis-server arguments (--requirepass, TLS settings, ...).
func Args(args ...string) ServerOption {
	return func(s *Server) { s.args = append(s.args, args...) }
}

// RedisServer starts a redis-server that is killed when the test ends. If
// no binary is found (PATH or $SKILLFLEET_REDIS_SERVER) the test is
// skipped, or failed when the CI environment variable is set.
func RedisServer(t testing.TB, opts ...ServerOption) *Server {
	t.Helper()
	bin := os.Getenv(EnvRedisServer)
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("redis-server"); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("redis-server not found (CI is set, so this is a failure): %v", err)
			}
			t.Skipf("redis-server not found, skipping: %v", err)
		}
	}
	s := &Server{t: t, bin: bin, dir: shortTempDir(t), network: "unix"}
	for _, o := range opts {
		o(s)
	}
	t.Cleanup(s.Kill)
	if s.network == "unix" {
		s.addr = filepath.Join(s.dir, "redis.sock")
		s.start()
		return s
	}
	// A free port can be taken between our probe and redis's bind: retry.
	var err error
	for range 5 {
		s.addr = freeLoopbackAddr(t)
		if err = s.tryStart(); err == nil {
			return s
		}
	}
	t.Fatalf("start redis-server: %v", err)
	return nil
}

// shortTempDir returns t.TempDir() unless its path is too long for a unix
// socket (108 bytes on Linux), then a shorter directory under os.TempDir.
func shortTempDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if len(dir) < 90 {
		return dir
	}
	dir, err := os.MkdirTemp("", "redis")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func freeLoopbackAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("probe free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Network is "unix" or "tcp".
func (s *Server) Network() string { return s.network }

// Addr is the socket path or host:port; redisstore.Options{Addr: ...}
// accepts either.
func (s *Server) Addr() string { return s.addr }

// URL is the server's redis:// or unix:// URL.
func (s *Server) URL() string {
	if s.network == "unix" {
		return "unix://" + s.addr
	}
	return "redis://" + s.addr
}

// Start starts the server again after [Server.Kill], on the same address.
func (s *Server) Start() {
	s.t.Helper()
	s.start()
}

func (s *Server) start() {
	s.t.Helper()
	if err := s.tryStart(); err != nil {
		s.t.Fatalf("start redis-server: %v", err)
	}
}

func (s *Server) tryStart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return fmt.Errorf("redis-server already running")
	}
	args := []string{"--save", "", "--appendonly", "no", "--dir", s.dir, "--logfile", "redis.log"}
	if s.network == "unix" {
		args = append(args, "--port", "0", "--unixsocket", s.addr, "--unixsocketperm", "700")
	} else {
		host, port, _ := net.SplitHostPort(s.addr)
		args = append(args, "--port", port, "--bind", host)
	}
	cmd := exec.Command(s.bin, append(args, s.args...)...)
	cmd.Dir = s.dir
	setDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	deadline := time.Now().Add(readyTimeout)
	for {
		if err := ping(s.network, s.addr); err == nil {
			s.cmd, s.done = cmd, done
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("redis-server exited during start; its log:\n%s", s.log())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-done
			return fmt.Errorf("redis-server did not answer within %s; its log:\n%s", readyTimeout, s.log())
		}
	}
}

func (s *Server) log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	return string(b)
}

// ping sends an inline PING and expects a reply.
func ping(network, addr string) error {
	c, err := net.DialTimeout(network, addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	// +PONG, or an error such as -NOAUTH when the default user is off:
	// either way the server is serving.
	if !strings.HasPrefix(line, "+") && !strings.HasPrefix(line, "-") {
		return fmt.Errorf("ping: %q", line)
	}
	return nil
}

// Kill stops the server with SIGKILL (a crash, not a shutdown) and waits
// for it to exit. Killing a stopped server does nothing.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd, s.done = nil, nil
	if s.network == "unix" {
		_ = os.Remove(s.addr)
	}
}

// Restart kills the server and starts a new one on the same address.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	s.start()
}

// Pid returns the running server's process id, or 0.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Command runs one command on the server over a new connection and returns
// its reply as strings (an integer reply in decimal, an array element by
// element). It is for inspecting the server in tests, without credentials.
func (s *Server) Command(t testing.TB, args ...string) []string {
	t.Helper()
	c := redis.NewClient(&redis.Options{
		Network: s.network, Addr: s.addr, MaxRetries: -1,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	a := make([]any, len(args))
	for i, v := range args {
		a[i] = v
	}
	v, err := c.Do(ctx, a...).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatalf("redis %v: %v", args, err)
	}
	switch v := v.(type) {
	case nil:
		return nil
	case []any:
		out := make([]string, len(v))
		for i, e := range v {
			out[i] = fmt.Sprint(e)
		}
		return out
	default:
		return []string{fmt.Sprint(v)}
	}
}
