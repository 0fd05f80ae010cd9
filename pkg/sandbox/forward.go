package sandbox

// Forwards: the loopback-only network mode. A NetNone sandbox has only
// its own loopback; each Forward makes one host endpoint (a model API, a
// local proxy) reachable at 127.0.0.1:Port inside it and nothing else.
// Inside, a forwarder (this executable again, see RunForwarder) listens on the
// port and passes each connection through a Unix socket bound into the
// sandbox; outside, the worker dials the target for each connection.

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Forward is one host endpoint offered inside the sandbox.
type Forward struct {
	Port   int    // on the sandbox's loopback (127.0.0.1)
	Target string // host:port the worker dials, e.g. "127.0.0.1:8089" or "api.example.com:443"
}

const (
	forwardEnv   = "SKILLFLEET_SANDBOX_FORWARD"
	forwardDir   = "/run/sandbox-forward"
	forwardReady = "/tmp/.sandbox-forward-ready"
)

// forwarderServed records that this binary calls [RunForwarder] before
// anything else: only then may a run with forwards start this executable
// again as the forwarder.
var forwarderServed atomic.Bool

// RunForwarder makes this process the in-sandbox forwarder if it was
// started as one (a sandbox run with Forwards starts this executable again
// inside the sandbox): it serves the forwards until killed, or returns
// isForwarder true and the exit code when it cannot listen. Otherwise it
// returns isForwarder false at once. A binary that runs sandboxes with
// Forwards calls it first thing in main, a test binary in TestMain:
//
//	if code, ok := sandbox.RunForwarder(); ok {
//		os.Exit(code)
//	}
//
// Without that call a run with Forwards fails rather than start a binary
// that would not act as the forwarder.
func RunForwarder() (exitCode int, isForwarder bool) {
	forwarderServed.Store(true)
	spec := os.Getenv(forwardEnv)
	if spec == "" {
		return 0, false
	}
	if err := forwarderMain(spec); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox forwarder:", err)
	}
	return 2, true
}

// forwarderMain listens on each "port=socket" pair of spec and copies
// every connection to the Unix socket; it runs until killed, or returns
// why it cannot listen.
func forwarderMain(spec string) error {
	for _, pair := range strings.Split(spec, ",") {
		port, sock, ok := strings.Cut(pair, "=")
		if !ok {
			return fmt.Errorf("bad pair %s", pair)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+port)
		if err != nil {
			return err
		}
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					u, err := net.Dial("unix", sock)
					if err != nil {
						c.Close()
						return
					}
					Splice(c, u)
				}()
			}
		}()
	}
	if f, err := os.Create(forwardReady); err == nil {
		_ = f.Close() // an empty marker: that it exists is the signal
	}
	select {}
}

// Splice copies bytes between a and b both ways, then closes both. Each
// direction ends when its source ends or fails; its destination then gets
// EOF (a half-close where the connection has one) and the other direction
// runs on to its own end. Splice returns when both directions have ended.
func Splice(a, b net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src) // an error ends this direction like EOF does
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite() // the peer may have closed already: nothing to do
		}
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	<-done
	_ = a.Close()
	_ = b.Close()
}

// forwarding is the host side of a run's forwards.
type forwarding struct {
	dir       string
	listeners []net.Listener
	exe       *os.File
	spec      string
	wg        sync.WaitGroup
}

// startForwards listens on one Unix socket per forward in a fresh host
// directory (bound into the sandbox) and dials the target per connection.
func startForwards(fs []Forward) (*forwarding, error) {
	if !forwarderServed.Load() {
		return nil, errors.New("sandbox: forwards start this executable again as the forwarder, and its main does not call sandbox.RunForwarder")
	}
	exePath, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("sandbox forward: %w", err)
	}
	exe, err := os.Open(exePath)
	if err != nil {
		return nil, fmt.Errorf("sandbox forward: the forwarder (this executable): %w", err)
	}
	dir, err := os.MkdirTemp("", "skillfleet-forward-")
	if err != nil {
		_ = exe.Close() // only read
		return nil, err
	}
	f := &forwarding{dir: dir, exe: exe}
	if err := os.Chmod(dir, 0o711); err != nil { // a root worker's bwrap runs as nobody
		f.close()
		return nil, fmt.Errorf("sandbox forward: %w", err)
	}
	var pairs []string
	seen := map[int]bool{}
	for i, fw := range fs {
		if fw.Port <= 0 || fw.Port > 65535 || seen[fw.Port] {
			f.close()
			return nil, fmt.Errorf("sandbox forward %d: port %d is out of range or repeated", i, fw.Port)
		}
		if _, _, err := net.SplitHostPort(fw.Target); err != nil {
			f.close()
			return nil, fmt.Errorf("sandbox forward %d: target %q: %w", i, fw.Target, err)
		}
		seen[fw.Port] = true
		name := strconv.Itoa(i) + ".sock"
		ln, err := net.Listen("unix", filepath.Join(dir, name))
		if err != nil {
			f.close()
			return nil, fmt.Errorf("sandbox forward %d: %w", i, err)
		}
		f.listeners = append(f.listeners, ln)
		if err := os.Chmod(filepath.Join(dir, name), 0o777); err != nil {
			f.close()
			return nil, fmt.Errorf("sandbox forward %d: %w", i, err)
		}
		pairs = append(pairs, strconv.Itoa(fw.Port)+"="+path.Join(forwardDir, name))
		target := fw.Target
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					t, err := net.DialTimeout("tcp", target, 30*time.Second)
					if err != nil {
						c.Close()
						return
					}
					Splice(c, t)
				}()
			}
		}()
	}
	f.spec = strings.Join(pairs, ",")
	return f, nil
}

func (f *forwarding) close() {
	for _, ln := range f.listeners {
		ln.Close()
	}
	f.wg.Wait()
	_ = f.exe.Close() // only read
	os.RemoveAll(f.dir)
}

// script starts the forwarder (fd exeFD inside) and waits until it
// listens; if it exits first (a port it may not bind), the run ends at
// once with the forwarder's own error.
func (f *forwarding) script(exeFD int) string {
	return fmt.Sprintf("%s=%s /proc/self/fd/%d </dev/null >/dev/null 2>/tmp/.sandbox-forward-err &\n"+
		"fwd=$!; i=0; while [ ! -e %s ] && [ $i -lt 3000 ] && kill -0 $fwd 2>/dev/null; do sleep 0.01; i=$((i+1)); done\n"+
		"[ -e %s ] || { echo \"sandbox: the network forwarder did not start: $(cat /tmp/.sandbox-forward-err 2>/dev/null)\" >&2; exit 125; }\n",
		forwardEnv, shellQuote(f.spec), exeFD, forwardReady, forwardReady)
}

var errForwardNetwork = errors.New("sandbox: forwards need Network NetNone (with NetHost the host network is there anyway)")
