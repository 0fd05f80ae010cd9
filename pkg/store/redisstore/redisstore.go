// Package redisstore implements every pkg/store contract on a Redis server
// (7.0 or later, standalone or behind Sentinel-managed failover; not
// Redis Cluster) shared by a coordinator and its workers.
//
// # Keys
//
// Every key sits under [Options.Prefix] and is named in pkg/store/keys.go.
// Multi-step updates (lease acquire and renew, limiter, registry) are Lua
// scripts, so each is atomic on the server, and time comes from the
// server's TIME: worker clocks never have to agree.
//
// # Memory
//
// Cache entries always carry a TTL; nothing else that can grow does
// without one except the counters and the lease-token counters. Bound
// memory on the server with maxmemory and maxmemory-policy volatile-lru:
// Redis then evicts old cache entries and never the counters. (A lease key
// evicted under pressure is retaken by its holder at the next renewal.)
//
// # Failure
//
// Timeouts are short (1s to dial, 1s per command, one retry) so an
// unreachable server costs a caller about a second, not a minute; go-redis
// redials on the next command once the server is back. The store never
// decides what an error means: wrap the cache in [store.Degrading] and the
// limiter in [store.NewFallbackLimiter], and keep the lease with a
// [store.Leader]. go-redis reports dial failures through one process-wide
// logger; a command routes it with redis.SetLogger (tests silence it with
// storetest.QuietRedisLogger).
package redisstore

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/skillfleet/skillfleet/pkg/config"
	"github.com/skillfleet/skillfleet/pkg/store"
)

// Environment variables read for credentials when [Options] holds none.
const (
	EnvUsername     = "SKILLFLEET_REDIS_USERNAME"
	EnvPassword     = "SKILLFLEET_REDIS_PASSWORD"
	EnvPasswordFile = "SKILLFLEET_REDIS_PASSWORD_FILE"
)

// Default timeouts.
const (
	DefaultDialTimeout = time.Second
	DefaultOpTimeout   = time.Second
)

// Options configures [New]. Give URL or Addr.
type Options struct {
	// URL is redis://[user@]host:port/db, rediss://... for TLS, or
	// unix:///path/to/redis.sock?db=N. Keep passwords out of it (URLs end
	// up in flags, process lists and logs): use PasswordFile or the
	// environment. A password in the URL still works and is the last resort.
	URL string
	// Addr is host:port, or a unix socket path starting with "/"; used
	// when URL is empty, with DB.
	Addr string
	DB   int

	// Username is the ACL user (default: $SKILLFLEET_REDIS_USERNAME, then the URL's).
	Username string
	// Password is the ACL password. When empty it is read from
	// PasswordFile, then the file named by $SKILLFLEET_REDIS_PASSWORD_FILE,
	// then $SKILLFLEET_REDIS_PASSWORD, then the URL.
	Password     config.Secret
	PasswordFile string

	// TLS, when set, is used for every connection (and overrides the
	// default a rediss:// URL implies).
	TLS *tls.Config

	// Prefix precedes every key (default [store.DefaultPrefix]).
	Prefix string
	// CacheTTL is the TTL of a cache Put given none (default [store.DefaultCacheTTL]).
	CacheTTL time.Duration

	// DialTimeout bounds a connection attempt (default 1s); OpTimeout
	// bounds each command's reads, writes and wait for a pooled connection
	// (default 1s). Timeouts set in the URL's query win over both defaults.
	DialTimeout, OpTimeout time.Duration
	// PoolSize is the connection pool size (default: go-redis's, 10 per CPU).
	PoolSize int

	// Getenv reads the environment (default os.Getenv); tests replace it.
	Getenv func(string) string
}

// Store holds the Redis implementation of each contract over one client.
type Store struct {
	rdb    *redis.Client
	prefix string
	desc   string

	cache    *Cache
	counters *Counters
	registry *Registry
	leases   *Leases
	limiter  *Limiter
}

