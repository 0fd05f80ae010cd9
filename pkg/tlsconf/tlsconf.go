// Package tlsconf builds TLS configurations from certificate files: the
// server side of the coordinator's gRPC service (optionally requiring
// client certificates: mutual TLS) and the client side of workers.
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// Files names PEM files. CA verifies the peer (the server for a client,
// client certificates for a server); Cert and Key are this side's
// certificate; ServerName overrides the name a client verifies.
type Files struct {
	CA, Cert, Key string
	ServerName    string
}

// Enabled reports whether any file is set.
func (f Files) Enabled() bool { return f.CA != "" || f.Cert != "" || f.Key != "" }

// Server returns a server configuration: Cert and Key are required; with
// requireClient, clients must present a certificate signed by CA.
func (f Files) Server(requireClient bool) (*tls.Config, error) {
	if f.Cert == "" || f.Key == "" {
		return nil, errors.New("tls: a server needs both a certificate and a key file")
	}
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("tls: certificate %s / key %s: %w", f.Cert, f.Key, err)
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	if requireClient {
		pool, err := loadPool(f.CA)
		if err != nil {
			return nil, err
		}
		if pool == nil {
			return nil, errors.New("tls: requiring client certificates needs a CA file to verify them")
		}
		c.ClientCAs, c.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return c, nil
}

// Client returns a client configuration: the server is verified against
// CA (the system roots when CA is empty); Cert and Key, when set, are
// presented for mutual TLS.
func (f Files) Client() (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: f.ServerName}
	pool, err := loadPool(f.CA)
	if err != nil {
		return nil, err
	}
	c.RootCAs = pool
	if (f.Cert == "") != (f.Key == "") {
		return nil, errors.New("tls: a client certificate needs both the certificate and the key file")
	}
	if f.Cert != "" {
		cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return nil, fmt.Errorf("tls: certificate %s / key %s: %w", f.Cert, f.Key, err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

func loadPool(path string) (*x509.CertPool, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tls: CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("tls: CA file %s holds no PEM certificate", path)
	}
	return pool, nil
}
