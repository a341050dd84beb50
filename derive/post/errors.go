package post

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
)

// curl's exit codes, used by post for transfer failures so that scripts
// written against curl keep working.
const (
	CurlURLMalformat     = 3  // the URL is malformed
	CurlResolveProxy     = 5  // could not resolve the proxy
	CurlResolve          = 6  // could not resolve host
	CurlConnect          = 7  // failed to connect (refused, unreachable)
	CurlWeirdReply       = 8  // the reply is not HTTP
	CurlPartialFile      = 18 // the reply ended before its announced length
	CurlHTTPError        = 22 // HTTP status >= 400 with --fail or --fail-with-body; 422 always
	CurlWriteError       = 23 // cannot write the output
	CurlTimeout          = 28 // --max-time or --connect-timeout expired
	CurlSSLConnect       = 35 // TLS handshake failed
	CurlTooManyRedirects = 47 // more redirects than --max-redirs
	CurlEmptyReply       = 52 // the server closed the connection without a reply
	CurlSendError        = 55 // sending the request failed
	CurlRecvError        = 56 // receiving the reply failed (connection reset)
	CurlSSLCertProblem   = 58 // --cert or --key cannot be used
	CurlBadEncoding      = 61 // a Transfer-Encoding the client does not know
	CurlPeerVerify       = 60 // the server's certificate did not verify
	CurlCACert           = 77 // --cacert cannot be read or holds no certificate
)

// Error is a transfer failure; its exit code is curl's for the same
// failure. Its message starts with the code, as curl's does: "(7) failed
// to connect …".
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return fmt.Sprintf("(%d) %s", e.Code, e.Err) }
func (e *Error) Unwrap() error { return e.Err }
func (e *Error) ExitCode() int { return e.Code }

// Retryable reports whether a failure with this code may succeed when the
// same request (same key, same body) is sent again.
func (e *Error) Retryable() bool {
	if tunnel := (*proxyTunnelError)(nil); errors.As(e.Err, &tunnel) {
		// The proxy's answer: its 407 or 403 will not change, its 503
		// (it could not reach the server) may.
		return RetryStatus(tunnel.status)
	}
	switch e.Code {
	case CurlResolveProxy, CurlResolve, CurlConnect, CurlPartialFile, CurlTimeout, CurlSSLConnect,
		CurlEmptyReply, CurlSendError, CurlRecvError:
		return true
	}
	return false
}

// BeforeSending reports whether the failure came before any of the
// request could reach the server: a name not resolved, a connection
// refused, a TLS handshake or certificate refused, a malformed URL. A
// timeout is not: it may have come once the request was sent.
func (e *Error) BeforeSending() bool {
	switch e.Code {
	case CurlURLMalformat, CurlResolveProxy, CurlResolve, CurlConnect, CurlSSLConnect, CurlPeerVerify,
		CurlSSLCertProblem, CurlCACert, CurlTooManyRedirects:
		return true
	}
	return false
}

// Hinted is an error message with a suggestion for the reader, which the
// face writes on a "hint:" line.
type Hinted struct{ Msg, Advice string }

func (e *Hinted) Error() string { return e.Msg }
func (e *Hinted) Hint() string  { return e.Advice }

// UsageError is a request that cannot be sent as given (a malformed -H,
// an unknown -w variable, a bad proxy variable): exit 2, before anything
// is sent.
type UsageError struct {
	Err    error
	Advice string // the hint, or ""
}

// usageErrorf is a *UsageError with a formatted message.
func usageErrorf(format string, args ...any) *UsageError {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }
func (e *UsageError) ExitCode() int { return 2 }
func (e *UsageError) Hint() string  { return e.Advice }

// RetryStatus reports whether an HTTP status is worth retrying with the
// same key: 409 is the draft's "a request with this key is in flight".
func RetryStatus(code int) bool {
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

// Classify turns a transport error into an *Error. inBody is true when
// the status line and headers had arrived and the body was being read.
func Classify(err error, inBody bool) *Error {
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
		return &Error{CurlRecvError, tunnel} // curl's code and words
	case errors.Is(err, errSpool):
		return &Error{CurlWriteError, errors.New(RootCause(err))}
	case errors.As(err, &dns):
		if errors.As(err, &op) && op.Op == "proxyconnect" {
			// Go's transport marks a failure to reach the proxy so.
			return &Error{CurlResolveProxy, fmt.Errorf("could not resolve proxy %s", dns.Name)}
		}
		return &Error{CurlResolve, fmt.Errorf("could not resolve host %s", dns.Name)}
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return &Error{CurlTimeout, errors.New("operation timed out")}
	case errors.As(err, &cve) || errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid):
		return &Error{CurlPeerVerify, &Hinted{
			Msg:    "server certificate verification failed: " + RootCause(err),
			Advice: "give the issuing CA with --cacert FILE (or -k to skip verification, never in production)",
		}}
	case errors.As(err, &hs) || errors.As(err, &alert) || errors.As(err, &record) || strings.Contains(msg, "tls: "):
		return &Error{CurlSSLConnect, errors.New("tls handshake failed: " + RootCause(err))}
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
		return &Error{CurlConnect, fmt.Errorf("failed to connect%s: %s", to, RootCause(err))}
	case strings.Contains(msg, "transfer encoding"):
		return &Error{CurlBadEncoding, errors.New("unrecognized transfer encoding: " + RootCause(err))}
	case strings.Contains(msg, "malformed HTTP") || strings.Contains(msg, "malformed MIME") ||
		strings.Contains(msg, "Content-Length") || strings.Contains(msg, "invalid header") ||
		strings.Contains(msg, "server response headers exceeded"):
		return &Error{CurlWeirdReply, errors.New("weird server reply: " + RootCause(err))}
	case errors.Is(err, syscall.ECONNRESET):
		return &Error{CurlRecvError, errors.New("failure when receiving data from the peer: connection reset by peer")}
	case errors.Is(err, syscall.EPIPE):
		return &Error{CurlSendError, errors.New("failure when sending data to the peer: broken pipe")}
	case inBody && errors.Is(err, io.ErrUnexpectedEOF):
		return &Error{CurlPartialFile, errors.New("transfer closed with outstanding read data remaining")}
	case !inBody && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)):
		return &Error{CurlEmptyReply, errors.New("empty reply from server")}
	}
	return &Error{CurlRecvError, errors.New("failure when receiving data from the peer: " + RootCause(err))}
}

// RootCause strips Go's wrapping ("Post \"http://…\": dial tcp …: ") down
// to the innermost message, lower case as the project's diagnostics are.
func RootCause(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			break
		}
		err = u
	}
	return err.Error()
}
