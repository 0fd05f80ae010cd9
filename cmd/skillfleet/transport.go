package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"

	"github.com/nats-io/nats.go"

	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/store/redisstore"
	"github.com/skillfleet/skillfleet/pkg/tlsconf"
)

// natsFlags are the NATS client's credentials and TLS settings. Secrets
// come from files or the environment, never from a flag's value.
type natsFlags struct {
	auth queue.Auth
	// replicas is --nats-replicas: the servers of a NATS cluster that keep
	// the task stream and the run directory (0 = their current count).
	replicas int
}

func (n *natsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&n.auth.CredsFile, "nats-creds", "", "NATS credentials file (user JWT + nkey seed)")
	fs.StringVar(&n.auth.NKeyFile, "nats-nkey", "", "file holding a NATS user nkey seed (SU...)")
	fs.StringVar(&n.auth.User, "nats-user", "", "NATS user name; its password from --nats-password-file, $SKILLFLEET_NATS_PASSWORD_FILE or $SKILLFLEET_NATS_PASSWORD")
	fs.StringVar(&n.auth.PasswordFile, "nats-password-file", "", "file holding the NATS user's password")
	fs.StringVar(&n.auth.TLS.CA, "nats-ca", "", "CA file verifying the NATS server (turns on TLS)")
	fs.StringVar(&n.auth.TLS.Cert, "nats-tls-cert", "", "client certificate for NATS (mutual TLS)")
	fs.StringVar(&n.auth.TLS.Key, "nats-tls-key", "", "client key for NATS (mutual TLS)")
	fs.IntVar(&n.replicas, "nats-replicas", 0, "servers of a NATS cluster that keep the task stream and run directory, at most the cluster's size (default runtime.nats_replicas; 0 = keep the current count, 1 for new ones)")
}

// options returns the nats.Options the flags ask for.
func (n natsFlags) options() ([]nats.Option, error) {
	if err := queue.CheckReplicas(n.replicas, "--nats-replicas"); err != nil {
		return nil, err
	}
	return n.auth.Options()
}

// redisFlags locate and secure the shared store.
type redisFlags struct {
	url, passwordFile string
	tls               tlsconf.Files
}

func (r *redisFlags) register(fs *flag.FlagSet, use string) {
	fs.StringVar(&r.url, "redis", "", "shared store redis://[USER@]HOST:PORT/DB (rediss:// for TLS): "+use+"; the password only from --redis-password-file, $SKILLFLEET_REDIS_PASSWORD_FILE or $SKILLFLEET_REDIS_PASSWORD")
	fs.StringVar(&r.passwordFile, "redis-password-file", "", "file holding the Redis password")
	fs.StringVar(&r.tls.CA, "redis-ca", "", "CA file verifying the Redis server (turns on TLS)")
	fs.StringVar(&r.tls.Cert, "redis-tls-cert", "", "client certificate for Redis (mutual TLS)")
	fs.StringVar(&r.tls.Key, "redis-tls-key", "", "client key for Redis (mutual TLS)")
}

// open connects to the shared store (see [redisstore.Open]). The password
// comes from --redis-password-file or the environment, never from a flag
// value.
func (r redisFlags) open(ctx context.Context, log *slog.Logger) (*redisstore.Store, error) {
	o := redisstore.Options{URL: r.url, PasswordFile: r.passwordFile}
	if r.tls.Enabled() {
		c, err := r.tls.Client()
		if err != nil {
			return nil, fmt.Errorf("--redis-ca/--redis-tls-*: %w", err)
		}
		o.TLS = c
	}
	st, err := redisstore.Open(ctx, o, log)
	if err != nil {
		return nil, fmt.Errorf("--redis: %w", err)
	}
	return st, nil
}
