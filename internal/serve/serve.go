// Package serve holds what skillfleet's processes serve beside their
// work, and the rule that guards it: an endpoint beyond loopback needs TLS
// (mutual TLS for the coordinator's gRPC service, since whoever reaches
// it can report results into a run) or the operator's explicit consent,
// which is logged. It serves the HTTP endpoints (health, status) over TLS
// when given a configuration.
package serve

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Exposure is what a process serves and talks to, for [Check].
type Exposure struct {
	// GRPCAddr is the gRPC service's listen address ("" = none);
	// GRPCMutualTLS says it requires client certificates.
	GRPCAddr      string
	GRPCMutualTLS bool
	// Health and Metrics are the HTTP endpoints' listen addresses ("" =
	// not served); HTTPTLS says they are served over TLS.
	Health, Metrics string
	HTTPTLS         bool
	// Insecure is the operator's consent to serve in plaintext beyond
	// loopback, endpoint by endpoint (the --insecure-* flags).
	Insecure Insecure
	// Peers are the servers the process connects to.
	Peers []Peer
}

// Insecure lets an endpoint listen beyond loopback without TLS.
type Insecure struct{ GRPC, Health, Metrics bool }

// Peer is a server the process connects to.
type Peer struct {
	What  string // "NATS", "Redis", "the coordinator"
	Addr  string // URL(s) or host:port; credentials are never printed
	TLS   bool
	Flags string // the flags that turn TLS on
}

// Check refuses an endpoint beyond loopback without TLS (one line naming
// the flags) unless its Insecure consent is given, logs each insecure
// exposure at warn level, and warns about plaintext connections to
// servers beyond loopback. Call it before anything listens or connects.
func Check(log *slog.Logger, e Exposure) error {
	if e.GRPCAddr != "" && !bindsLoopback(e.GRPCAddr, false) {
		switch {
		case e.GRPCMutualTLS:
		case e.Insecure.GRPC:
			log.Warn("gRPC listens beyond loopback without mutual TLS (--insecure-grpc): anyone who can reach it can report results into the run", "grpc_addr", e.GRPCAddr)
		default:
			return fmt.Errorf("--grpc-addr %s listens beyond loopback without mutual TLS: give --grpc-tls-cert, --grpc-tls-key and --grpc-client-ca, or pass --insecure-grpc to accept results from anyone who can reach it", e.GRPCAddr)
		}
	}
	for _, ep := range []struct {
		flag, addr, insecureFlag string
		insecure, bareLoopback   bool
	}{
		{"--health-addr", e.Health, "--insecure-health", e.Insecure.Health, false},
		// A bare metrics port binds 127.0.0.1 (pkg/telemetry).
		{"--metrics-addr", e.Metrics, "--insecure-metrics", e.Insecure.Metrics, true},
	} {
		if ep.addr == "" || e.HTTPTLS || bindsLoopback(ep.addr, ep.bareLoopback) {
			continue
		}
		if !ep.insecure {
			return fmt.Errorf("%s %s listens beyond loopback without TLS: give --http-tls-cert and --http-tls-key, or pass %s to serve it in plaintext to anyone who can reach it", ep.flag, ep.addr, ep.insecureFlag)
		}
		log.Warn("serving in plaintext beyond loopback", "flag", ep.flag, "addr", ep.addr, "because", ep.insecureFlag)
	}
	for _, p := range e.Peers {
		if p.Addr == "" || p.TLS {
			continue
		}
		if host := remoteHost(p.Addr); host != "" {
			log.Warn("connecting beyond loopback without TLS: what travels on the link can be read and altered on the network", "to", p.What, "host", host, "tls_flags", p.Flags)
		}
	}
	return nil
}

// HTTP serves h on addr (over TLS when conf is set) until stop is called.
// It returns once the listener is bound.
func HTTP(ctx context.Context, addr string, h http.Handler, conf *tls.Config, log *slog.Logger) (stop func(), bound net.Addr, err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	if conf != nil {
		ln = tls.NewListener(ln, conf)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http endpoint stopped", "addr", addr, "err", err)
		}
	}()
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-done
	}, ln.Addr(), nil
}

// bindsLoopback reports whether listening on addr stays on loopback. An
// empty host or an unspecified address binds every interface, except a
// bare port where bareLoopback says it binds 127.0.0.1.
func bindsLoopback(addr string, bareLoopback bool) bool {
	if bareLoopback && !strings.Contains(addr, ":") {
		return true
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "" {
		return bareLoopback
	}
	return isLoopbackHost(host)
}

// remoteHost returns the first host of a URL list (comma-separated, as
// NATS takes it) or host:port that is not loopback, without credentials;
// "" when every host is loopback.
func remoteHost(addrs string) string {
	for _, a := range strings.Split(addrs, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		host := a
		if strings.Contains(a, "://") {
			u, err := url.Parse(a)
			if err != nil {
				return "(unparsable address)"
			}
			host = u.Hostname()
		} else if h, _, err := net.SplitHostPort(a); err == nil {
			host = h
		}
		if !isLoopbackHost(host) {
			return host
		}
	}
	return ""
}

// isLoopbackHost: localhost, a loopback IP, or a name that resolves only
// to loopback addresses.
func isLoopbackHost(host string) bool {
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback()
	}
	if host == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil || len(ips) == 0 {
		return false
	}
	for _, ip := range ips {
		if !ip.IP.IsLoopback() {
			return false
		}
	}
	return true
}
