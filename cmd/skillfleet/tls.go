package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/skillfleet/skillfleet/pkg/tlsconf"
)

// grpcServerTLS are the coordinator's TLS flags.
type grpcServerTLS struct {
	cert, key, clientCA string
}

func (g *grpcServerTLS) register(fs *flag.FlagSet) {
	fs.StringVar(&g.cert, "grpc-tls-cert", "", "serve gRPC over TLS with this certificate (PEM); needs --grpc-tls-key")
	fs.StringVar(&g.key, "grpc-tls-key", "", "private key (PEM) of --grpc-tls-cert")
	fs.StringVar(&g.clientCA, "grpc-client-ca", "", "require worker certificates signed by this CA (mutual TLS)")
}

func (g grpcServerTLS) enabled() bool { return g.cert != "" || g.key != "" || g.clientCA != "" }

// mutual says the flags ask for mutual TLS.
func (g grpcServerTLS) mutual() bool { return g.cert != "" && g.key != "" && g.clientCA != "" }

// options returns the gRPC server options (none without TLS). A client
// that connects without TLS is logged to log with what to give it, at
// most once a minute.
func (g grpcServerTLS) options(log *slog.Logger) ([]grpc.ServerOption, error) {
	if !g.enabled() {
		return nil, nil
	}
	c, err := tlsconf.Files{CA: g.clientCA, Cert: g.cert, Key: g.key}.Server(g.clientCA != "")
	if err != nil {
		return nil, fmt.Errorf("--grpc-tls-*: %w", err)
	}
	return []grpc.ServerOption{grpc.Creds(&plaintextHint{TransportCredentials: credentials.NewTLS(c), log: log, last: new(atomic.Int64)})}, nil
}

// plaintextHint is the coordinator's TLS credentials, which say what to
// do when a worker connects without TLS (gRPC itself drops the connection
// without a word).
type plaintextHint struct {
	credentials.TransportCredentials
	log  *slog.Logger
	last *atomic.Int64 // unix nanoseconds of the last warning
}

// hintEvery bounds how often a client without TLS is logged.
const hintEvery = time.Minute

func (p *plaintextHint) ServerHandshake(c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := p.TransportCredentials.ServerHandshake(c)
	if err != nil && p.log != nil && strings.Contains(err.Error(), "does not look like a TLS handshake") {
		now, last := time.Now().UnixNano(), p.last.Load()
		if now-last >= int64(hintEvery) && p.last.CompareAndSwap(last, now) {
			p.log.Warn("a client connected to the gRPC endpoint without TLS; this coordinator serves TLS: start workers with --coordinator-ca CA.pem (and --tls-cert/--tls-key when it asks for client certificates)",
				"remote", c.RemoteAddr().String())
		}
	}
	return conn, info, err
}

func (p *plaintextHint) Clone() credentials.TransportCredentials {
	return &plaintextHint{TransportCredentials: p.TransportCredentials.Clone(), log: p.log, last: p.last}
}

// grpcClientTLS are a worker's TLS flags.
type grpcClientTLS struct {
	ca, cert, key, serverName string
}

func (g *grpcClientTLS) register(fs *flag.FlagSet) {
	fs.StringVar(&g.ca, "coordinator-ca", "", "connect to the coordinator over TLS, verifying it against this CA (PEM)")
	fs.StringVar(&g.cert, "tls-cert", "", "this worker's certificate (PEM) for mutual TLS; needs --tls-key")
	fs.StringVar(&g.key, "tls-key", "", "private key (PEM) of --tls-cert")
	fs.StringVar(&g.serverName, "tls-server-name", "", "name to verify in the coordinator's certificate (default: the host of --coordinator)")
}

// dialOptions returns the gRPC dial options (plaintext without TLS flags).
func (g grpcClientTLS) dialOptions() ([]grpc.DialOption, error) {
	f := tlsconf.Files{CA: g.ca, Cert: g.cert, Key: g.key, ServerName: g.serverName}
	if !f.Enabled() {
		return append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, tlsHints(false)...), nil
	}
	c, err := f.Client()
	if err != nil {
		return nil, fmt.Errorf("--coordinator-ca/--tls-*: %w", err)
	}
	return append([]grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(c))}, tlsHints(true)...), nil
}

// tlsHints add to a call's error what to do when the worker and the
// coordinator disagree on TLS: a plaintext worker meets a TLS coordinator
// as "error reading server preface", a TLS worker meets a plaintext one
// as "first record does not look like a TLS handshake".
func tlsHints(withTLS bool) []grpc.DialOption {
	hint := func(err error) error {
		if err == nil {
			return nil
		}
		msg := err.Error()
		var add string
		switch {
		case !withTLS && strings.Contains(msg, "server preface"):
			add = "the coordinator may serve TLS: give this worker --coordinator-ca CA.pem (and --tls-cert/--tls-key for mutual TLS)"
		case withTLS && strings.Contains(msg, "does not look like a TLS handshake"):
			add = "the coordinator serves plaintext: drop --coordinator-ca, or start the coordinator with --grpc-tls-cert/--grpc-tls-key"
		default:
			return err
		}
		st, _ := status.FromError(err)
		return status.Error(st.Code(), st.Message()+" ("+add+")")
	}
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return hint(invoker(ctx, method, req, reply, cc, opts...))
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			s, err := streamer(ctx, desc, cc, method, opts...)
			return s, hint(err)
		}),
	}
}
