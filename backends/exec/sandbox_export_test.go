package exec

import "net"

// SetProxyDial points the egress proxy's upstream dials elsewhere for the
// test (a TLS sim-llm on the loopback standing for a remote endpoint).
func SetProxyDial(f func(target string) (net.Conn, error)) (restore func()) {
	old := proxyDial
	proxyDial = f
	return func() { proxyDial = old }
}

// ProxyStats reports the Client's egress proxy: tunnels opened to the
// endpoint and targets refused.
func (c *Client) ProxyStats() (tunnels int, refused []string) {
	p := c.sb.proxy
	if p == nil {
		return 0, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tunnels, append([]string(nil), p.refused...)
}
