package queue

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// EmbeddedOptions configures an in-process nats-server.
type EmbeddedOptions struct {
	// StoreDir holds JetStream data; empty means a new temp dir removed on Shutdown.
	StoreDir string
	// Listen makes the server accept TCP clients on Host:Port (Port -1 = any
	// free port). Without it the server has no socket at all and only
	// in-process clients connect.
	Listen bool
	Host   string
	Port   int
	// MaxStore bounds JetStream file storage (default 8 GiB).
	MaxStore int64
	Logger   *slog.Logger
	// TLS, when set, makes the server require TLS from every client (with
	// ClientCAs and RequireAndVerifyClientCert in it: mutual TLS).
	TLS *tls.Config
	// Nkeys are user public keys (U...) allowed to connect; Username and
	// Password a user/password pair. With neither, no authentication.
	Nkeys              []string
	Username, Password string
	// ServerName names the server (default "skillfleet-embedded"). Every
	// node of a cluster needs its own.
	ServerName string
	// Cluster, when set, makes the server one node of a JetStream cluster.
	Cluster *ClusterOptions
	// MaxPayload is the largest message the server takes (0: 8 MiB; below
	// 0: nats-server's default of 1 MB, as an external server has unless
	// configured).
	MaxPayload int32
}

// ClusterOptions make an embedded server a node of a JetStream cluster.
// A cluster of N nodes keeps a stream of R replicas (R <= N) through the
// loss of (R-1)/2 of them.
type ClusterOptions struct {
	// Name is the cluster's name, the same on every node.
	Name string
	// Host and Port are where the node listens for routes from the other
	// nodes (Port -1 = any free port).
	Host string
	Port int
	// Routes are the other nodes' route URLs (nats://HOST:PORT). One
	// reachable node is enough: the others are learned from it.
	Routes []string
}

// Embedded is a running in-process nats-server with JetStream.
type Embedded struct {
	srv     *server.Server
	tempDir string
}

