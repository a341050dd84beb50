package cmd

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// curl's exit codes, used by post for transfer failures so that scripts
// written against curl keep working.
const (
	curlURLMalformat     = 3  // the URL is malformed
	curlResolveProxy     = 5  // could not resolve the proxy
	curlResolve          = 6  // could not resolve host
	curlConnect          = 7  // failed to connect (refused, unreachable)
	curlWeirdReply       = 8  // the reply is not HTTP
	curlPartialFile      = 18 // the reply ended before its announced length
	curlHTTPError        = 22 // HTTP status >= 400 with --fail or --fail-with-body; 422 always
	curlWriteError       = 23 // cannot write the output
	curlTimeout          = 28 // --max-time or --connect-timeout expired
	curlSSLConnect       = 35 // TLS handshake failed
	curlTooManyRedirects = 47 // more redirects than --max-redirs
	curlEmptyReply       = 52 // the server closed the connection without a reply
	curlSendError        = 55 // sending the request failed
	curlRecvError        = 56 // receiving the reply failed (connection reset)
	curlSSLCertProblem   = 58 // --cert or --key cannot be used
	curlBadEncoding      = 61 // a Transfer-Encoding the client does not know
	curlPeerVerify       = 60 // the server's certificate did not verify
	curlCACert           = 77 // --cacert cannot be read or holds no certificate
)

// CurlError is a transfer failure; its exit code is curl's for the same
// failure.
type CurlError struct {
	Code int
	Err  error
}

func (e *CurlError) Error() string { return fmt.Sprintf("(%d) %s", e.Code, e.Err) }
func (e *CurlError) Unwrap() error { return e.Err }
func (e *CurlError) ExitCode() int { return e.Code }

// retryable reports whether a failure with this code may succeed when the
// same request (same key, same body) is sent again.
func (e *CurlError) retryable() bool {
	if tunnel := (*proxyTunnelError)(nil); errors.As(e.Err, &tunnel) {
		// The proxy's answer: its 407 or 403 will not change, its 503
		// (it could not reach the server) may.
		return retryStatus(tunnel.status)
	}
	switch e.Code {
	case curlResolveProxy, curlResolve, curlConnect, curlPartialFile, curlTimeout, curlSSLConnect,
		curlEmptyReply, curlSendError, curlRecvError:
		return true
	}
	return false
}

// hintedError is an error message with a suggestion for the reader.
type hintedError struct{ msg, hint string }

func (e *hintedError) Error() string { return e.msg }
func (e *hintedError) Hint() string  { return e.hint }

// retryStatus reports whether an HTTP status is worth retrying with the
// same key: 409 is the draft's "a request with this key is in flight".
func retryStatus(code int) bool {
	switch code {
	case 408, 409, 425, 429, 500, 502, 503, 504:
		return true
	}
	return false
}

// tlsHandshakeError is a failure of the TLS handshake idemkey performs
// itself (see dialTLS): whatever the network did meanwhile (a reset, an
// EOF), it is curl's 35, or 60 when the certificate did not verify.
type tlsHandshakeError struct{ err error }

func (e *tlsHandshakeError) Error() string { return e.err.Error() }
func (e *tlsHandshakeError) Unwrap() error { return e.err }

// proxyTunnelError is a proxy's refusal of the CONNECT that an https://
// URL is reached through: nothing reached the server.
type proxyTunnelError struct{ status int }

func (e *proxyTunnelError) Error() string {
	return fmt.Sprintf("CONNECT tunnel failed, response %d", e.status)
}

