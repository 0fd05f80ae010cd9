package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/store/redisstore"
	"github.com/skillfleet/skillfleet/pkg/tlsconf"
)

// natsFlags are the NATS client's credentials and TLS settings. Secrets
// come from files or the environment, never from a flag's value.
type natsFlags struct {
	creds, nkey, user, passwordFile string
	tls                             tlsconf.Files
	// replicas is --nats-replicas: the servers of a NATS cluster that keep
	// the task stream and the run directory (0 = their current count).
	replicas int
}

func (n *natsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&n.creds, "nats-creds", "", "NATS credentials file (user JWT + nkey seed)")
	fs.StringVar(&n.nkey, "nats-nkey", "", "file holding a NATS user nkey seed (SU...)")
	fs.StringVar(&n.user, "nats-user", "", "NATS user name; its password from --nats-password-file, $SKILLFLEET_NATS_PASSWORD_FILE or $SKILLFLEET_NATS_PASSWORD")
	fs.StringVar(&n.passwordFile, "nats-password-file", "", "file holding the NATS user's password")
	fs.StringVar(&n.tls.CA, "nats-ca", "", "CA file verifying the NATS server (turns on TLS)")
	fs.StringVar(&n.tls.Cert, "nats-tls-cert", "", "client certificate for NATS (mutual TLS)")
	fs.StringVar(&n.tls.Key, "nats-tls-key", "", "client key for NATS (mutual TLS)")
	fs.IntVar(&n.replicas, "nats-replicas", 0, "servers of a NATS cluster that keep the task stream and run directory, at most the cluster's size (default runtime.nats_replicas; 0 = keep the current count, 1 for new ones)")
}

// replicasOr is --nats-replicas when given, else the config's count.
func (n natsFlags) replicasOr(config int) int {
	if n.replicas > 0 {
		return n.replicas
	}
	return config
}

// options returns the nats.Options the flags ask for.
func (n natsFlags) options() ([]nats.Option, error) {
	if err := queue.CheckReplicas(n.replicas, "--nats-replicas"); err != nil {
		return nil, err
	}
	var opts []nats.Option
	set := 0
	if n.creds != "" {
		if _, err := os.Stat(n.creds); err != nil {
			return nil, fmt.Errorf("--nats-creds: %w", err)
		}
		opts = append(opts, nats.UserCredentials(n.creds))
		set++
	}
	if n.nkey != "" {
		o, err := nats.NkeyOptionFromSeed(n.nkey)
		if err != nil {
			return nil, fmt.Errorf("--nats-nkey %s: %w", n.nkey, err)
		}
		opts = append(opts, o)
		set++
	}
	if n.user != "" {
		pw, err := secretFrom(n.passwordFile, "SKILLFLEET_NATS_PASSWORD")
		if err != nil {
			return nil, fmt.Errorf("--nats-user: %w", err)
		}
		opts = append(opts, nats.UserInfo(n.user, pw))
		set++
	}
	if set > 1 {
		return nil, errors.New("use one of --nats-creds, --nats-nkey and --nats-user")
	}
	if n.tls.Enabled() {
		c, err := n.tls.Client()
		if err != nil {
			return nil, fmt.Errorf("--nats-ca/--nats-tls-*: %w", err)
		}
		opts = append(opts, nats.Secure(c))
	}
	return opts, nil
}

// secretFrom reads a secret from file, else from the file named by
// $ENV_FILE, else from $ENV. An empty result is an error.
func secretFrom(file, env string) (string, error) {
	if file == "" {
		file = os.Getenv(env + "_FILE")
	}
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("password file: %w", err)
		}
		if s := strings.TrimSpace(string(b)); s != "" {
			return s, nil
		}
		return "", fmt.Errorf("password file %s is empty", file)
	}
	if s := os.Getenv(env); s != "" {
		return s, nil
	}
	return "", fmt.Errorf("no password: set %s_FILE or %s, or pass a password file", env, env)
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

func (r redisFlags) open(ctx context.Context, log *slog.Logger) (*redisstore.Store, error) {
	var tc *tlsconf.Files
	if r.tls.Enabled() {
		tc = &r.tls
	}
	return openRedis(ctx, r.url, r.passwordFile, tc, log)
}
