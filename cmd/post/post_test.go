package post_test

import (
	"bytes"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/derive/post"
)

// postArgs: args.json of the tests: members out of order and a non-ASCII string, so
// that the canonical body differs from the original bytes.
const postArgs = `{"b": 1, "a": "é"}`

// postFast makes retries quick in tests: 10ms first delay.
var postFast = []string{"--retry-delay", "0.01"}

// ppost runs idemkey post against url with task t1, tool pay and the body
// postArgs inline, plus args.
func ppost(t *testing.T, url string, args ...string) clitest.Output {
	t.Helper()
	return clitest.Streams{In: strings.NewReader("")}.Run(t, append([]string{"post", url, "--task", "t1", "--tool", "pay", "-d", postArgs}, args...)...)
}

// postKeyOf returns what 'idemkey key' prints for task t1, tool pay and body.
func postKeyOf(t *testing.T, body string) string {
	t.Helper()
	r := clitest.Streams{In: strings.NewReader(body)}.Run(t, "key", "--task", "t1", "--tool", "pay")
	if r.Code != 0 {
		t.Fatalf("idemkey key: exit %d: %s", r.Code, r.Stderr)
	}
	return strings.TrimSpace(r.Stdout)
}

// postCanonical returns what 'idemkey canon' prints for body, without the
// final newline.
func postCanonical(t *testing.T, body string) []byte {
	t.Helper()
	r := clitest.Streams{In: strings.NewReader(body)}.Run(t, "canon")
	if r.Code != 0 {
		t.Fatalf("idemkey canon: exit %d: %s", r.Code, r.Stderr)
	}
	return []byte(strings.TrimSuffix(r.Stdout, "\n"))
}

// postCheckAttempts asserts the server saw n attempts, all with the same key
// and body bytes, and that the effect ran exactly once (want 1) or never.
func postCheckAttempts(t *testing.T, s *idemServer, n int, key string, body []byte, effects int) {
	t.Helper()
	seen := s.seen()
	if len(seen) != n {
		t.Errorf("server saw %d attempts, want %d", len(seen), n)
	}
	for i, a := range seen {
		if a.Key != key {
			t.Errorf("attempt %d carried key %q, want %q", i+1, a.Key, key)
		}
		if !bytes.Equal(a.Body, body) {
			t.Errorf("attempt %d carried body %q, want %q", i+1, a.Body, body)
		}
	}
	if got := s.effectCount(key); got != effects {
		t.Errorf("side effect ran %d times, want %d", got, effects)
	}
}

func postCheckExit(t *testing.T, r clitest.Output, code int) {
	t.Helper()
	if r.Code != code {
		t.Errorf("exit code %d, want %d\nstdout: %s\nstderr: %s", r.Code, code, r.Stdout, r.Stderr)
	}
}

func TestPostSendsCanonicalBodyAndDerivedKey(t *testing.T) {
	t.Parallel()
	s := newIdemServer(t)
	key, body := postKeyOf(t, postArgs), postCanonical(t, postArgs)
	r := ppost(t, s.URL+"/charges")
	postCheckExit(t, r, 0)
	postCheckAttempts(t, s, 1, key, body, 1)
	if r.Stdout != string(s.savedBody(key)) {
		t.Errorf("stdout %q, want the server's body %q", r.Stdout, s.savedBody(key))
	}
	if r.Stderr != "" {
		t.Errorf("stderr %q, want nothing", r.Stderr)
	}
	a := s.seen()[0]
	if a.Method != "POST" || a.Header.Get("Content-Type") != "application/json" {
		t.Errorf("method %s, Content-Type %q", a.Method, a.Header.Get("Content-Type"))
	}
	if bytes.Equal(body, []byte(postArgs)) {
		t.Fatal("test input is already canonical")
	}
}