// classify turns a transport error into a CurlError. inBody is true when
// the status line and headers had arrived and the body was being read.
func classify(err error, inBody bool) *CurlError {
	var (
		dns     *net.DNSError
		cve     *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
		alert   tls.AlertError
		record  tls.RecordHeaderError
		hs      *tlsHandshakeError
		op      *net.OpError
		ne      net.Error
	)
	var tunnel *proxyTunnelError
	msg := err.Error()
	switch {
	case errors.As(err, &tunnel):
		return &CurlError{curlRecvError, tunnel} // curl's code and words
	case errors.Is(err, errSpool):
		return &CurlError{curlWriteError, errors.New(rootCause(err))}
	case errors.As(err, &dns):
		if errors.As(err, &op) && op.Op == "proxyconnect" {
			// Go's transport marks a failure to reach the proxy so.
			return &CurlError{curlResolveProxy, fmt.Errorf("could not resolve proxy %s", dns.Name)}
		}
		return &CurlError{curlResolve, fmt.Errorf("could not resolve host %s", dns.Name)}
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return &CurlError{curlTimeout, errors.New("operation timed out")}
	case errors.As(err, &cve) || errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid):
		return &CurlError{curlPeerVerify, &hintedError{
			msg:  "server certificate verification failed: " + rootCause(err),
			hint: "give the issuing CA with --cacert FILE (or -k to skip verification, never in production)",
		}}
	case errors.As(err, &hs) || errors.As(err, &alert) || errors.As(err, &record) || strings.Contains(msg, "tls: "):
		return &CurlError{curlSSLConnect, errors.New("tls handshake failed: " + rootCause(err))}
	case errors.Is(err, syscall.ECONNREFUSED), errors.As(err, &op) && op.Op == "dial":
		to := ""
		if errors.As(err, &op) && op.Op == "proxyconnect" {
			// Go's mark on a failure to reach the proxy, with no address:
			// the address is the dial's, inside it.
			to = " to the proxy"
			if inner := (*net.OpError)(nil); errors.As(op.Err, &inner) && inner.Addr != nil {
				to += " " + inner.Addr.String()
			}
		} else if errors.As(err, &op) && op.Addr != nil {
			to = " to " + op.Addr.String()
		}
		return &CurlError{curlConnect, fmt.Errorf("failed to connect%s: %s", to, rootCause(err))}
	case strings.Contains(msg, "transfer encoding"):
		return &CurlError{curlBadEncoding, errors.New("unrecognized transfer encoding: " + rootCause(err))}
	case strings.Contains(msg, "malformed HTTP") || strings.Contains(msg, "malformed MIME") ||
		strings.Contains(msg, "Content-Length") || strings.Contains(msg, "invalid header") ||
		strings.Contains(msg, "server response headers exceeded"):
		return &CurlError{curlWeirdReply, errors.New("weird server reply: " + rootCause(err))}
	case errors.Is(err, syscall.ECONNRESET):
		return &CurlError{curlRecvError, errors.New("failure when receiving data from the peer: connection reset by peer")}
	case errors.Is(err, syscall.EPIPE):
		return &CurlError{curlSendError, errors.New("failure when sending data to the peer: broken pipe")}
	case inBody && errors.Is(err, io.ErrUnexpectedEOF):
		return &CurlError{curlPartialFile, errors.New("transfer closed with outstanding read data remaining")}
	case !inBody && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)):
		return &CurlError{curlEmptyReply, errors.New("empty reply from server")}
	}
	return &CurlError{curlRecvError, errors.New("failure when receiving data from the peer: " + rootCause(err))}
}

// rootCause strips Go's wrapping ("Post \"http://…\": dial tcp …: ") down
// to the innermost message, lower case as the project's diagnostics are.
func rootCause(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			break
		}
		err = u
	}
	return err.Error()
}

// transport settings for one post invocation.
type transportConfig struct {
	ConnectTimeout time.Duration
	Insecure       bool
	CACert         string
	Cert, Key      string              // client certificate and key (PEM)
	Getenv         func(string) string // the proxy variables
}

// newPostClient returns a client that does not follow redirects itself
// (post follows them with -L, by curl's rules), does not ask for
// compression (the body is the server's own bytes), opens a new connection
// for every request, so that Go's transport never retries behind our back
// on a reused connection, and speaks HTTP/1.1, whose bytes it records (see
// recConn).
// maxPEM bounds a certificate or key file (a CA bundle is a few hundred
// KiB): --cacert /dev/zero is an error, not an endless read.
const maxPEM = 16 << 20

