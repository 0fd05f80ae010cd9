package exec

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/skillfleet/skillfleet/pkg/sandbox"
)

// proxyPort is where a sandboxed agent finds its HTTPS_PROXY (on the
// sandbox's own loopback, forwarded to the worker's connectProxy).
const proxyPort = 3128

// proxyDial opens the tunnel's upstream connection (tests point it at a
// local server).
var proxyDial = func(target string) (net.Conn, error) { return net.DialTimeout("tcp", target, 30*time.Second) }

// connectProxy is an HTTP CONNECT proxy on the worker's loopback that
// opens tunnels to one host:port (the agent's model endpoint) and refuses
// every other target with 403. It never sees the TLS inside the tunnel.
type connectProxy struct {
	ln      net.Listener
	addr    string
	allowed string
	wg      sync.WaitGroup
	mu      sync.Mutex
	refused []string // targets refused, for tests and errors
	tunnels int      // tunnels opened to the allowed target
}

// connectProxy returns the Client's proxy for target, started once.
func (c *Client) connectProxy(target string) (*connectProxy, error) {
	c.proxyMu.Lock()
	defer c.proxyMu.Unlock()
	if c.sb.proxy != nil {
		return c.sb.proxy, nil
	}
	p, err := startConnectProxy(target)
	if err != nil {
		return nil, fmt.Errorf("agent sandbox: egress proxy: %w", err)
	}
	c.sb.proxy = p
	return p, nil
}

func startConnectProxy(allowed string) (*connectProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &connectProxy{ln: ln, addr: ln.Addr().String(), allowed: strings.ToLower(allowed)}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(conn)
		}
	}()
	return p, nil
}

func (p *connectProxy) serve(conn net.Conn) {
	if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		conn.Close()
		return
	}
	br := bufio.NewReader(conn)
	req, err := http.ReadRequest(br)
	if err != nil {
		conn.Close()
		return
	}
	target := strings.ToLower(req.Host)
	if req.Method != http.MethodConnect || target != p.allowed {
		p.mu.Lock()
		p.refused = append(p.refused, req.Method+" "+req.Host)
		p.mu.Unlock()
		fmt.Fprintf(conn, "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nskillfleet agent sandbox: only CONNECT %s is allowed\n", p.allowed)
		conn.Close()
		return
	}
	up, err := proxyDial(p.allowed)
	if err != nil {
		fmt.Fprintf(conn, "HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\n")
		conn.Close()
		return
	}
	p.mu.Lock()
	p.tunnels++
	p.mu.Unlock()
	if err := conn.SetReadDeadline(time.Time{}); err != nil {
		conn.Close()
		up.Close()
		return
	}
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		conn.Close()
		up.Close()
		return
	}
	// Bytes the client sent after the request line are the tunnel's.
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		if _, err := up.Write(b); err != nil {
			conn.Close()
			up.Close()
			return
		}
	}
	sandbox.Splice(conn, up)
}

func (p *connectProxy) close() {
	p.ln.Close()
	p.wg.Wait()
}
