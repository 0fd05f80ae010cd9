// Package tlstest writes a throw-away certificate authority and server and
// client certificates for tests.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/pkg/tlsconf"
)

// Bundle holds the paths of the generated PEM files.
type Bundle struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
}

// ServerFiles is the server side (its certificate, and the CA for clients).
func (b Bundle) ServerFiles() tlsconf.Files {
	return tlsconf.Files{CA: b.CA, Cert: b.ServerCert, Key: b.ServerKey}
}

// ClientFiles is the client side (the CA for the server, its certificate).
func (b Bundle) ClientFiles() tlsconf.Files {
	return tlsconf.Files{CA: b.CA, Cert: b.ClientCert, Key: b.ClientKey}
}

// Generate writes a CA, a server certificate for hosts (names or IPs) and
// a client certificate into dir.
func Generate(t testing.TB, dir string, hosts ...string) Bundle {
	t.Helper()
	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "skillfleet test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	b := Bundle{CA: filepath.Join(dir, "ca.pem")}
	writePEM(t, b.CA, "CERTIFICATE", caDER)

	leaf := func(serial int64, name string, usage x509.ExtKeyUsage, certPath, keyPath string) {
		key := newKey(t)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		}
		if usage == x509.ExtKeyUsageServerAuth {
			for _, h := range hosts {
				if ip := net.ParseIP(h); ip != nil {
					tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
				} else {
					tmpl.DNSNames = append(tmpl.DNSNames, h)
				}
			}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		writePEM(t, certPath, "CERTIFICATE", der)
		kb, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		writePEM(t, keyPath, "EC PRIVATE KEY", kb)
	}
	b.ServerCert, b.ServerKey = filepath.Join(dir, "server.pem"), filepath.Join(dir, "server-key.pem")
	b.ClientCert, b.ClientKey = filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
	leaf(2, "skillfleet server", x509.ExtKeyUsageServerAuth, b.ServerCert, b.ServerKey)
	leaf(3, "skillfleet worker", x509.ExtKeyUsageClientAuth, b.ClientCert, b.ClientKey)
	return b
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
