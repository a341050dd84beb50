package post_test

import (
	"bufio"
	"net"
	"strings"
	"testing"
)

// TestPostReasonPhraseEscaped: a server's reason phrase reaches the retry
// lines on standard error; its control characters are escaped there.
func TestPostReasonPhraseEscaped(t *testing.T) {
	t.Parallel()
	url, n := postRawServer(t, postWriteAndClose("HTTP/1.1 503 Bu\x1b]0;owned\x07sy\r\nContent-Length: 0\r\n\r\n"))
	r := ppost(t, url, "--retry", "1", "--retry-delay", "0.001")
	if n.Load() != 2 {
		t.Errorf("%d attempts, want 2", n.Load())
	}
	if strings.ContainsAny(r.Stderr, "\x1b\x07") {
		t.Errorf("raw control characters on stderr:\n%q", r.Stderr)
	}
	if !strings.Contains(r.Stderr, `HTTP 503 Bu\x1b]0;owned\asy; retrying`) {
		t.Errorf("the reason phrase is not shown escaped:\n%s", r.Stderr)
	}
}

// TestPostDryRunHeadIsTheWire: --dry-run prints the headers in the order
// they are written on the connection (Connection: close came third, the
// transport writes it last).
func TestPostDryRunHeadIsTheWire(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	wire := make(chan []string, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		var lines []string
		for {
			line, err := br.ReadString('\n')
			if err != nil || line == "\r\n" {
				break
			}
			lines = append(lines, strings.TrimRight(line, "\r\n"))
		}
		c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
		wire <- lines
	}()
	url := "http://" + l.Addr().String() + "/v1/x"
	args := []string{"-u", "ada:pw", "-H", "X-Trace: 1", "-A", "agent/1"}
	dry := ppost(t, url, append(args, "--dry-run")...)
	if dry.Code != 0 {
		t.Fatalf("--dry-run: exit %d: %s", dry.Code, dry.Stderr)
	}
	if r := ppost(t, url, args...); r.Code != 0 {
		t.Fatalf("post: exit %d: %s", r.Code, r.Stderr)
	}
	sent := <-wire
	shown := strings.Split(strings.SplitN(dry.Stdout, "\n\n", 2)[0], "\n")
	if len(shown) != len(sent) {
		t.Fatalf("--dry-run shows %d lines, %d were sent:\n%q\n%q", len(shown), len(sent), shown, sent)
	}
	for i := 1; i < len(sent); i++ { // the first line is the request line, shown with the URL
		name, _, _ := strings.Cut(sent[i], ":")
		if got, _, _ := strings.Cut(shown[i], ":"); got != name {
			t.Errorf("header %d: --dry-run shows %q, %q was sent\nshown: %q\nsent:  %q", i, got, name, shown, sent)
			break
		}
	}
}

// TestPostSaturatedWaitSaid: a wait past what a duration holds (a
// Retry-After in the year 9999) is said to be that, not the saturated
// 106752 days.
func TestPostSaturatedWaitSaid(t *testing.T) {
	t.Parallel()
	url, n := postRawServer(t, postWriteAndClose("HTTP/1.1 503 Service Unavailable\r\nRetry-After: Fri, 31 Dec 9999 23:59:59 GMT\r\nContent-Length: 0\r\n\r\n"))
	r := ppost(t, url, "--retry", "3", "--retry-max-time", "5")
	if n.Load() != 1 {
		t.Errorf("%d attempts, want 1", n.Load())
	}
	if !strings.Contains(r.Stderr, "not retrying: HTTP 503 Service Unavailable; waiting more than 292 years (Retry-After) would pass --retry-max-time 5s") || strings.Contains(r.Stderr, "106752") {
		t.Errorf("stderr:\n%s", r.Stderr)
	}
}
