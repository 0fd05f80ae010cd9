package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"

	"github.com/skillfleet/skillfleet/internal/serve"
	"github.com/skillfleet/skillfleet/pkg/telemetry"
	"github.com/skillfleet/skillfleet/pkg/tlsconf"
)

// exposureFlags guard the endpoints a process serves (see package serve):
// --http-tls-* for the HTTP endpoints, --insecure-* to serve one in
// plaintext beyond loopback.
type exposureFlags struct {
	http     tlsconf.Files
	insecure serve.Insecure

	// httpConf is the loaded --http-tls-* configuration (set by check).
	httpConf *tls.Config
}

func (x *exposureFlags) register(fs *flag.FlagSet, grpcServer bool) {
	fs.StringVar(&x.http.Cert, "http-tls-cert", "", "serve --health-addr and --metrics-addr over HTTPS with this certificate (PEM); needs --http-tls-key")
	fs.StringVar(&x.http.Key, "http-tls-key", "", "private key (PEM) of --http-tls-cert")
	fs.StringVar(&x.http.CA, "http-client-ca", "", "with --http-tls-cert: require client certificates signed by this CA on the HTTP endpoints")
	if grpcServer {
		fs.BoolVar(&x.insecure.GRPC, "insecure-grpc", false, "let --grpc-addr listen beyond loopback without mutual TLS (anyone who reaches it can report results into the run)")
	}
	fs.BoolVar(&x.insecure.Health, "insecure-health", false, "let --health-addr listen beyond loopback without TLS")
	fs.BoolVar(&x.insecure.Metrics, "insecure-metrics", false, "let --metrics-addr listen beyond loopback without TLS")
}

// check loads --http-tls-* and applies serve.Check to e with the flags'
// consent. Call it before anything listens or connects.
func (x *exposureFlags) check(log *slog.Logger, e serve.Exposure) error {
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
	e.HTTPTLS, e.Insecure = x.httpConf != nil, x.insecure
	return serve.Check(log, e)
}

// metricsTLS sets the telemetry's metrics endpoint to HTTPS when
// --http-tls-* are given (after check).
func (x exposureFlags) metricsTLS(o *telemetry.Options) { o.MetricsTLS = x.httpConf }

// exposureOf is what train and coordinator serve and talk to.
func (o trainOpts) exposureOf() serve.Exposure {
	return serve.Exposure{
		GRPCAddr: o.grpcAddr, GRPCMutualTLS: o.grpcTLS.mutual(), Health: o.healthAddr, Metrics: o.metricsAddr,
		Peers: []serve.Peer{natsPeer(o.natsURL, o.nats), redisPeer(o.redis)},
	}
}

// workerExposure is what a worker serves and talks to.
func workerExposure(health, metrics, natsURL string, n natsFlags, r redisFlags, coordinator string, c grpcClientTLS) serve.Exposure {
	return serve.Exposure{Health: health, Metrics: metrics, Peers: []serve.Peer{
		natsPeer(natsURL, n), redisPeer(r),
		{What: "the coordinator", Addr: coordinator, TLS: c.ca != "", Flags: "--coordinator-ca, --tls-cert and --tls-key"},
	}}
}

func natsPeer(u string, n natsFlags) serve.Peer {
	return serve.Peer{What: "NATS", Addr: u, TLS: n.auth.TLS.Enabled() || strings.HasPrefix(u, "tls://"), Flags: "--nats-ca (and --nats-tls-cert, --nats-tls-key)"}
}

func redisPeer(r redisFlags) serve.Peer {
	return serve.Peer{What: "Redis", Addr: r.url, TLS: r.tls.Enabled() || strings.HasPrefix(r.url, "rediss://"), Flags: "rediss:// and --redis-ca (and --redis-tls-cert, --redis-tls-key)"}
}
