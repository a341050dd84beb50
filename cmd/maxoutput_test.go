package cmd

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunMaxOutputAtTheCap: a step whose two streams both fill the largest
// --max-output is recorded in full and replayed on every store. At the
// former cap (256MiB a stream) PostgreSQL's completion failed with "message
// body too large" (pgx sends a bytea as hex, in one message of at most
// 1 GiB): the command had run, and the record was left to go unknown.
func TestRunMaxOutputAtTheCap(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 2 x 128MiB through each store")
	}
	n := maxRecordedOutput
	step := []string{"--", "sh", "-c", fmt.Sprintf("head -c %d /dev/zero; head -c %d /dev/zero >&2", n, n)}
	check := func(t *testing.T, s *fleetStore) {
		fl := newFleet(t, s, nil)
		args := append([]string{"run", "--task", "t-cap", "--tool", "big", "--max-output", fmt.Sprint(n)}, step...)
		for i, name := range []string{"a", "b"} {
			w := fl.run(name, args...)
			if w.code != 0 || w.stdout.Len() != n || w.stderr.Len() < n {
				t.Fatalf("run %d: exit %d, stdout %d bytes, stderr %d bytes (want %d each): %.300s",
					i+1, w.code, w.stdout.Len(), w.stderr.Len(), n, strings.Trim(w.stderr.String(), "\x00"))
			}
			// What idemkey says, without the command's n NUL bytes.
			tail := strings.Trim(w.stderr.String(), "\x00")
			if i == 1 && !strings.Contains(tail, "replayed") {
				t.Fatalf("second run did not replay: %q", tail)
			}
			if strings.Contains(tail, "warning") || strings.Contains(tail, "truncated") {
				t.Fatalf("run %d: %q", i+1, tail)
			}
		}
	}
	t.Run("sqlite", func(t *testing.T) {
		check(t, &fleetStore{url: filepath.Join(t.TempDir(), "ledger.db")})
	})
	eachStore(t, check)
}