// StartEmbedded starts a nats-server inside this process and waits until it
// accepts connections.
func StartEmbedded(o EmbeddedOptions) (*Embedded, error) {
	e := &Embedded{}
	if o.StoreDir == "" {
		d, err := os.MkdirTemp("", "skillfleet-nats-")
		if err != nil {
			return nil, fmt.Errorf("embedded nats: %w", err)
		}
		o.StoreDir, e.tempDir = d, d
	}
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if o.Port == 0 {
		o.Port = -1
	}
	if o.MaxStore == 0 {
		o.MaxStore = 8 << 30
	}
	if o.ServerName == "" {
		o.ServerName = "skillfleet-embedded"
	}
	opts := &server.Options{
		ServerName:         o.ServerName,
		Host:               o.Host,
		Port:               o.Port,
		DontListen:         !o.Listen,
		JetStream:          true,
		StoreDir:           o.StoreDir,
		JetStreamMaxStore:  o.MaxStore,
		JetStreamMaxMemory: 1 << 30,
		NoSigs:             true,
		NoLog:              o.Logger == nil,
		MaxPayload:         8 << 20,
	}
	if o.MaxPayload > 0 {
		opts.MaxPayload = o.MaxPayload
	} else if o.MaxPayload < 0 {
		opts.MaxPayload = 0 // the server's default
	}
	if o.TLS != nil {
		opts.TLSConfig = o.TLS
		opts.TLSTimeout = 5
		opts.TLSVerify = o.TLS.ClientAuth == tls.RequireAndVerifyClientCert
	}
	if c := o.Cluster; c != nil {
		if c.Name == "" || len(c.Routes) == 0 {
			e.cleanup()
			return nil, errors.New("embedded nats: a cluster node needs the cluster's name and its routes (they may include its own)")
		}
		if c.Host == "" {
			c.Host = o.Host
		}
		if c.Port == 0 {
			c.Port = -1
		}
		opts.Cluster = server.ClusterOpts{Name: c.Name, Host: c.Host, Port: c.Port}
		for _, r := range c.Routes {
			u, err := url.Parse(r)
			if err != nil || u.Host == "" {
				e.cleanup()
				return nil, fmt.Errorf("embedded nats: route %q: want nats://HOST:PORT", r)
			}
			opts.Routes = append(opts.Routes, u)
		}
	}
	for _, k := range o.Nkeys {
		opts.Nkeys = append(opts.Nkeys, &server.NkeyUser{Nkey: k})
	}
	if o.Username != "" {
		opts.Users = append(opts.Users, &server.User{Username: o.Username, Password: o.Password})
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		e.cleanup()
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	if o.Logger != nil {
		srv.SetLoggerV2(&slogAdapter{log: o.Logger}, false, false, false)
	}
	srv.Start()
	if !srv.ReadyForConnections(15 * time.Second) {
		srv.Shutdown()
		e.cleanup()
		return nil, errors.New("embedded nats: not ready after 15s")
	}
	e.srv = srv
	return e, nil
}

// URL is the client URL, or "" when the server does not listen.
func (e *Embedded) URL() string {
	if e.srv.ClientURL() == "" {
		return ""
	}
	u := e.srv.ClientURL()
	if _, err := url.Parse(u); err != nil {
		return ""
	}
	return u
}

// ClusterURL is the URL other nodes route to, or "" when the server is
// not a cluster node.
func (e *Embedded) ClusterURL() string {
	a := e.srv.ClusterAddr()
	if a == nil {
		return ""
	}
	return "nats://" + a.String()
}

// Name is the server's name, as JetStream's cluster info reports it.
func (e *Embedded) Name() string { return e.srv.Name() }

// Connect opens an in-process client connection.
func (e *Embedded) Connect(name string, extra ...nats.Option) (*nats.Conn, error) {
	opts := append([]nats.Option{nats.Name(name), nats.InProcessServer(e.srv), nats.MaxReconnects(-1)}, extra...)
	nc, err := nats.Connect("", opts...)
	if err != nil {
		return nil, fmt.Errorf("connect embedded nats: %w", err)
	}
	return nc, nil
}

// Traffic is the server's message counts since it started: messages
// clients sent it and messages it delivered.
func (e *Embedded) Traffic() (in, out int64) {
	v, err := e.srv.Varz(nil)
	if err != nil {
		return 0, 0
	}
	return v.InMsgs, v.OutMsgs
}

// Shutdown stops the server and removes a temp store.
func (e *Embedded) Shutdown() {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
	e.cleanup()
}

func (e *Embedded) cleanup() {
	if e.tempDir != "" {
		_ = os.RemoveAll(e.tempDir)
	}
}

// slogAdapter lets the embedded server log through slog.
type slogAdapter struct{ log *slog.Logger }

func (a *slogAdapter) Noticef(format string, v ...any) {
	a.log.Debug("nats: " + fmt.Sprintf(format, v...)) //nolint:sloglint // server messages are preformatted
}
func (a *slogAdapter) Warnf(format string, v ...any) {
	a.log.Warn("nats: " + fmt.Sprintf(format, v...)) //nolint:sloglint // server messages are preformatted
}
func (a *slogAdapter) Fatalf(format string, v ...any) {
	a.log.Error("nats: " + fmt.Sprintf(format, v...)) //nolint:sloglint // server messages are preformatted
}
func (a *slogAdapter) Errorf(format string, v ...any) {
	a.log.Error("nats: " + fmt.Sprintf(format, v...)) //nolint:sloglint // server messages are preformatted
}
func (a *slogAdapter) Debugf(string, ...any) {}
func (a *slogAdapter) Tracef(string, ...any) {}

// redactURL hides the passwords of a NATS URL or comma-separated list of
// URLs (one per server of a cluster). A part that does not parse is
// replaced whole, since it may hold a password.
func redactURL(s string) string {
	parts := strings.Split(s, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		u, err := url.Parse(p)
		switch {
		case err != nil:
			parts[i] = "(unparsable URL)"
		case u.User != nil:
			parts[i] = u.Redacted()
		default:
			parts[i] = p
		}
	}
	return strings.Join(parts, ",")
}
