package post

import (
	"net/http"
	"testing"
	"time"
)

// TestRetryAfterSaturates: a Retry-After too large for a duration, or a
// far-future date, saturates instead of wrapping around.
func TestRetryAfterSaturates(t *testing.T) {
	t.Parallel()
	now := time.Now()
	for _, v := range []string{"99999999999999999999", "1e300", "9223372037", "Fri, 31 Dec 9999 23:59:59 GMT"} {
		d, ok := retryAfter(http.Header{"Retry-After": {v}}, now)
		if !ok || d < 290*365*24*time.Hour {
			t.Errorf("Retry-After %q = %v, %v; want a saturated wait", v, d, ok)
		}
		if sum := addSat(time.Hour, d); sum < d {
			t.Errorf("addSat(1h, %v) = %v wrapped around", d, sum)
		}
	}
}

func TestRetryAfterAndBackoff(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"120": 2 * time.Minute, "0.5": 500 * time.Millisecond, "0": 0,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Hour).Format(http.TimeFormat):       0,
	} {
		got, ok := retryAfter(http.Header{"Retry-After": {v}}, now)
		if !ok || got != want {
			t.Errorf("Retry-After %q = %v, %v; want %v", v, got, ok, want)
		}
	}
	for _, v := range []string{"", "soon", "-3"} {
		if _, ok := retryAfter(http.Header{"Retry-After": {v}}, now); ok {
			t.Errorf("Retry-After %q accepted", v)
		}
	}
	base := 100 * time.Millisecond
	for n := 1; n <= 20; n++ {
		lo := min(base<<(n-1), maxBackoff)
		if n > 14 {
			lo = maxBackoff
		}
		for range 20 {
			if d := backoff(base, n); d < lo || d > min(lo+lo/2, maxBackoff) {
				t.Fatalf("backoff(%v, %d) = %v, want within [%v, %v]", base, n, d, lo, min(lo+lo/2, maxBackoff))
			}
		}
	}
}

// TestBackoffDefault: --retry-delay 0 means curl's 1s first delay, doubled
// per retry, plus up to half again of jitter.
func TestBackoffDefault(t *testing.T) {
	t.Parallel()
	if d := backoff(0, 3); d < 4*time.Second || d > 6*time.Second {
		t.Errorf("backoff(0, 3) = %v, want 4s to 6s", d)
	}
}
