package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"google.golang.org/grpc"

	"github.com/skillfleet/skillfleet/coordinator"
)

// endpointPort is --grpc-port: a port, or a range FIRST-LAST of which
// FIRST is used (the range once held one port per running cell); empty is
// any free port.
func endpointPort(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	if strings.Contains(s, "-") {
		list, err := portRange(s)
		if err != nil {
			return 0, err
		}
		return list[0], nil
	}
	p, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || p < 1 || p > 65535 {
		return 0, fmt.Errorf("%q is not a port", s)
	}
	return p, nil
}

// endpoint starts the campaign's one gRPC endpoint, which serves every
// cell this process runs, on --grpc-host and port (the exposure is
// checked before).
func (o campaignOpts) endpoint(ctx context.Context, nc *nats.Conn, port int, opts []grpc.ServerOption, log *slog.Logger) (*coordinator.Endpoint, error) {
	addr := net.JoinHostPort(o.grpcHost, strconv.Itoa(port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("campaign: listen %s: %w", addr, err)
	}
	ep, err := coordinator.NewEndpoint(ctx, coordinator.EndpointOptions{
		Logger: log, NC: nc, Listener: ln, ServerOptions: opts, Advertise: o.advertise, Replicas: o.nats.replicas,
	})
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	return ep, nil
}
