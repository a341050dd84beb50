package post

import (
	"net/http"
	"testing"
)

func TestReplayHeaderAndRedact(t *testing.T) {
	t.Parallel()
	for h, want := range map[string]bool{
		"Idempotent-Replayed": true, "X-Idempotent-Replayed": true, "X-Idempotency-Replayed": true, "X-Replayed": false,
	} {
		if got := ReplayHeader(http.Header{h: {"true"}}) != ""; got != want {
			t.Errorf("ReplayHeader(%s: true) = %v", h, got)
		}
	}
	if ReplayHeader(http.Header{"Idempotent-Replayed": {"false"}}) != "" {
		t.Error("Idempotent-Replayed: false taken for a replay")
	}
	for _, tc := range [][3]string{
		{"Authorization", "Bearer abc", "Bearer [redacted]"},
		{"authorization", "abc", "[redacted]"},
		{"Cookie", "a=b", "[redacted]"},
		{"Set-Cookie", "a=b", "[redacted]"},
		{"X-Trace", "abc", "abc"},
	} {
		if got := Redact(tc[0], tc[1]); got != tc[2] {
			t.Errorf("Redact(%s, %s) = %q, want %q", tc[0], tc[1], got, tc[2])
		}
	}
}
