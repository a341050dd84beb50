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
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// curl's exit codes, used by post for transfer failures so that scripts
// written against curl keep working.
const (
	curlResolve     = 6  // could not resolve host
	curlConnect     = 7  // failed to connect (refused, unreachable)
	curlWeirdReply  = 8  // the reply is not HTTP
	curlPartialFile = 18 // the reply ended before its announced length
	curlHTTPError   = 22 // HTTP status >= 400 with --fail or --fail-with-body
	curlWriteError  = 23 // cannot write the output
	curlTimeout     = 28 // --max-time or --connect-timeout expired
	curlSSLConnect  = 35 // TLS handshake failed
	curlEmptyReply  = 52 // the server closed the connection without a reply
	curlSendError   = 55 // sending the request failed
	curlRecvError   = 56 // receiving the reply failed (connection reset)
	curlPeerVerify  = 60 // the server's certificate did not verify
	curlCACert      = 77 // --cacert cannot be read or holds no certificate
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
	switch e.Code {
	case curlResolve, curlConnect, curlPartialFile, curlTimeout, curlSSLConnect,
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
		op      *net.OpError
		ne      net.Error
	)
	switch {
	case errors.As(err, &dns):
		return &CurlError{curlResolve, fmt.Errorf("could not resolve host %s", dns.Name)}
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return &CurlError{curlTimeout, errors.New("operation timed out")}
	case errors.As(err, &cve) || errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid):
		return &CurlError{curlPeerVerify, &hintedError{
			msg:  "server certificate verification failed: " + rootCause(err),
			hint: "give the issuing CA with --cacert FILE (or -k to skip verification, never in production)",
		}}
	case errors.As(err, &alert) || errors.As(err, &record) || strings.Contains(err.Error(), "tls: "):
		return &CurlError{curlSSLConnect, errors.New("tls handshake failed: " + rootCause(err))}
	case errors.Is(err, syscall.ECONNREFUSED), errors.As(err, &op) && op.Op == "dial":
		to := ""
		if errors.As(err, &op) && op.Addr != nil {
			to = " to " + op.Addr.String()
		}
		return &CurlError{curlConnect, fmt.Errorf("failed to connect%s: %s", to, rootCause(err))}
	case errors.Is(err, syscall.ECONNRESET):
		return &CurlError{curlRecvError, errors.New("failure when receiving data from the peer: connection reset by peer")}
	case errors.Is(err, syscall.EPIPE):
		return &CurlError{curlSendError, errors.New("failure when sending data to the peer: broken pipe")}
	case inBody && errors.Is(err, io.ErrUnexpectedEOF):
		return &CurlError{curlPartialFile, errors.New("transfer closed with outstanding read data remaining")}
	case !inBody && errors.Is(err, io.EOF):
		return &CurlError{curlEmptyReply, errors.New("empty reply from server")}
	case strings.Contains(err.Error(), "malformed HTTP"):
		return &CurlError{curlWeirdReply, errors.New("weird server reply: " + rootCause(err))}
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
}

// newPostClient returns a client that does not follow redirects (as curl
// without -L), does not ask for compression (the body is the server's own
// bytes) and opens a new connection for every attempt, so that Go's
// transport never retries behind our back on a reused connection.
func newPostClient(tc transportConfig) (*http.Client, error) {
	tlsConf := &tls.Config{InsecureSkipVerify: tc.Insecure} //nolint:gosec // -k, warned about
	if tc.CACert != "" {
		pem, err := os.ReadFile(tc.CACert)
		if err != nil {
			return nil, &CurlError{curlCACert, fmt.Errorf("cannot read --cacert %s: %v", tc.CACert, fileErr(err))}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, &CurlError{curlCACert, fmt.Errorf("--cacert %s holds no PEM certificate", tc.CACert)}
		}
		tlsConf.RootCAs = pool
	}
	dialer := &net.Dialer{Timeout: tc.ConnectTimeout, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         dialer.DialContext,
		TLSClientConfig:     tlsConf,
		TLSHandshakeTimeout: tc.ConnectTimeout,
		DisableKeepAlives:   true,
		DisableCompression:  true,
		ForceAttemptHTTP2:   true,
	}
	return &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}, nil
}

// attemptResult is what one attempt produced: a complete response, or a
// transfer error (possibly after the headers had arrived).
type attemptResult struct {
	resp *http.Response // nil if no response headers arrived
	body []byte         // the complete body when err is nil
	err  *CurlError
}

// send performs one attempt within maxTime (0: no limit), reading the
// whole body so that a truncated reply is known before anything is
// written out.
func send(ctx context.Context, client *http.Client, req *http.Request, body []byte, maxTime time.Duration) attemptResult {
	if maxTime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, maxTime)
		defer cancel()
	}
	r := req.Clone(ctx)
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	resp, err := client.Do(r)
	if err != nil {
		return attemptResult{err: classify(err, false)}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return attemptResult{resp: resp, err: classify(err, true)}
	}
	return attemptResult{resp: resp, body: data}
}

// maxBackoff caps the exponential backoff, as curl caps its own.
const maxBackoff = 10 * time.Minute

// backoff returns the wait before retry number n (1 for the first retry):
// base·2^(n-1), capped, plus up to half again of random jitter so that
// many clients failing together do not retry together.
func backoff(base time.Duration, n int) time.Duration {
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
// accepted) or an HTTP date. ok is false when absent or unparseable.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s < 0 || s > float64(maxDuration/time.Second) {
			return 0, false
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

const maxDuration = time.Duration(1<<63 - 1)

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

// secretHeaders are shown as "[redacted]" in -v and --dry-run output.
var secretHeaders = map[string]bool{
	"authorization":       true,
	"proxy-authorization": true,
	"cookie":              true,
	"set-cookie":          true,
	"x-api-key":           true,
	"api-key":             true,
	"x-auth-token":        true,
}

// redact returns a header value fit to print: credentials are replaced,
// an authorization scheme ("Basic", "Bearer") is kept.
func redact(name, value string) string {
	n := strings.ToLower(name)
	if !secretHeaders[n] {
		return value
	}
	if n == "authorization" || n == "proxy-authorization" {
		if scheme, _, ok := strings.Cut(value, " "); ok {
			return scheme + " [redacted]"
		}
	}
	return "[redacted]"
}
