package post

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	wrap := func(err error) error { return fmt.Errorf("Post \"https://x\": %w", err) }
	for _, tc := range []struct {
		err    error
		inBody bool
		code   int
	}{
		{&net.DNSError{Err: "no such host", Name: "api.example", IsNotFound: true}, false, CurlResolve},
		{&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, false, CurlConnect},
		{context.DeadlineExceeded, true, CurlTimeout},
		{tls.AlertError(40), false, CurlSSLConnect},
		{&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}, false, CurlPeerVerify},
		{&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, true, CurlRecvError},
		{io.EOF, false, CurlEmptyReply},
		{io.ErrUnexpectedEOF, true, CurlPartialFile},
		{errors.New("net/http: HTTP/1.x transport connection broken: malformed HTTP response \"x\""), false, CurlWeirdReply},
		{errors.New(`net/http: HTTP/1.x transport connection broken: bad Content-Length "abc"`), false, CurlWeirdReply},
		{errors.New(`net/http: HTTP/1.x transport connection broken: malformed MIME header line: "X: a\x00b"`), false, CurlWeirdReply},
		{&tlsHandshakeError{&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}}, false, CurlSSLConnect},
		{&tlsHandshakeError{io.EOF}, false, CurlSSLConnect},
		{fmt.Errorf("%w: cannot store the response body: no space left on device", errSpool), true, CurlWriteError},
	} {
		got := Classify(wrap(tc.err), tc.inBody)
		if got.Code != tc.code {
			t.Errorf("Classify(%v) = %v, want code %d", tc.err, got, tc.code)
		}
		if want := tc.code != CurlWeirdReply && tc.code != CurlPeerVerify && tc.code != CurlWriteError; got.Retryable() != want {
			t.Errorf("Classify(%v).Retryable() = %v", tc.err, got.Retryable())
		}
	}
}

// TestClassifyProxyResolve: a proxy whose name does not resolve is curl's
// 5, and retried, as a server's name is.
func TestClassifyProxyResolve(t *testing.T) {
	t.Parallel()
	ce := Classify(&net.OpError{Op: "proxyconnect", Net: "tcp", Err: &net.OpError{Op: "dial", Net: "tcp",
		Err: &net.DNSError{Err: "no such host", Name: "proxy.example", IsNotFound: true}}}, false)
	if ce.Code != CurlResolveProxy || !ce.Retryable() {
		t.Errorf("classify: %v, retryable %v", ce, ce.Retryable())
	}
}

// TestBeforeSending: failures before the request could leave (a refused
// connection, a name not resolved) are before sending; a timeout, an
// empty reply and a reset are not (the request may have had an effect).
func TestBeforeSending(t *testing.T) {
	for code, before := range map[int]bool{CurlConnect: true, CurlResolve: true, CurlSSLConnect: true,
		CurlTimeout: false, CurlEmptyReply: false, CurlRecvError: false, CurlPartialFile: false} {
		if got := (&Error{Code: code}).BeforeSending(); got != before {
			t.Errorf("code %d: BeforeSending %v, want %v", code, got, before)
		}
	}
}
