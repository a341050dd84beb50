package post_test

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/derive/post"
)

// TestPostRefusesKeyHeadersTheClientDrops: a key under a header Go's
// client writes, drops or rewrites would not arrive; it is a usage error
// and nothing is sent.
func TestPostRefusesKeyHeadersTheClientDrops(t *testing.T) {
	t.Parallel()
	s := newIdemServer(t)
	for _, name := range []string{"Host", "content-length", "Transfer-Encoding", "Trailer", "Connection",
		"Upgrade", "Keep-Alive", "Proxy-Connection", "TE", "Expect", "Content-Type", "Authorization", "User-Agent"} {
		for _, extra := range [][]string{nil, {"--dry-run"}, {"-v"}} {
			r := ppost(t, s.URL, append([]string{"--key-header", name}, extra...)...)
			postCheckExit(t, r, cli.ExitUsage)
			if r.Stdout != "" || !strings.Contains(r.Stderr, "--key-header "+name+" cannot carry the key") {
				t.Errorf("--key-header %s %v: stdout %q, stderr %q", name, extra, r.Stdout, r.Stderr)
			}
		}
	}
	if n := len(s.seen()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

// TestPostVerboseShowsWhatWasSent: -v shows the request head as written,
// with the HTTP version and the headers Go's client adds (Connection,
// Content-Length, the Authorization built from user:pass@ in the URL).
func TestPostVerboseShowsWhatWasSent(t *testing.T) {
	t.Parallel()
	s := newIdemServer(t)
	u := strings.Replace(s.URL, "http://", "http://alice:pw-s3cret@", 1) + "/v1/pay"
	r := ppost(t, u, "-v")
	postCheckExit(t, r, 0)
	a := s.seen()[0]
	if user, _, ok := (&http.Request{Header: a.Header}).BasicAuth(); !ok || user != "alice" {
		t.Fatalf("the server got no basic auth from the URL: %v", a.Header)
	}
	for _, want := range []string{
		"> POST /v1/pay HTTP/1.1\n", "> Connection: close\n", "> Authorization: Basic [redacted]\n",
		"> Content-Length: " + strconv.Itoa(len(a.Body)) + "\n", "> Idempotency-Key: " + a.Key + "\n",
		"< HTTP/1.1 201 Created\n",
	} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.Stderr)
		}
	}
	if strings.Contains(r.Stderr, "s3cret") {
		t.Errorf("stderr shows the password:\n%s", r.Stderr)
	}
}

