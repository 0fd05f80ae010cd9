package tlsconf_test

import (
	"crypto/tls"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/tlsconf"
	"github.com/skillfleet/skillfleet/pkg/tlsconf/tlstest"
)

// TestMutualTLS: a client with the bundle's certificate completes the
// handshake with a server that requires one; a client without a
// certificate, or one that does not trust the CA, does not.
func TestMutualTLS(t *testing.T) {
	b := tlstest.Generate(t, t.TempDir(), "127.0.0.1")
	sc, err := b.ServerFiles().Server(true)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", sc)
	if err != nil {
		t.Fatal(err)
	}
	// The accept loop and every connection's handler end before the test.
	var wg sync.WaitGroup
	defer func() { _ = ln.Close(); wg.Wait() }()
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				if err := c.(*tls.Conn).Handshake(); err == nil {
					_, _ = io.WriteString(c, "ok")
				}
			})
		}
	})
	dial := func(f tlsconf.Files) error {
		cc, err := f.Client()
		if err != nil {
			return err
		}
		c, err := tls.Dial("tcp", ln.Addr().String(), cc)
		if err != nil {
			return err
		}
		defer c.Close()
		buf := make([]byte, 2)
		_, err = io.ReadFull(c, buf)
		return err
	}
	if err := dial(b.ClientFiles()); err != nil {
		t.Errorf("client with a certificate: %v", err)
	}
	if err := dial(tlsconf.Files{CA: b.CA}); err == nil {
		t.Error("client without a certificate was served")
	}
	other := tlstest.Generate(t, t.TempDir(), "127.0.0.1")
	if err := dial(tlsconf.Files{CA: other.CA, Cert: b.ClientCert, Key: b.ClientKey}); err == nil {
		t.Error("client that does not trust the server's CA connected")
	}
}

func TestBadFilesNameTheProblem(t *testing.T) {
	if _, err := (tlsconf.Files{Cert: "x.pem"}).Server(false); err == nil || !strings.Contains(err.Error(), "key") {
		t.Errorf("server without a key: %v", err)
	}
	if _, err := (tlsconf.Files{CA: "/nonexistent/ca.pem"}).Client(); err == nil || !strings.Contains(err.Error(), "CA file") {
		t.Errorf("missing CA: %v", err)
	}
	b := tlstest.Generate(t, t.TempDir(), "localhost")
	if _, err := (tlsconf.Files{Cert: b.ServerCert, Key: b.ServerKey}).Server(true); err == nil || !strings.Contains(err.Error(), "CA") {
		t.Errorf("mTLS without a CA: %v", err)
	}
}
