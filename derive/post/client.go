package post

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"
)

// Transport is the connection settings of one exchange: curl's
// --connect-timeout, -k, --cacert, --cert and --key, and the environment
// the proxy is read from (os.Getenv when nil).
type Transport struct {
	ConnectTimeout time.Duration
	Insecure       bool
	CACert         string
	Cert, Key      string              // client certificate and key (PEM)
	Getenv         func(string) string // the proxy variables
}

// maxPEM bounds a certificate or key file (a CA bundle is a few hundred
// KiB): --cacert /dev/zero is an error, not an endless read.
const maxPEM = 16 << 20

// readPEM reads a certificate or key file, at most maxPEM bytes.
func readPEM(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPEM+1))
	if err == nil && len(b) > maxPEM {
		err = fmt.Errorf("larger than %d MiB, more than a PEM file holds", maxPEM>>20)
	}
	return b, err
}

// NewClient returns a client that does not follow redirects itself
// (post follows them with -L, by curl's rules), does not ask for
// compression (the body is the server's own bytes), opens a new connection
// for every request, so that Go's transport never retries behind our back
// on a reused connection, and speaks HTTP/1.1, whose bytes it records (see
// recConn).
// A --cacert, --cert or --key that cannot be used is an *Error with
// curl's code (77, 58).
func NewClient(tc Transport) (*http.Client, error) {
	tlsConf := &tls.Config{InsecureSkipVerify: tc.Insecure, NextProtos: []string{"http/1.1"}} //nolint:gosec // -k, warned about
	if tc.CACert != "" {
		pem, err := readPEM(tc.CACert)
		if err != nil {
			return nil, &Error{CurlCACert, fmt.Errorf("cannot read --cacert %s: %v", tc.CACert, pathReason(err))}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, &Error{CurlCACert, fmt.Errorf("--cacert %s holds no PEM certificate", tc.CACert)}
		}
		tlsConf.RootCAs = pool
	}
	if tc.Cert != "" {
		keyFile := tc.Key
		if keyFile == "" {
			keyFile = tc.Cert // curl: the key may follow the certificate in one file
		}
		certPEM, err := readPEM(tc.Cert)
		var keyPEM []byte
		if err != nil {
			err = pathReason(err)
		} else if keyPEM, err = readPEM(keyFile); err != nil {
			err = fmt.Errorf("--key %s: %v", keyFile, pathReason(err))
		}
		var pair tls.Certificate
		if err == nil {
			pair, err = tls.X509KeyPair(certPEM, keyPEM)
		}
		if err != nil {
			return nil, &Error{CurlSSLCertProblem, fmt.Errorf("cannot use client certificate %s: %s", tc.Cert, RootCause(err))}
		}
		tlsConf.Certificates = []tls.Certificate{pair}
	}
	dialer := &net.Dialer{Timeout: tc.ConnectTimeout}
	getenv := tc.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	tr := &http.Transport{
		Proxy: func(r *http.Request) (*url.URL, error) { return ProxyFor(getenv, r.URL) },
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &recConn{Conn: c}, nil
		},
		DialTLSContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return dialTLS(ctx, dialer, tlsConf, tc.ConnectTimeout, network, addr)
		},
		OnProxyConnectResponse: func(_ context.Context, _ *url.URL, _ *http.Request, resp *http.Response) error {
			if resp.StatusCode != http.StatusOK {
				return &proxyTunnelError{resp.StatusCode} // Go's own error is the bare reason phrase
			}
			return nil
		},
		TLSClientConfig:        tlsConf,
		TLSHandshakeTimeout:    tc.ConnectTimeout,
		DisableKeepAlives:      true,
		DisableCompression:     true,
		MaxResponseHeaderBytes: maxRecord,
	}
	return &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}, nil
}

// dialTLS connects and performs the TLS handshake itself, so that a
// failure during the handshake is known as one (curl's 35), and so that
// the plain bytes of the exchange can be recorded.
func dialTLS(ctx context.Context, d *net.Dialer, conf *tls.Config, timeout time.Duration, network, addr string) (net.Conn, error) {
	raw, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	cfg := conf.Clone()
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg.ServerName = host
	}
	hctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		hctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	tc := tls.Client(raw, cfg)
	if err := tc.HandshakeContext(hctx); err != nil {
		raw.Close()
		return nil, &tlsHandshakeError{err}
	}
	return &recConn{Conn: tc}, nil
}
