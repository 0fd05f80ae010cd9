package exec

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestConnectProxyAllowsOnlyTheEndpoint: a CONNECT to the allowed
// host:port is tunnelled byte for byte; a CONNECT elsewhere, a CONNECT
// to the right host on another port and a plain proxied GET get 403
// and no upstream connection.
func TestConnectProxyAllowsOnlyTheEndpoint(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	dials := 0
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }() // echo until the client hangs up
		}
	}()
	old := proxyDial
	proxyDial = func(target string) (net.Conn, error) { dials++; return net.Dial("tcp", up.Addr().String()) }
	defer func() { proxyDial = old }()
	p, err := startConnectProxy("api.example.com:443")
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()

	c, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c, "CONNECT API.example.com:443 HTTP/1.1\r\nHost: API.example.com:443\r\n\r\nhello"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("allowed CONNECT: %v %v", resp, err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "hello" {
		t.Fatalf("tunnel echoed %q, %v", buf, err)
	}
	c.Close()
	for _, req := range []string{
		"CONNECT evil.example.net:443 HTTP/1.1\r\nHost: evil.example.net:443\r\n\r\n",
		"CONNECT api.example.com:22 HTTP/1.1\r\nHost: api.example.com:22\r\n\r\n",
		"GET http://api.example.com:443/v1/models HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n",
	} {
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 403 {
			t.Errorf("%q: %v %v, want 403", strings.SplitN(req, "\r\n", 2)[0], resp, err)
		}
		c.Close()
	}
	if dials != 1 {
		t.Errorf("%d upstream dials, want 1 (the allowed tunnel)", dials)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tunnels != 1 || len(p.refused) != 3 {
		t.Errorf("tunnels %d refused %v", p.tunnels, p.refused)
	}
}
