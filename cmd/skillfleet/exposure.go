package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/pkg/telemetry"
	"github.com/skillfleet/skillfleet/pkg/tlsconf"
)

// exposureFlags guard the endpoints a process serves: gRPC (the
// coordinator's results service), --health-addr and --metrics-addr. Beyond
// loopback each needs TLS — mutual TLS for gRPC, since whoever reaches it
// can report results into the run — or an explicit --insecure-* flag,
// which is logged at warn level. The HTTP endpoints share --http-tls-*.
type exposureFlags struct {
	http            tlsconf.Files
	insecureGRPC    bool
	insecureHealth  bool
	insecureMetrics bool

	// httpConf is the loaded --http-tls-* configuration (set by check).
	httpConf *tls.Config
}

func (x *exposureFlags) register(fs *flag.FlagSet, grpcServer bool) {
	fs.StringVar(&x.http.Cert, "http-tls-cert", "", "serve --health-addr and --metrics-addr over HTTPS with this certificate (PEM); needs --http-tls-key")
	fs.StringVar(&x.http.Key, "http-tls-key", "", "private key (PEM) of --http-tls-cert")
	fs.StringVar(&x.http.CA, "http-client-ca", "", "with --http-tls-cert: require client certificates signed by this CA on the HTTP endpoints")
	if grpcServer {
		fs.BoolVar(&x.insecureGRPC, "insecure-grpc", false, "let --grpc-addr listen beyond loopback without mutual TLS (anyone who reaches it can report results into the run)")
	}
	fs.BoolVar(&x.insecureHealth, "insecure-health", false, "let --health-addr listen beyond loopback without TLS")
	fs.BoolVar(&x.insecureMetrics, "insecure-metrics", false, "let --metrics-addr listen beyond loopback without TLS")
}

// exposure is what a process serves and talks to, for [exposureFlags.check].
type exposure struct {
	grpcAddr string // "" = no gRPC server
	grpcTLS  grpcServerTLS
	health   string
	metrics  string
	peers    []peer
}

// peer is a server the process connects to.
type peer struct {
	what  string // "NATS", "Redis", "the coordinator"
	addr  string // URL(s) or host:port; credentials are never printed
	tls   bool
	flags string // the flags that turn TLS on
}

// check refuses an endpoint beyond loopback without TLS (one line naming
// the flags) unless its --insecure-* flag is given, logs each insecure
// exposure at warn level, and warns about plaintext connections to
// servers beyond loopback. It loads --http-tls-* for the HTTP endpoints.
// Call it before anything listens or connects.
func (x *exposureFlags) check(log *slog.Logger, e exposure) error {
	if x.http.Enabled() {
		if x.http.Cert == "" || x.http.Key == "" {
			return errors.New("--http-tls-cert and --http-tls-key go together (--http-client-ca adds client certificates)")
		}
		c, err := x.http.Server(x.http.CA != "")
		if err != nil {
			return fmt.Errorf("--http-tls-*: %w", err)
		}
		x.httpConf = c
	}
	if e.grpcAddr != "" && !bindsLoopback(e.grpcAddr, false) {
		mtls := e.grpcTLS.cert != "" && e.grpcTLS.key != "" && e.grpcTLS.clientCA != ""
		switch {
		case mtls:
		case x.insecureGRPC:
			log.Warn("gRPC listens beyond loopback without mutual TLS (--insecure-grpc): anyone who can reach it can report results into the run", "grpc_addr", e.grpcAddr)
		default:
			return fmt.Errorf("--grpc-addr %s listens beyond loopback without mutual TLS: give --grpc-tls-cert, --grpc-tls-key and --grpc-client-ca, or pass --insecure-grpc to accept results from anyone who can reach it", e.grpcAddr)
		}
	}
	for _, ep := range []struct {
		flag, addr, insecureFlag string
		insecure, bareLoopback   bool
	}{
		{"--health-addr", e.health, "--insecure-health", x.insecureHealth, false},
		// A bare metrics port binds 127.0.0.1 (pkg/telemetry).
		{"--metrics-addr", e.metrics, "--insecure-metrics", x.insecureMetrics, true},
	} {
		if ep.addr == "" || x.httpConf != nil || bindsLoopback(ep.addr, ep.bareLoopback) {
			continue
		}
		if !ep.insecure {
			return fmt.Errorf("%s %s listens beyond loopback without TLS: give --http-tls-cert and --http-tls-key, or pass %s to serve it in plaintext to anyone who can reach it", ep.flag, ep.addr, ep.insecureFlag)
		}
		log.Warn("serving in plaintext beyond loopback", "flag", ep.flag, "addr", ep.addr, "because", ep.insecureFlag)
	}
	for _, p := range e.peers {
		if p.addr == "" || p.tls {
			continue
		}
		if host := remoteHost(p.addr); host != "" {
			log.Warn("connecting beyond loopback without TLS: what travels on the link can be read and altered on the network", "to", p.what, "host", host, "tls_flags", p.flags)
		}
	}
	return nil
}

// metricsTLS sets the telemetry's metrics endpoint to HTTPS when
// --http-tls-* are given (after check).
func (x exposureFlags) metricsTLS(o *telemetry.Options) { o.MetricsTLS = x.httpConf }

// serveHTTP serves srv on its Addr, over TLS when --http-tls-* are given.
func (x exposureFlags) serveHTTP(srv *http.Server, log *slog.Logger) {
	var err error
	if x.httpConf != nil {
		srv.TLSConfig = x.httpConf
		err = srv.ListenAndServeTLS("", "")
	} else {
		err = srv.ListenAndServe()
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error("http endpoint stopped", "addr", srv.Addr, "err", err)
	}
}

// listenHTTP listens on addr, with TLS when --http-tls-* are given.
func (x exposureFlags) listenHTTP(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil || x.httpConf == nil {
		return ln, err
	}
	return tls.NewListener(ln, x.httpConf), nil
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

// exposureOf is what train and coordinator serve and talk to.
func (o trainOpts) exposureOf() exposure {
	return exposure{
		grpcAddr: o.grpcAddr, grpcTLS: o.grpcTLS, health: o.healthAddr, metrics: o.metricsAddr,
		peers: []peer{natsPeer(o.natsURL, o.nats), redisPeer(o.redis)},
	}
}

// workerExposure is what a worker serves and talks to.
func workerExposure(health, metrics, natsURL string, n natsFlags, r redisFlags, coordinator string, c grpcClientTLS) exposure {
	return exposure{health: health, metrics: metrics, peers: []peer{
		natsPeer(natsURL, n), redisPeer(r),
		{what: "the coordinator", addr: coordinator, tls: c.ca != "", flags: "--coordinator-ca, --tls-cert and --tls-key"},
	}}
}

func natsPeer(u string, n natsFlags) peer {
	return peer{what: "NATS", addr: u, tls: n.tls.Enabled() || strings.HasPrefix(u, "tls://"), flags: "--nats-ca (and --nats-tls-cert, --nats-tls-key)"}
}

func redisPeer(r redisFlags) peer {
	return peer{what: "Redis", addr: r.url, tls: r.tls.Enabled() || strings.HasPrefix(r.url, "rediss://"), flags: "rediss:// and --redis-ca (and --redis-tls-cert, --redis-tls-key)"}
}