// New returns a store for o. It does not contact the server (call
// [Store.Ping] for that), so a process may start before Redis does.
func New(o Options) (*Store, error) {
	ro, err := clientOptions(o)
	if err != nil {
		return nil, err
	}
	s := &Store{
		rdb:    redis.NewClient(ro),
		prefix: cmp.Or(o.Prefix, store.DefaultPrefix),
	}
	s.desc = fmt.Sprintf("redis %s %s db %d prefix %q tls %t", ro.Network, ro.Addr, ro.DB, s.prefix, ro.TLSConfig != nil)
	s.cache = &Cache{s: s, ttl: cmp.Or(o.CacheTTL, store.DefaultCacheTTL)}
	s.counters = &Counters{s: s}
	s.registry = &Registry{s: s}
	s.leases = &Leases{s: s}
	s.limiter = &Limiter{s: s}
	return s, nil
}

func clientOptions(o Options) (*redis.Options, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	var ro *redis.Options
	switch {
	case o.URL != "":
		var err error
		ro, err = redis.ParseURL(o.URL)
		if err != nil {
			// url.Parse errors quote the whole URL, password included.
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			return nil, fmt.Errorf("redis url: %w", err)
		}
	case o.Addr != "":
		ro = &redis.Options{Network: "tcp", Addr: o.Addr, DB: o.DB}
		if strings.HasPrefix(o.Addr, "/") {
			ro.Network = "unix"
		}
	default:
		return nil, errors.New("redis: give a URL or an address")
	}

	ro.Username = firstNonEmpty(o.Username, getenv(EnvUsername), ro.Username)
	pw := o.Password.Reveal()
	for _, file := range []string{o.PasswordFile, getenv(EnvPasswordFile)} {
		if pw != "" || file == "" {
			continue
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("redis password file: %w", err)
		}
		pw = strings.TrimRight(string(b), "\r\n")
	}
	ro.Password = firstNonEmpty(pw, getenv(EnvPassword), ro.Password)

	if o.TLS != nil {
		ro.TLSConfig = o.TLS
	}
	if o.PoolSize > 0 {
		ro.PoolSize = o.PoolSize
	}
	op := cmp.Or(o.OpTimeout, DefaultOpTimeout)
	ro.DialTimeout = cmp.Or(ro.DialTimeout, o.DialTimeout, DefaultDialTimeout)
	ro.ReadTimeout = cmp.Or(ro.ReadTimeout, op)
	ro.WriteTimeout = cmp.Or(ro.WriteTimeout, op)
	ro.PoolTimeout = cmp.Or(ro.PoolTimeout, op)
	// Fail fast: one dial per command and one retry, then report.
	ro.DialerRetries = 1
	ro.MaxRetries = 1
	ro.ContextTimeoutEnabled = true
	ro.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	return ro, nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// String describes the connection for logs, without credentials.
func (s *Store) String() string { return s.desc }

// Ping checks that the server answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis ping: %w", err)
	}
	return nil
}

// Close closes the connections.
func (s *Store) Close() error { return s.rdb.Close() }

// Cache returns the rollout cache.
func (s *Store) Cache() *Cache { return s.cache }

// Counters returns the counters.
func (s *Store) Counters() *Counters { return s.counters }

// Registry returns the worker registry.
func (s *Store) Registry() *Registry { return s.registry }

// Leases returns the run leases.
func (s *Store) Leases() *Leases { return s.leases }

// Limiter returns the shared rate limiter.
func (s *Store) Limiter() *Limiter { return s.limiter }

func (s *Store) key(parts ...string) string { return s.prefix + strings.Join(parts, "") }

var (
	_ store.Cache    = (*Cache)(nil)
	_ store.Counters = (*Counters)(nil)
	_ store.Registry = (*Registry)(nil)
	_ store.Lease    = (*Leases)(nil)
	_ store.Limiter  = (*Limiter)(nil)
)