func TestPostBodySources(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "args.json")
	if err := os.WriteFile(file, []byte(postArgs), 0o600); err != nil {
		t.Fatal(err)
	}
	key, body := postKeyOf(t, postArgs), postCanonical(t, postArgs)
	for _, tc := range []struct {
		name, stdin string
		args        []string
		send        []byte
	}{
		{"file", "", []string{"-d", "@" + file}, body},
		{"stdin", postArgs, []string{"-d", "@-"}, body},
		{"as-is", "", []string{"-d", "@" + file, "--send-as-is"}, []byte(postArgs)},
	} {
		s := newIdemServer(t)
		r := clitest.Streams{In: strings.NewReader(tc.stdin)}.Run(t, append([]string{"post", s.URL, "--task", "t1", "--tool", "pay"}, tc.args...)...)
		postCheckExit(t, r, 0)
		postCheckAttempts(t, s, 1, key, tc.send, 1)
	}
}

func TestPostCommitThenDropIsRetriedAndReplayed(t *testing.T) {
	t.Parallel()
	s := newIdemServer(t, faultDrop)
	key, body := postKeyOf(t, postArgs), postCanonical(t, postArgs)
	r := ppost(t, s.URL, append(postFast, "--retry", "3", "-v")...)
	postCheckExit(t, r, 0)
	postCheckAttempts(t, s, 2, key, body, 1)
	if r.Stdout != string(s.savedBody(key)) {
		t.Errorf("stdout %q, want the saved response once %q", r.Stdout, s.savedBody(key))
	}
	for _, want := range []string{
		"* idempotency key: " + key,
		"(52) empty reply from server",
		"* attempt 2 of 4",
		"Idempotent-Replayed: true",
		"* replayed: the server answered with the response it saved for this key",
	} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.Stderr)
		}
	}

	// Without --retry the outcome is unknown: curl's 52, nothing on stdout.
	s = newIdemServer(t, faultDrop)
	r = ppost(t, s.URL)
	postCheckExit(t, r, post.CurlEmptyReply)
	postCheckAttempts(t, s, 1, key, body, 1)
	if r.Stdout != "" || !strings.Contains(r.Stderr, "idemkey: error: (52) empty reply from server") {
		t.Errorf("stdout %q, stderr %q", r.Stdout, r.Stderr)
	}
}

func TestPostUnavailableHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	s := newIdemServer(t, faultUnavailable, faultUnavailable)
	s.retryAfter = "0.05"
	key, body := postKeyOf(t, postArgs), postCanonical(t, postArgs)
	r := ppost(t, s.URL, "--retry", "5", "--retry-delay", "0.001")
	postCheckExit(t, r, 0)
	postCheckAttempts(t, s, 3, key, body, 1)
	if r.Stdout != string(s.savedBody(key)) {
		t.Errorf("stdout %q, want %q", r.Stdout, s.savedBody(key))
	}
	if got := strings.Count(r.Stderr, "HTTP 503 Service Unavailable; retrying in 50ms (Retry-After) with the same key"); got != 2 {
		t.Errorf("stderr reports %d Retry-After waits of 50ms, want 2:\n%s", got, r.Stderr)
	}

	// A Retry-After beyond --retry-max-time ends the retries; the final
	// response is written, and -f makes it exit 22.
	s = newIdemServer(t, faultUnavailable)
	s.retryAfter = http.TimeFormat // an HTTP date an hour ahead
	s.retryAfter = time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)
	r = ppost(t, s.URL, append(postFast, "--retry", "5", "--retry-max-time", "10", "--fail-with-body")...)
	postCheckExit(t, r, post.CurlHTTPError)
	postCheckAttempts(t, s, 1, key, body, 0)
	if !strings.Contains(r.Stdout, "unavailable") || !strings.Contains(r.Stderr, "(Retry-After) would pass --retry-max-time 10s") {
		t.Errorf("stdout %q, stderr %q", r.Stdout, r.Stderr)
	}
}

func TestPostStallPastMaxTimeThenInFlightThenReplay(t *testing.T) {
	t.Parallel()
	s := newIdemServer(t, faultStall)
	key, body := postKeyOf(t, postArgs), postCanonical(t, postArgs)
	r := ppost(t, s.URL, append(postFast, "--retry", "10", "--max-time", "0.2")...)
	postCheckExit(t, r, 0)
	seen := s.seen()
	postCheckAttempts(t, s, len(seen), key, body, 1)
	if len(seen) < 3 {
		t.Errorf("server saw %d attempts, want a timeout, at least one 409 and a replay", len(seen))
	}
	if r.Stdout != string(s.savedBody(key)) {
		t.Errorf("stdout %q, want %q", r.Stdout, s.savedBody(key))
	}
	for _, want := range []string{"attempt 1: (28) operation timed out", "HTTP 409 Conflict; retrying"} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.Stderr)
		}
	}
}

