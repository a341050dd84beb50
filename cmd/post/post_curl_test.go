package post_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/derive/post"
)

// TestPostWriteOut: -w writes curl's variables after the transfer, and
// idemkey's own %{idempotency_key}.
func TestPostWriteOut(t *testing.T) {
	t.Parallel()
	s := newIdemServer(t, faultUnavailable)
	s.retryAfter = "0"
	key := postKeyOf(t, postArgs)
	r := ppost(t, s.URL+"/v1/pay", "--retry", "2", "--retry-delay", "0.01", "-o", filepath.Join(t.TempDir(), "out"),
		"-w", `%{http_code} %{num_retries} %{idempotency_key} %{url_effective} %{method} %{size_download} %{content_type} %{exitcode} %{http_version} %header{idempotent-replayed}|%%|\t|%{time_total}\n`)
	postCheckExit(t, r, 0)
	want := regexp.MustCompile(`^201 1 ` + key + ` ` + regexp.QuoteMeta(s.URL) + `/v1/pay POST 98 application/json 0 1\.1 \|%\|\t\|[0-9]+\.[0-9]{6}\n$`)
	if !want.MatchString(r.Stdout) {
		t.Errorf("-w: stdout %q", r.Stdout)
	}
	// The connection's addresses and the final attempt's times.
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(s.URL, "http://"))
	r = ppost(t, s.URL, "-o", filepath.Join(t.TempDir(), "out2"), "--retry-connrefused",
		"-w", "%{remote_ip} %{remote_port} %{local_ip} %{time_namelookup} %{time_connect} %{time_appconnect} %{time_starttransfer} %{time_total}")
	postCheckExit(t, r, 0)
	f := strings.Fields(r.Stdout)
	if len(f) != 8 || f[0] != host || f[1] != port || f[2] != "127.0.0.1" || f[5] != "0.000000" {
		t.Fatalf("-w addresses and times: %q", r.Stdout)
	}
	var connect, first, total float64
	fmt.Sscan(f[4]+" "+f[6]+" "+f[7], &connect, &first, &total)
	if !(connect > 0 && first >= connect && total >= first) {
		t.Errorf("times out of order: %q", r.Stdout)
	}
	// Written after a failure too, with curl's 000 and the exit code.
	r = ppost(t, "http://"+postClosedPort(t)+"/", "-w", `%{http_code} %{exitcode} %{errormsg}\n`, "-s")
	postCheckExit(t, r, post.CurlConnect)
	if !strings.HasPrefix(r.Stdout, "000 7 failed to connect to ") {
		t.Errorf("-w after a failure: stdout %q", r.Stdout)
	}
	// An unknown variable is a usage error before anything is sent.
	r = ppost(t, s.URL, "-w", "%{http_cod}")
	postCheckExit(t, r, cli.ExitUsage)
	if !strings.Contains(r.Stderr, "-w: unknown variable %{http_cod}") || len(s.seen()) != 3 {
		t.Errorf("stderr %q, %d requests", r.Stderr, len(s.seen()))
	}
}

// TestPostDumpHeaderAndUserAgent: -D writes the headers to a file, -A sets
// the User-Agent.
func TestPostDumpHeaderAndUserAgent(t *testing.T) {
	t.Parallel()
	s := newIdemServer(t)
	file := filepath.Join(t.TempDir(), "headers")
	r := ppost(t, s.URL, "-D", file, "-A", "agent/1.0")
	postCheckExit(t, r, 0)
	got, err := os.ReadFile(file)
	if err != nil || !strings.HasPrefix(string(got), "HTTP/1.1 201 Created\r\n") || !strings.HasSuffix(string(got), "\r\n\r\n") {
		t.Errorf("-D: %q, %v", got, err)
	}
	if ua := s.seen()[0].Header.Get("User-Agent"); ua != "agent/1.0" {
		t.Errorf("User-Agent %q", ua)
	}
	// -A '' and -H 'User-Agent:' send none (Go's client would add its own).
	for _, args := range [][]string{{"-A", ""}, {"-H", "User-Agent:"}} {
		r = ppost(t, s.URL, append(args, "-v")...)
		postCheckExit(t, r, 0)
		if h := s.seen()[len(s.seen())-1].Header; len(h.Values("User-Agent")) != 0 || strings.Contains(r.Stderr, "User-Agent") {
			t.Errorf("%q: the server got User-Agent %q; -v:\n%s", args, h.Values("User-Agent"), r.Stderr)
		}
	}
}

