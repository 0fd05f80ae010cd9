package main

import (
	"flag"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

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

// options returns the gRPC server options (none without TLS).
func (g grpcServerTLS) options() ([]grpc.ServerOption, error) {
	if !g.enabled() {
		return nil, nil
	}
	c, err := tlsconf.Files{CA: g.clientCA, Cert: g.cert, Key: g.key}.Server(g.clientCA != "")
	if err != nil {
		return nil, fmt.Errorf("--grpc-tls-*: %w", err)
	}
	return []grpc.ServerOption{grpc.Creds(credentials.NewTLS(c))}, nil
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
		return []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, nil
	}
	c, err := f.Client()
	if err != nil {
		return nil, fmt.Errorf("--coordinator-ca/--tls-*: %w", err)
	}
	return []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(c))}, nil
}