func TestPostTimeoutWithoutRetry(t *testing.T) {
	t.Parallel()
	s := newIdemServer(t, faultStall)
	r := ppost(t, s.URL, "--max-time", "0.05")
	postCheckExit(t, r, post.CurlTimeout)
	if r.Stdout != "" || !strings.Contains(r.Stderr, "idemkey: error: (28) operation timed out") {
		t.Errorf("stdout %q, stderr %q", r.Stdout, r.Stderr)
	}
	if n := s.effectCount(postKeyOf(t, postArgs)); n != 0 {
		t.Errorf("side effect ran %d times while stalled", n)
	}
	// Sent again, the call is told 409 (in flight), which lets the stalled
	// request finish, and then gets the saved response.
	key := postKeyOf(t, postArgs)
	r = ppost(t, s.URL, append(postFast, "--retry", "5")...)
	postCheckExit(t, r, 0)
	postCheckAttempts(t, s, len(s.seen()), key, postCanonical(t, postArgs), 1)
	if r.Stdout != string(s.savedBody(key)) || !strings.Contains(r.Stderr, "HTTP 409 Conflict; retrying") {
		t.Errorf("stdout %q, stderr %q", r.Stdout, r.Stderr)
	}
}

func TestPostResetOrTruncatedMidBody(t *testing.T) {
	t.Parallel()
	key, body := postKeyOf(t, postArgs), postCanonical(t, postArgs)
	for _, tc := range []struct {
		f    fault
		code int
		msg  string
	}{
		{faultReset, post.CurlRecvError, "(56) failure when receiving data from the peer: connection reset by peer"},
		{faultTruncate, post.CurlPartialFile, "(18) transfer closed with outstanding read data remaining"},
	} {
		s := newIdemServer(t, tc.f)
		r := ppost(t, s.URL, append(postFast, "--retry", "2")...)
		postCheckExit(t, r, 0)
		postCheckAttempts(t, s, 2, key, body, 1)
		if r.Stdout != string(s.savedBody(key)) {
			t.Errorf("stdout %q, want the whole body once %q", r.Stdout, s.savedBody(key))
		}
		if !strings.Contains(r.Stderr, "attempt 1: "+tc.msg) {
			t.Errorf("stderr lacks %q:\n%s", tc.msg, r.Stderr)
		}

		s = newIdemServer(t, tc.f)
		r = ppost(t, s.URL)
		postCheckExit(t, r, tc.code)
		postCheckAttempts(t, s, 1, key, body, 1)
		if r.Stdout != "" || !strings.Contains(r.Stderr, "idemkey: error: "+tc.msg) {
			t.Errorf("no half body on stdout: stdout %q, stderr %q", r.Stdout, r.Stderr)
		}
	}
}

func TestPostNeverRetriesClientErrors(t *testing.T) {
	t.Parallel()
	key, body := postKeyOf(t, postArgs), postCanonical(t, postArgs)
	for _, status := range []int{400, 401, 403, 404} {
		s := newIdemServer(t, faultStatus)
		s.status = status
		r := ppost(t, s.URL, append(postFast, "--retry", "3")...)
		postCheckExit(t, r, 0) // as curl: an HTTP error is a response, without -f
		postCheckAttempts(t, s, 1, key, body, 0)
		if want := fmt.Sprintf(`{"error":%d}`+"\n", status); r.Stdout != want || r.Stderr != "" {
			t.Errorf("%d: stdout %q (want %q), stderr %q", status, r.Stdout, want, r.Stderr)
		}

		s = newIdemServer(t, faultStatus)
		s.status = status
		r = ppost(t, s.URL, append(postFast, "--retry", "3", "-f")...)
		postCheckExit(t, r, post.CurlHTTPError)
		postCheckAttempts(t, s, 1, key, body, 0)
		want := fmt.Sprintf("idemkey: error: (22) the requested URL returned error: %d\n", status)
		if r.Stdout != "" || r.Stderr != want {
			t.Errorf("-f %d: stdout %q, stderr %q (want %q)", status, r.Stdout, r.Stderr, want)
		}
	}
}

