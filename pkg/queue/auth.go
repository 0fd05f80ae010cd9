package queue

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/skillfleet/skillfleet/pkg/tlsconf"
)

// Auth is how a client proves itself to NATS and verifies the server:
// at most one of a credentials file, an nkey seed file and a user with a
// password, plus TLS. Secrets come from files or the environment, never
// from a value on a command line.
type Auth struct {
	// CredsFile is a credentials file (user JWT + nkey seed).
	CredsFile string
	// NKeyFile holds a user nkey seed (SU...).
	NKeyFile string
	// User is a user name whose password is read from PasswordFile, else
	// the file named by $SKILLFLEET_NATS_PASSWORD_FILE, else
	// $SKILLFLEET_NATS_PASSWORD.
	User, PasswordFile string
	// TLS turns on TLS when set (a CA; a client certificate for mutual TLS).
	TLS tlsconf.Files
}

// PasswordEnv is the environment variable holding a NATS user's password
// (its _FILE form names a file holding it).
const PasswordEnv = "SKILLFLEET_NATS_PASSWORD"

// Options returns the nats.Options a names; the errors name the flags
// (--nats-creds, --nats-nkey, --nats-user, --nats-ca) that set each field.
func (a Auth) Options() ([]nats.Option, error) {
	var opts []nats.Option
	set := 0
	if a.CredsFile != "" {
		if _, err := os.Stat(a.CredsFile); err != nil {
			return nil, fmt.Errorf("--nats-creds: %w", err)
		}
		opts = append(opts, nats.UserCredentials(a.CredsFile))
		set++
	}
	if a.NKeyFile != "" {
		o, err := nats.NkeyOptionFromSeed(a.NKeyFile)
		if err != nil {
			return nil, fmt.Errorf("--nats-nkey %s: %w", a.NKeyFile, err)
		}
		opts = append(opts, o)
		set++
	}
	if a.User != "" {
		pw, err := secretFrom(a.PasswordFile, PasswordEnv)
		if err != nil {
			return nil, fmt.Errorf("--nats-user: %w", err)
		}
		opts = append(opts, nats.UserInfo(a.User, pw))
		set++
	}
	if set > 1 {
		return nil, errors.New("use one of --nats-creds, --nats-nkey and --nats-user")
	}
	if a.TLS.Enabled() {
		c, err := a.TLS.Client()
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