// TestPostRefusesLossyBody: a body whose canonical form changes a value is
// refused before anything is sent, with the pointer, both values and the
// two ways out; --send-as-is and --lossy take them.
func TestPostRefusesLossyBody(t *testing.T) {
	t.Parallel()
	s := newIdemServer(t)
	for in, wants := range map[string][]string{
		`{"id": 1234567890123456789}`: {"at /id 1234567890123456789 would be sent as 1234567890123456800"},
		`{"big": [1e400]}`:            {"at /big/0 1e400 would be sent as null"},
		`{"a": 1, "a": 2}`:            {"at /a the repeated name would drop the value 1 and keep 2"},
	} {
		r := clitest.Streams{In: strings.NewReader("")}.Run(t, "post", s.URL, "--task", "t1", "--tool", "pay", "-d", in)
		postCheckExit(t, r, cli.ExitUsage)
		for _, want := range append(wants, "idemkey: error: <-d>: the canonical body would change a value: ", "hint: --send-as-is", "--lossy") {
			if !strings.Contains(r.Stderr, want) {
				t.Errorf("%s: stderr lacks %q:\n%s", in, want, r.Stderr)
			}
		}
	}
	if n := len(s.seen()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
	in := `{"id": 1234567890123456789}`
	key := postKeyOf(t, in)
	r := clitest.Streams{In: strings.NewReader("")}.Run(t, "post", s.URL, "--task", "t1", "--tool", "pay", "-d", in, "--send-as-is")
	postCheckExit(t, r, 0)
	r = clitest.Streams{In: strings.NewReader("")}.Run(t, "post", s.URL+"/b", "--task", "t1", "--tool", "pay", "-d", in, "--lossy")
	postCheckExit(t, r, post.CurlHTTPError) // the same key with the canonical bytes: the server's 422, exit 22
	seen := s.seen()
	if len(seen) != 2 || string(seen[0].Body) != in || string(seen[1].Body) != `{"id":1234567890123456800}` || seen[0].Key != key {
		t.Errorf("sent %+v", seen)
	}
	// Lossless rewrites stay the default.
	s = newIdemServer(t)
	in = `{"z": 1.0, "a": [1e2, 0.5E1, "\u00e9\/"], "n": 9007199254740992}`
	r = clitest.Streams{In: strings.NewReader("")}.Run(t, "post", s.URL, "--task", "t1", "--tool", "pay", "-d", in)
	postCheckExit(t, r, 0)
	if got := string(s.seen()[0].Body); got != `{"a":[100,5,"é/"],"n":9007199254740992,"z":1}` {
		t.Errorf("sent %s", got)
	}
}

// TestPostRejectsHeaderInjection: CR, LF and other control characters in
// -H, -A or --prefix are usage errors before anything is sent, and
// --dry-run shows no injected line.
func TestPostRejectsHeaderInjection(t *testing.T) {
	t.Parallel()
	s := newIdemServer(t)
	for _, args := range [][]string{
		{"-H", "X-Trace: a\r\nInjected: 1"},
		{"-H", "X-Trace: a\nInjected: 1"},
		{"-H", "X-Trace: a\x00b"},
		{"-H", "X-Trace: \x1b[31mred"},
		{"-H", "X\r\nInjected: 1"},
		{"-A", "agent\r\nInjected: 1"},
		{"--prefix", "x\n"},
		{"--prefix", "a\rInjected: 1"},
	} {
		for _, extra := range [][]string{nil, {"--dry-run"}, {"--retry", "3"}} {
			r := ppost(t, s.URL, append(args, extra...)...)
			postCheckExit(t, r, cli.ExitUsage)
			if r.Stdout != "" || injectedLine(r.Stderr) || strings.Count(r.Stderr, "\n") > 2 {
				t.Errorf("%q %v: stdout %q, stderr %q", args, extra, r.Stdout, r.Stderr)
			}
		}
	}
	if n := len(s.seen()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

// TestPostRedactsSecretsInMessages: a malformed -H does not echo its
// token, an invalid URL not its password; -v and --dry-run redact the
// token-bearing headers.
func TestPostRedactsSecretsInMessages(t *testing.T) {
	t.Parallel()
	r := ppost(t, "http://127.0.0.1:9/", "-H", "Authorization Bearer ghp_s3cret")
	postCheckExit(t, r, cli.ExitUsage)
	if strings.Contains(r.Stderr, "s3cret") || !strings.Contains(r.Stderr, `invalid -H starting with "Authorization"`) {
		t.Errorf("stderr %q", r.Stderr)
	}
	for _, u := range []string{"http://u:PASS-s3cret@/x", "http://u:PASS-s3cret@[::1/x", "http://u:PASS-s3cret@host:port/x"} {
		r = ppost(t, u)
		postCheckExit(t, r, post.CurlURLMalformat)
		if strings.Contains(r.Stderr, "s3cret") || !strings.Contains(r.Stderr, "invalid URL") {
			t.Errorf("%s: stderr %q", u, r.Stderr)
		}
	}
	var hs []string
	for _, h := range []string{"Private-Token", "X-Amz-Security-Token", "X-Goog-Api-Key", "X-Access-Token",
		"X-Client-Secret", "X-Db-Password", "X-Session-Id", "X-Auth", "Cookie", "Proxy-Authorization"} {
		hs = append(hs, "-H", h+": tok-s3cret")
	}
	hs = append(hs, "-H", "Authorization: ghp_s3cret and more")
	r = ppost(t, "http://127.0.0.1:9/", append(hs, "--dry-run")...)
	postCheckExit(t, r, 0)
	if strings.Contains(r.Stdout, "s3cret") || !strings.Contains(r.Stdout, "\nAuthorization: [redacted]\n") ||
		!strings.Contains(r.Stdout, "\nPrivate-Token: [redacted]\n") {
		t.Errorf("--dry-run shows a secret:\n%s", r.Stdout)
	}
	s := newIdemServer(t)
	r = ppost(t, s.URL, append(hs, "-v")...)
	postCheckExit(t, r, 0)
	if strings.Contains(r.Stderr, "s3cret") || !strings.Contains(r.Stderr, "> X-Amz-Security-Token: [redacted]\n") {
		t.Errorf("-v shows a secret:\n%s", r.Stderr)
	}
	if got := s.seen()[0].Header.Get("X-Goog-Api-Key"); got != "tok-s3cret" {
		t.Errorf("the server got %q", got)
	}
}

// TestPostKeyConflictIsNeverSuccess: 422 exits 22 with or without -f; -s
// keeps the code and drops the message.
func TestPostKeyConflictIsNeverSuccess(t *testing.T) {
	t.Parallel()
	s := newIdemServer(t, faultStatus)
	s.status = http.StatusUnprocessableEntity
	r := ppost(t, s.URL, "-s")
	postCheckExit(t, r, post.CurlHTTPError)
	if r.Stderr != "" || !strings.Contains(r.Stdout, "422") {
		t.Errorf("-s: stdout %q, stderr %q", r.Stdout, r.Stderr)
	}
}

// postFailWriter fails every write, as /dev/full does.
type postFailWriter struct{}

func (postFailWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// TestPostStdoutWriteError: a failed write of the body is curl's 23.
func TestPostStdoutWriteError(t *testing.T) {
	t.Parallel()
	s := newIdemServer(t)
	o := clitest.Streams{Out: postFailWriter{}}.Run(t, "post", s.URL, "--task", "t1", "--tool", "pay", "-d", postArgs)
	if o.Code != post.CurlWriteError || !strings.Contains(o.Stderr, "(23) cannot write standard output: no space left on device") {
		t.Errorf("exit %d, stderr %q", o.Code, o.Stderr)
	}
	o = clitest.Streams{Out: postFailWriter{}}.Run(t, "post", s.URL, "--task", "t1", "--tool", "pay", "-d", postArgs, "--dry-run")
	if o.Code != post.CurlWriteError {
		t.Errorf("--dry-run: exit %d", o.Code)
	}
}

// TestPostHeaderRemovalAndKeyShown: removing a transport header (curl's
// -H 'Expect:') is accepted; a key under a token-like name is shown in -v,
// not redacted; a bad proxy variable is a usage error before sending.
func TestPostHeaderRemovalAndKeyShown(t *testing.T) {
	t.Parallel()
	s := newIdemServer(t)
	s.keyHeader = "X-Idempotency-Token"
	key := postKeyOf(t, postArgs)
	r := ppost(t, s.URL, "-H", "Expect:", "-H", "Connection:", "-H", "Expect: 100-continue", "--key-header", "X-Idempotency-Token", "-v")
	postCheckExit(t, r, 0)
	if !strings.Contains(r.Stderr, "> X-Idempotency-Token: "+key+"\n") || s.seen()[0].Key != key {
		t.Errorf("stderr %q", r.Stderr)
	}
	o := clitest.Streams{Env: map[string]string{"http_proxy": "http://u:s3cret@[::1"}}.Run(t, "post", s.URL, "--task", "t1", "--tool", "pay", "-d", postArgs)
	if o.Code != cli.ExitUsage || !strings.Contains(o.Stderr, "invalid proxy in the environment") || strings.Contains(o.Stderr, "s3cret") {
		t.Errorf("exit %d, stderr %q", o.Code, o.Stderr)
	}
	if len(s.seen()) != 1 {
		t.Errorf("%d requests", len(s.seen()))
	}
}

// injectedLine reports whether a line of s starts with the injected
// header or carries a raw control character: a value may be echoed only
// escaped, on the line of its message.
func injectedLine(s string) bool {
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "Injected") || strings.ContainsAny(line, "\r\x00\x1b") {
			return true
		}
	}
	return false
}