func TestPostFailWithBodyAfterRetries(t *testing.T) {
	t.Parallel()
	s := newIdemServer(t, faultUnavailable, faultUnavailable, faultUnavailable)
	s.retryAfter = "0"
	r := ppost(t, s.URL, append(postFast, "--retry", "2", "--fail-with-body")...)
	postCheckExit(t, r, post.CurlHTTPError)
	postCheckAttempts(t, s, 3, postKeyOf(t, postArgs), postCanonical(t, postArgs), 0)
	if r.Stdout != `{"error":"unavailable"}`+"\n" {
		t.Errorf("stdout %q, want the final attempt's body once", r.Stdout)
	}
	for _, want := range []string{"giving up after 3 attempts: HTTP 503", "(22) the requested URL returned error: 503"} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.Stderr)
		}
	}
}

func TestPostKeyReusedWithAnotherPayload(t *testing.T) {
	t.Parallel()
	s := newIdemServer(t)
	key := postKeyOf(t, postArgs)
	postCheckExit(t, ppost(t, s.URL), 0)
	// The same args spelled differently: the same key, other bytes.
	for _, fail := range []bool{false, true} {
		args := append(postFast, "--retry", "3", "--send-as-is")
		if fail {
			args = append(args, "-f")
		}
		r := ppost(t, s.URL, args...)
		msg := "HTTP 422: the server has seen key " + key + " with a different payload; not retrying"
		if !strings.Contains(r.Stderr, "idemkey: error: ") || !strings.Contains(r.Stderr, msg) || !strings.Contains(r.Stderr, "hint: ") {
			t.Errorf("stderr lacks %q:\n%s", msg, r.Stderr)
		}
		if fail {
			postCheckExit(t, r, post.CurlHTTPError)
			if r.Stdout != "" {
				t.Errorf("-f: stdout %q", r.Stdout)
			}
		} else {
			// A key conflict is never success: 22 even without -f, with
			// the server's body written.
			postCheckExit(t, r, post.CurlHTTPError)
			if !strings.Contains(r.Stdout, "different payload") {
				t.Errorf("stdout %q, want the server's 422 body", r.Stdout)
			}
		}
	}
	if n := len(s.seen()); n != 3 {
		t.Errorf("server saw %d attempts, want 3 (no retry after 422)", n)
	}
	if got := s.effectCount(key); got != 1 {
		t.Errorf("side effect ran %d times, want 1", got)
	}
}

func TestPostVerboseRedactsCredentials(t *testing.T) {
	t.Parallel()
	s := newIdemServer(t, faultUnavailable)
	s.retryAfter = "0"
	r := ppost(t, s.URL, append(postFast, "--retry", "1", "-v", "-u", "alice:pw-s3cret",
		"-H", "Cookie: session=cookie-s3cret", "-H", "Proxy-Authorization: Basic proxy-s3cret", "-H", "X-Trace: visible")...)
	postCheckExit(t, r, 0)
	if strings.Contains(r.Stderr, "s3cret") || strings.Contains(r.Stderr, "alice") {
		t.Errorf("stderr shows a credential:\n%s", r.Stderr)
	}
	for _, want := range []string{
		"* idempotency key: " + postKeyOf(t, postArgs),
		"* attempt 1 of 2", "* attempt 2 of 2",
		"> Authorization: Basic [redacted]", "> Cookie: [redacted]", "> Proxy-Authorization: Basic [redacted]",
		"> X-Trace: visible", "< HTTP/1.1 503 Service Unavailable", "< HTTP/1.1 201 Created",
	} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.Stderr)
		}
	}
	// The server did get the real credentials, on every attempt.
	for i, a := range s.seen() {
		user, pass, ok := (&http.Request{Header: a.Header}).BasicAuth()
		if !ok || user != "alice" || pass != "pw-s3cret" || a.Header.Get("Cookie") != "session=cookie-s3cret" {
			t.Errorf("attempt %d: credentials %q %q %v, cookie %q", i+1, user, pass, ok, a.Header.Get("Cookie"))
		}
	}
}

