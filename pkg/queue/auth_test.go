package queue

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAuthOptions: one way to authenticate at a time; a user's password
// comes from its file, and an empty or missing one is refused.
func TestAuthOptions(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(PasswordEnv, "")
	t.Setenv(PasswordEnv+"_FILE", "")
	if opts, err := (Auth{User: "alice", PasswordFile: pw}).Options(); err != nil || len(opts) != 1 {
		t.Errorf("user with a password file: %d options, %v", len(opts), err)
	}
	for name, c := range map[string]struct {
		a    Auth
		want string
	}{
		"two ways":       {Auth{User: "alice", PasswordFile: pw, CredsFile: pw}, "use one of"},
		"empty password": {Auth{User: "alice", PasswordFile: empty}, "is empty"},
		"no password":    {Auth{User: "alice"}, "no password: set " + PasswordEnv + "_FILE"},
		"missing creds":  {Auth{CredsFile: filepath.Join(dir, "nope")}, "--nats-creds"},
	} {
		if _, err := c.a.Options(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Options() = %v, want an error with %q", name, err, c.want)
		}
	}
}