func postReadPEM(path string) ([]byte, error) {
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

func newPostClient(tc transportConfig) (*http.Client, error) {
	tlsConf := &tls.Config{InsecureSkipVerify: tc.Insecure, NextProtos: []string{"http/1.1"}} //nolint:gosec // -k, warned about
	if tc.CACert != "" {
		pem, err := postReadPEM(tc.CACert)
		if err != nil {
			return nil, &CurlError{curlCACert, fmt.Errorf("cannot read --cacert %s: %v", tc.CACert, fileErr(err))}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, &CurlError{curlCACert, fmt.Errorf("--cacert %s holds no PEM certificate", tc.CACert)}
		}
		tlsConf.RootCAs = pool
	}
	if tc.Cert != "" {
		keyFile := tc.Key
		if keyFile == "" {
			keyFile = tc.Cert // curl: the key may follow the certificate in one file
		}
		certPEM, err := postReadPEM(tc.Cert)
		var keyPEM []byte
		if err != nil {
			err = fileErr(err)
		} else if keyPEM, err = postReadPEM(keyFile); err != nil {
			err = fmt.Errorf("--key %s: %v", keyFile, fileErr(err))
		}
		var pair tls.Certificate
		if err == nil {
			pair, err = tls.X509KeyPair(certPEM, keyPEM)
		}
		if err != nil {
			return nil, &CurlError{curlSSLCertProblem, fmt.Errorf("cannot use client certificate %s: %s", tc.Cert, rootCause(err))}
		}
		tlsConf.Certificates = []tls.Certificate{pair}
	}
	dialer := &net.Dialer{Timeout: tc.ConnectTimeout}
	getenv := tc.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	tr := &http.Transport{
		Proxy: func(r *http.Request) (*url.URL, error) { return proxyFor(getenv, r.URL) },
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

// hop is one request of an attempt (an attempt that follows redirects
// sends several) and what came back.
type hop struct {
	method string
	url    *url.URL
	sent   []byte   // the request head as written, or nil when unknown
	heads  [][]byte // response heads as received (1xx included)
	status int      // 0 if no final response arrived

	local, remote net.Addr
	// Times from the request's start: name resolved, connected, TLS
	// done, first response byte (0 when it did not happen).
	dns, connect, tls, first time.Duration
}

// attemptResult is what one attempt produced: a complete response, or a
// transfer error (possibly after the headers had arrived).
type attemptResult struct {
	resp  *http.Response // nil if no final response headers arrived
	body  *spool         // the complete body when err is nil
	hops  []hop
	start time.Time
	took  time.Duration
	err   *CurlError
}

// head returns the final response's head as received.
func (r *attemptResult) head() []byte {
	if len(r.hops) == 0 {
		return nil
	}
	h := r.hops[len(r.hops)-1].heads
	if len(h) == 0 {
		return nil
	}
	return h[len(h)-1]
}

// url returns the URL of the last request sent.
func (r *attemptResult) url() *url.URL {
	if len(r.hops) == 0 {
		return nil
	}
	return r.hops[len(r.hops)-1].url
}

// close releases the body's temporary file.
func (r *attemptResult) close() { r.body.close() }

// roundTrip sends one request and returns its response with the body
// unread, recording what was written and received.
func roundTrip(ctx context.Context, client *http.Client, req *http.Request, body []byte) (hop, *http.Response, *CurlError) {
	h := hop{method: req.Method, url: req.URL}
	var conn *recConn
	interim := false
	start := time.Now()
	var mu sync.Mutex // the trace's callbacks run on the transport's goroutines
	at := func(d *time.Duration) {
		mu.Lock()
		*d = time.Since(start)
		mu.Unlock()
	}
	trace := &httptrace.ClientTrace{
		DNSDone:     func(httptrace.DNSDoneInfo) { at(&h.dns) },
		ConnectDone: func(_, _ string, err error) { at(&h.connect) },
		GotConn: func(i httptrace.GotConnInfo) {
			mu.Lock()
			// HTTPS through a proxy runs TLS over the recorded
			// connection: the bytes there are not the exchange's.
			conn, _ = i.Conn.(*recConn)
			h.local, h.remote = i.Conn.LocalAddr(), i.Conn.RemoteAddr()
			if req.URL.Scheme == "https" {
				h.tls = time.Since(start)
			}
			mu.Unlock()
		},
		GotFirstResponseByte: func() { at(&h.first) },
		Got1xxResponse: func(int, textproto.MIMEHeader) error {
			mu.Lock()
			interim = true
			mu.Unlock()
			return nil
		},
	}
	r := req.Clone(httptrace.WithClientTrace(ctx, trace))
	if body != nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	resp, err := client.Do(r)
	mu.Lock()
	defer mu.Unlock()
	h.sent, h.heads = conn.sentHead(), conn.responseHeads()
	if err != nil {
		ce := classify(err, false)
		if ce.Code == curlSendError || ce.Code == curlRecvError {
			if resp, tail, ok := conn.earlyResponse(r); ok {
				// The server answered before it read the upload, then
				// closed: its answer is the response, as in curl.
				resp.Body = io.NopCloser(bytes.NewReader(tail))
				h.status = resp.StatusCode
				return h, resp, nil
			}
		}
		if interim && (ce.Code == curlEmptyReply || ce.Code == curlRecvError || ce.Code == curlPartialFile) {
			ce = &CurlError{curlEmptyReply, errors.New("empty reply from server (only an interim 1xx response arrived)")}
		}
		return h, nil, ce
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		resp.Body.Close()
		return h, nil, &CurlError{curlEmptyReply, errors.New("empty reply from server: it answered 101 Switching Protocols, which a POST did not ask for")}
	}
	if len(h.heads) == 0 {
		h.heads = [][]byte{synthHead(resp)}
	}
	h.status = resp.StatusCode
	return h, resp, nil
}

// maxBackoff caps the exponential backoff, as curl caps its own.
const maxBackoff = 10 * time.Minute

// defaultRetryDelay is the first backoff: --retry-delay 0 means it, as in
// curl.
const defaultRetryDelay = time.Second

// backoff returns the wait before retry number n (1 for the first retry):
// base·2^(n-1), capped, plus up to half again of random jitter so that
// many clients failing together do not retry together.
func backoff(base time.Duration, n int) time.Duration {
	if base <= 0 {
		base = defaultRetryDelay
	}
	d := base
	for i := 1; i < n && d < maxBackoff; i++ {
		d *= 2
	}
	d = min(d, maxBackoff)
	if d > 0 {
		d += rand.N(d/2 + 1)
	}
	return min(d, maxBackoff)
}

// retryAfter parses a Retry-After header: delay-seconds (fractions are
// accepted) or an HTTP date. ok is false when absent or unparseable. A
// value too large for a duration saturates at maxDuration, so that it is
// compared with the limits rather than wrapping around.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		if s < 0 || strings.HasPrefix(v, "-") {
			return 0, false
		}
		if s >= float64(maxDuration/time.Second) {
			return maxDuration, true
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true // Sub saturates
	}
	return 0, false
}

const maxDuration = time.Duration(1<<63 - 1)

// addSat adds two non-negative durations, saturating at maxDuration.
func addSat(a, b time.Duration) time.Duration {
	if a > maxDuration-b {
		return maxDuration
	}
	return a + b
}

// replayHeader returns the header that says the response is a replay of
// the one saved for this key (Idempotent-Replayed: true, and the variants
// servers use), or "".
func replayHeader(h http.Header) string {
	for name, vals := range h {
		n := strings.ToLower(name)
		if !strings.Contains(n, "idempot") || !strings.Contains(n, "replay") {
			continue
		}
		for _, v := range vals {
			if v := strings.ToLower(strings.TrimSpace(v)); v == "true" || v == "1" || v == "yes" {
				return name + ": " + strings.TrimSpace(vals[0])
			}
		}
	}
	return ""
}

// secretHeader reports whether a header's value is a credential, shown as
// "[redacted]" in -v and --dry-run output and not sent to another host
// when -L follows a redirect there.
func secretHeader(name string) bool {
	n := strings.ToLower(name)
	switch n {
	case "cookie", "set-cookie", "x-api-key", "api-key", "apikey", "x-goog-api-key", "dpop":
		return true
	}
	for _, w := range []string{"auth", "token", "secret", "password", "passwd", "session", "api-key", "apikey", "credential", "signature"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// authSchemes are the authorization schemes whose name redact keeps.
var authSchemes = map[string]bool{
	"basic": true, "bearer": true, "digest": true, "token": true, "negotiate": true, "ntlm": true,
	"hoba": true, "mutual": true, "vapid": true, "dpop": true, "privatetoken": true, "oauth": true,
	"aws4-hmac-sha256": true, "scram-sha-1": true, "scram-sha-256": true, "gnap": true, "apikey": true,
}

// redact returns a header value fit to print: credentials are replaced,
// a known authorization scheme ("Basic", "Bearer") is kept.
func redact(name, value string) string {
	if !secretHeader(name) {
		return value
	}
	n := strings.ToLower(name)
	if n == "authorization" || n == "proxy-authorization" {
		if scheme, _, ok := strings.Cut(strings.TrimSpace(value), " "); ok && authSchemes[strings.ToLower(scheme)] {
			return scheme + " [redacted]"
		}
	}
	return "[redacted]"
}

// redactURL hides the password of a URL that may not parse.
func redactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	rest, scheme := raw, ""
	if i := strings.Index(raw, "://"); i >= 0 {
		scheme, rest = raw[:i+3], raw[i+3:]
	}
	authEnd := strings.IndexAny(rest, "/?#")
	if authEnd < 0 {
		authEnd = len(rest)
	}
	if at := strings.LastIndex(rest[:authEnd], "@"); at >= 0 {
		user, _, hasPass := strings.Cut(rest[:at], ":")
		if hasPass {
			return scheme + user + ":xxxxx" + rest[at:]
		}
	}
	return raw
}