func TestPostDryRun(t *testing.T) {
	t.Parallel()
	s := newIdemServer(t)
	r := ppost(t, s.URL+"/v1/charges", "--dry-run", "-X", "put", "-H", "Authorization: Bearer tok-s3cret", "--key-quoted")
	postCheckExit(t, r, 0)
	if n := len(s.seen()); n != 0 {
		t.Errorf("dry run sent %d requests", n)
	}
	head, body, ok := strings.Cut(r.Stdout, "\n\n")
	if !ok || body != string(postCanonical(t, postArgs))+"\n" {
		t.Fatalf("stdout %q: want headers, a blank line and the canonical body", r.Stdout)
	}
	for _, want := range []string{
		"PUT " + s.URL + "/v1/charges\n",
		"\nIdempotency-Key: \"" + postKeyOf(t, postArgs) + "\"\n",
		"\nContent-Type: application/json\n",
		"\nAuthorization: Bearer [redacted]\n",
	} {
		if !strings.Contains(head+"\n", want) {
			t.Errorf("dry run lacks %q:\n%s", want, r.Stdout)
		}
	}
}

func TestPostMethodAndUsage(t *testing.T) {
	t.Parallel()
	s := newIdemServer(t)
	for _, m := range []string{"GET", "DELETE", "HEAD", "BREW"} {
		r := ppost(t, s.URL, "-X", m)
		postCheckExit(t, r, cli.ExitUsage)
		if r.Stdout != "" || !strings.Contains(r.Stderr, "idemkey: error: invalid -X \""+m+"\" (want POST, PUT or PATCH)") {
			t.Errorf("-X %s: stdout %q, stderr %q", m, r.Stdout, r.Stderr)
		}
	}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"post", s.URL, "--task", "t1", "--tool", "pay"}, "missing body"},
		{[]string{"post", s.URL, "--tool", "pay", "-d", "{}"}, "missing task id"},
		{[]string{"post", s.URL, "--task", "t1", "--tool", "pay", "-d", `{"a":1,}`}, "<-d>:1:8: "},
		{[]string{"post", s.URL, "--task", "t1", "--tool", "pay", "-d", "{}", "-H", "Idempotency-Key: mine"}, "-H sets Idempotency-Key"},
		{[]string{"post", s.URL, "--task", "t1", "--tool", "pay", "-d", "{}", "-H", "no colon"}, "invalid -H"},
		{[]string{"post", s.URL, "--task", "t1", "--tool", "pay", "-d", "{}", "-u", "alice"}, "-u needs user:password"},
		{[]string{"post", s.URL, "--task", "t1", "--tool", "pay", "-d", "{}", "--retry", "-1"}, "invalid --retry"},
		{[]string{"post", "ftp://x/", "--task", "t1", "--tool", "pay", "-d", "{}"}, "unsupported protocol"},
	} {
		r := clitest.Streams{In: strings.NewReader("")}.Run(t, tc.args...)
		postCheckExit(t, r, cli.ExitUsage)
		if r.Stdout != "" || !strings.Contains(r.Stderr, tc.msg) {
			t.Errorf("%v: stdout %q, stderr %q, want %q", tc.args, r.Stdout, r.Stderr, tc.msg)
		}
	}
	if n := len(s.seen()); n != 0 {
		t.Errorf("usage errors sent %d requests", n)
	}
	for _, m := range []string{"PUT", "patch"} {
		r := ppost(t, s.URL, "-X", m)
		postCheckExit(t, r, 0)
	}
	seen := s.seen()
	if len(seen) != 2 || seen[0].Method != "PUT" || seen[1].Method != "PATCH" {
		t.Errorf("methods sent: %v", seen)
	}
}

func TestPostOutputFileAndInclude(t *testing.T) {
	t.Parallel()
	s := newIdemServer(t)
	key := postKeyOf(t, postArgs)
	file := filepath.Join(t.TempDir(), "out.json")
	r := ppost(t, s.URL, "-o", file)
	postCheckExit(t, r, 0)
	got, err := os.ReadFile(file)
	if err != nil || r.Stdout != "" || string(got) != string(s.savedBody(key)) {
		t.Errorf("-o: file %q (%v), stdout %q, want %q", got, err, r.Stdout, s.savedBody(key))
	}
	r = ppost(t, s.URL, "-i")
	postCheckExit(t, r, 0)
	want := "HTTP/1.1 201 Created\r\n"
	if !strings.HasPrefix(r.Stdout, want) || !strings.Contains(r.Stdout, "\r\nIdempotent-Replayed: true\r\n") ||
		!strings.HasSuffix(r.Stdout, "\r\n\r\n"+string(s.savedBody(key))) {
		t.Errorf("-i: stdout %q", r.Stdout)
	}
	r = ppost(t, s.URL, "-o", filepath.Join(t.TempDir(), "no", "such", "dir"))
	postCheckExit(t, r, post.CurlWriteError)
}

