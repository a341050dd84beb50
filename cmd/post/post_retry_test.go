package post_test

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
)

// TestPostFarRetryAfterEndsRetries: a wait past --retry-max-time (or past
// 6 hours without it) ends the retries at once, after a slow first
// attempt too; the final response is written.
func TestPostFarRetryAfterEndsRetries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		retryAfter string
		args       []string
		limit      string
	}{
		{"Fri, 31 Dec 9999 23:59:59 GMT", []string{"--retry-max-time", "5"}, "--retry-max-time 5s"},
		{"99999999999999999999", []string{"--retry-max-time", "5"}, "--retry-max-time 5s"},
		{"Fri, 31 Dec 9999 23:59:59 GMT", nil, "the 6h limit"},
		{"86400", nil, "the 6h limit"},
	} {
		s := newIdemServer(t, faultUnavailable, faultUnavailable)
		s.retryAfter = tc.retryAfter
		var r clitest.Output
		postWithin(t, 20*time.Second, func() {
			r = ppost(t, s.URL, append([]string{"--retry", "3", "--retry-delay", "0.01"}, tc.args...)...)
		})
		postCheckExit(t, r, 0)
		if n := len(s.seen()); n != 1 {
			t.Errorf("Retry-After %s: %d attempts, want 1", tc.retryAfter, n)
		}
		if !strings.Contains(r.Stdout, "unavailable") || !strings.Contains(r.Stderr, "idemkey: not retrying: HTTP 503") ||
			!strings.Contains(r.Stderr, "(Retry-After) would pass "+tc.limit) {
			t.Errorf("Retry-After %s: stdout %q, stderr %q", tc.retryAfter, r.Stdout, r.Stderr)
		}
	}
}

// TestPostSlowAttemptThenHugeRetryAfter: a wait just below the largest
// duration after a slow first attempt would overflow the sum.
func TestPostSlowAttemptThenHugeRetryAfter(t *testing.T) {
	t.Parallel()
	n := 0
	s := postLoopback(t, func(w http.ResponseWriter, r *http.Request) {
		n++
		time.Sleep(1100 * time.Millisecond)
		w.Header().Set("Retry-After", "9223372036")
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	var r clitest.Output
	postWithin(t, 20*time.Second, func() { r = ppost(t, s.URL, "--retry", "2", "--retry-max-time", "30") })
	postCheckExit(t, r, 0)
	if n != 1 || !strings.Contains(r.Stderr, "would pass --retry-max-time 30s") {
		t.Errorf("%d attempts, stderr %q", n, r.Stderr)
	}
}

// TestPostRetryDelayZeroIsDefault: --retry-delay 0 means curl's default
// backoff (1s), not none.
func TestPostRetryDelayZeroIsDefault(t *testing.T) {
	t.Parallel()
	s := newIdemServer(t, faultUnavailable)
	s.retryAfter = ""
	r := ppost(t, s.URL, "--retry", "1", "--retry-delay", "0")
	postCheckExit(t, r, 0)
	m := regexp.MustCompile(`retrying in ([0-9.]+)(ms|s|µs) \(backoff\)`).FindStringSubmatch(r.Stderr)
	if m == nil {
		t.Fatalf("stderr %q", r.Stderr)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	if m[2] != "s" || v < 1 || v > 1.5 {
		t.Errorf("--retry-delay 0 waited %s%s, want the default 1s plus jitter", m[1], m[2])
	}
}
