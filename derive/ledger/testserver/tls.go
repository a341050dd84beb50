package testserver

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
	"os/user"
	"path/filepath"
	"testing"
	"time"
)

// Cert is a self-signed certificate for 127.0.0.1 and localhost: CA is
// the certificate itself (what a client trusts), Key its private key.
type Cert struct {
	CA, Key string // file paths
}

// selfSigned writes a certificate and key into dir, owned by owner (the
// server's user: PostgreSQL refuses a key that others can read).
func selfSigned(t testing.TB, dir string, owner *user.User) Cert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "idemkey test server"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	c := Cert{CA: filepath.Join(dir, "server.crt"), Key: filepath.Join(dir, "server.key")}
	if err := os.WriteFile(c.CA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.Key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	if owner != nil {
		chown(c.CA, owner)
		chown(c.Key, owner)
	}
	return c
}

// SelfSigned writes a fresh self-signed certificate and key into dir.
func SelfSigned(t testing.TB, dir string) Cert { return selfSigned(t, dir, nil) }

// NewPostgresTLS starts a cluster of the test's own that accepts TCP
// connections over TLS only (hostssl; hostnossl is rejected), with a
// self-signed certificate for 127.0.0.1. Its URLs say sslmode=require.
func NewPostgresTLS(t testing.TB) (*PG, Cert) {
	t.Helper()
	c := NewPostgres(t)
	cert := selfSigned(t, c.Dir, c.owner)
	c.Stop(15)
	hba := filepath.Join(c.Dir, "pg_hba.conf")
	rules := "local all all trust\nhostssl all all 127.0.0.1/32 trust\nhostnossl all all 127.0.0.1/32 reject\n"
	if err := os.WriteFile(hba, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	if c.owner != nil {
		chown(hba, c.owner)
	}
	c.extra = []string{"-c", "ssl=on", "-c", "ssl_cert_file=" + cert.CA, "-c", "ssl_key_file=" + cert.Key, "-c", "hba_file=" + hba}
	c.tls = true
	c.Start(t)
	return c, cert
}

// NewRedisTLS starts a redis-server that speaks only TLS, with a
// self-signed certificate for 127.0.0.1; its URL is rediss://.
func NewRedisTLS(t testing.TB) (*Redis, Cert) {
	t.Helper()
	dir := t.TempDir()
	cert := selfSigned(t, dir, nil)
	r := NewRedis(t)
	r.Stop(15)
	for i, a := range r.args {
		if a == "--port" {
			r.args[i+1] = "0"
		}
	}
	r.args = append(r.args, "--tls-port", itoa(r.Port), "--tls-cert-file", cert.CA, "--tls-key-file", cert.Key,
		"--tls-ca-cert-file", cert.CA, "--tls-auth-clients", "no")
	r.tls = cert
	r.Start(t)
	return r, cert
}
