package cmd

import (
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
	if strings.ContainsAny(r.err, "\x1b\x07") {
		t.Errorf("raw control characters on stderr:\n%q", r.err)
	}
	if !strings.Contains(r.err, `HTTP 503 Bu\x1b]0;owned\asy; retrying`) {
		t.Errorf("the reason phrase is not shown escaped:\n%s", r.err)
	}
}