// TestPostDataFlags: --data-binary and --json read @FILE, --data-raw
// takes @ literally, --json adds its headers; one body flag only.
func TestPostDataFlags(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "args.json")
	if err := os.WriteFile(file, []byte(postArgs), 0o600); err != nil {
		t.Fatal(err)
	}
	key, body := postKeyOf(t, postArgs), postCanonical(t, postArgs)
	for _, flag := range []string{"--data-binary", "--json"} {
		s := newIdemServer(t)
		r := clitest.Streams{In: strings.NewReader("")}.Run(t, "post", s.URL, "--task", "t1", "--tool", "pay", flag, "@"+file)
		postCheckExit(t, r, 0)
		postCheckAttempts(t, s, 1, key, body, 1)
		h := s.seen()[0].Header
		wantAccept := "*/*"
		if flag == "--json" {
			wantAccept = "application/json"
		}
		if h.Get("Content-Type") != "application/json" || h.Get("Accept") != wantAccept {
			t.Errorf("%s: Content-Type %q, Accept %q", flag, h.Get("Content-Type"), h.Get("Accept"))
		}
	}
	s := newIdemServer(t)
	r := clitest.Streams{In: strings.NewReader("")}.Run(t, "post", s.URL, "--task", "t1", "--tool", "pay", "--data-raw", "@"+file)
	postCheckExit(t, r, cli.ExitUsage)
	if !strings.Contains(r.Stderr, "<--data-raw>:1:1: ") {
		t.Errorf("--data-raw @FILE: stderr %q (want the literal text parsed)", r.Stderr)
	}
	r = clitest.Streams{In: strings.NewReader("")}.Run(t, "post", s.URL, "--task", "t1", "--tool", "pay", "--data-raw", `{"at":"@home"}`)
	postCheckExit(t, r, 0)
	r = clitest.Streams{In: strings.NewReader("")}.Run(t, "post", s.URL, "--task", "t1", "--tool", "pay", "--json", "{}", "-d", "{}")
	postCheckExit(t, r, cli.ExitUsage)
	if !strings.Contains(r.Stderr, "more than one body: --json and --data") {
		t.Errorf("stderr %q", r.Stderr)
	}
}

// TestPostClientCertificate: --cert and --key authenticate to a server
// that requires a client certificate.
func TestPostClientCertificate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key")
	clientCert := postSelfSigned(t, certFile, keyFile)
	pool := x509.NewCertPool()
	pool.AddCert(clientCert)
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "hello %s", r.TLS.PeerCertificates[0].Subject.CommonName)
	}))
	s.Listener.Close()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Listener = l
	s.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.StartTLS()
	t.Cleanup(s.Close)
	r := ppost(t, s.URL, "-k", "-s", "--cert", certFile, "--key", keyFile)
	postCheckExit(t, r, 0)
	if r.Stdout != "hello idemkey-test-client" {
		t.Errorf("stdout %q, stderr %q", r.Stdout, r.Stderr)
	}
	r = ppost(t, s.URL, "-k", "-s")
	if r.Code == 0 {
		t.Errorf("without --cert: exit 0, stdout %q", r.Stdout)
	}
	r = ppost(t, s.URL, "-k", "--cert", filepath.Join(dir, "none.pem"))
	postCheckExit(t, r, post.CurlSSLCertProblem)
}

// postSelfSigned writes a self-signed client certificate and its key.
func postSelfSigned(t *testing.T, certFile, keyFile string) *x509.Certificate {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "idemkey-test-client"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return c
}

// postRedirReq is one request a postRedirServer saw.
type postRedirReq struct {
	Method, Path, Key, Auth, Cookie, Body string
}