func TestPostKeyHeaderFromConfig(t *testing.T) {
	t.Parallel()
	s := newIdemServer(t, faultUnavailable)
	s.keyHeader, s.retryAfter = "X-Request-Key", "0"
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("key-header: X-Request-Key\nretry: 2\nretry-delay: 0.01\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	key, body := postKeyOf(t, postArgs), postCanonical(t, postArgs)
	r := ppost(t, s.URL, "--config", cfg, "--key-quoted")
	postCheckExit(t, r, 0)
	postCheckAttempts(t, s, 2, `"`+key+`"`, body, 1)
	if h := s.seen()[0].Header.Get("Idempotency-Key"); h != "" {
		t.Errorf("Idempotency-Key %q sent too", h)
	}
}

// postClosedPort returns a 127.0.0.1 address that refuses connections.
func postClosedPort(t *testing.T) string {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestPostConnectionRefusedAndSilence(t *testing.T) {
	t.Parallel()
	url := "http://" + postClosedPort(t) + "/"
	r := ppost(t, url, append(postFast, "--retry", "2")...)
	postCheckExit(t, r, post.CurlConnect)
	if n := strings.Count(r.Stderr, "(7) failed to connect to "); n != 4 { // 2 retries, giving up, error
		t.Errorf("stderr mentions the refusal %d times, want 4:\n%s", n, r.Stderr)
	}
	r = ppost(t, url, append(postFast, "--retry", "2", "-s")...)
	postCheckExit(t, r, post.CurlConnect)
	if r.Stdout != "" || r.Stderr != "" {
		t.Errorf("-s: stdout %q, stderr %q", r.Stdout, r.Stderr)
	}
	r = ppost(t, url, append(postFast, "--retry", "2", "-sS")...)
	postCheckExit(t, r, post.CurlConnect)
	if !strings.HasPrefix(r.Stderr, "idemkey: error: (7) failed to connect to ") || strings.Count(r.Stderr, "\n") != 1 {
		t.Errorf("-sS: stderr %q, want the error line only", r.Stderr)
	}
}

func TestPostTLS(t *testing.T) {
	t.Parallel()
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "%s %s", r.Proto, r.Header.Get("Idempotency-Key"))
	}))
	s.Listener.Close()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Listener = l
	s.EnableHTTP2 = true
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.StartTLS()
	t.Cleanup(s.Close)
	key := postKeyOf(t, postArgs)

	r := ppost(t, s.URL)
	postCheckExit(t, r, post.CurlPeerVerify)
	if r.Stdout != "" || !strings.Contains(r.Stderr, "(60) server certificate verification failed") {
		t.Errorf("unverified: stdout %q, stderr %q", r.Stdout, r.Stderr)
	}

	r = ppost(t, s.URL, "-k")
	postCheckExit(t, r, 0)
	// HTTP/1.1, whose bytes post records (see recConn).
	if r.Stdout != "HTTP/1.1 "+key || !strings.Contains(r.Stderr, "idemkey: warning: -k:") {
		t.Errorf("-k: stdout %q, stderr %q", r.Stdout, r.Stderr)
	}

	ca := filepath.Join(t.TempDir(), "ca.pem")
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	if err := os.WriteFile(ca, cert, 0o600); err != nil {
		t.Fatal(err)
	}
	r = ppost(t, s.URL, "--cacert", ca)
	postCheckExit(t, r, 0)
	if r.Stdout != "HTTP/1.1 "+key || r.Stderr != "" {
		t.Errorf("--cacert: stdout %q, stderr %q", r.Stdout, r.Stderr)
	}
	r = ppost(t, s.URL, "--cacert", filepath.Join(t.TempDir(), "none.pem"))
	postCheckExit(t, r, post.CurlCACert)
}