// postRedirServer answers /start with a redirect to target, and records every
// request.
func postRedirServer(t *testing.T, status int, target func(self string) string) (*httptest.Server, func() []postRedirReq) {
	t.Helper()
	var mu sync.Mutex
	var seen []postRedirReq
	var s *httptest.Server
	s = postLoopback(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, postRedirReq{r.Method, r.URL.Path, r.Header.Get("Idempotency-Key"), r.Header.Get("Authorization"), r.Header.Get("Cookie"), string(b)})
		mu.Unlock()
		if r.URL.Path == "/start" || r.URL.Path == "/loop" {
			w.Header().Set("Location", target(s.URL))
			w.WriteHeader(status)
			return
		}
		fmt.Fprintf(w, "final %s", r.Method)
	})
	return s, func() []postRedirReq { mu.Lock(); defer mu.Unlock(); return append([]postRedirReq(nil), seen...) }
}

// TestPostLocation: -L follows redirects by curl's rules.
func TestPostLocation(t *testing.T) {
	t.Parallel()
	key, body := postKeyOf(t, postArgs), string(postCanonical(t, postArgs))
	for _, tc := range []struct {
		status       int
		method, want string
	}{
		{307, "POST", "POST"}, {308, "PUT", "PUT"}, {303, "PUT", "GET"}, {302, "POST", "GET"}, {301, "POST", "GET"}, {301, "PATCH", "PATCH"},
	} {
		s, seen := postRedirServer(t, tc.status, func(self string) string { return "/done" })
		r := ppost(t, s.URL+"/start", "-L", "-X", tc.method, "-H", "Authorization: Bearer tok", "-w", "\n%{num_redirects} %{url_effective}")
		postCheckExit(t, r, 0)
		if want := "final " + tc.want + "\n1 " + s.URL + "/done"; r.Stdout != want {
			t.Errorf("%d %s: stdout %q, want %q", tc.status, tc.method, r.Stdout, want)
		}
		got := seen()
		if len(got) != 2 {
			t.Fatalf("%d: %d requests", tc.status, len(got))
		}
		wantBody := body
		if tc.want == "GET" {
			wantBody = ""
		}
		if got[1].Key != key || got[1].Body != wantBody || got[1].Auth != "Bearer tok" {
			t.Errorf("%d %s: the redirected request %+v", tc.status, tc.method, got[1])
		}
	}
	// Without -L, the redirect is the response.
	s, seen := postRedirServer(t, 307, func(string) string { return "/done" })
	r := ppost(t, s.URL+"/start", "-w", "%{http_code} %{redirect_url}")
	postCheckExit(t, r, 0)
	if r.Stdout != "307 "+s.URL+"/done" || len(seen()) != 1 {
		t.Errorf("no -L: stdout %q, %d requests", r.Stdout, len(seen()))
	}
	// To another host: no credentials; the same key and body.
	other, otherSeen := postRedirServer(t, 307, nil)
	s, _ = postRedirServer(t, 307, func(string) string { return other.URL + "/done" })
	r = ppost(t, s.URL+"/start", "-L", "-H", "Authorization: Bearer tok", "-H", "Cookie: a=b", "-u", "x:y", "-H", "X-Api-Key: k")
	postCheckExit(t, r, 0)
	if got := otherSeen(); len(got) != 1 || got[0].Auth != "" || got[0].Cookie != "" || got[0].Key != key || got[0].Body != body {
		t.Errorf("cross-host redirect sent %+v", got)
	}
	// Too many: curl's 47.
	s, seen = postRedirServer(t, 307, func(self string) string { return "/loop" })
	r = ppost(t, s.URL+"/loop", "-L", "--max-redirs", "3")
	postCheckExit(t, r, post.CurlTooManyRedirects)
	if !strings.Contains(r.Stderr, "(47) maximum (3) redirects followed") || len(seen()) != 4 {
		t.Errorf("stderr %q, %d requests", r.Stderr, len(seen()))
	}
}
