package cmd

// Shared-store settings end to end: a Redis ttl shorter than a renewed step,
// a PostgreSQL DateStyle other than ISO; idemkey run in real processes on real servers.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/jackc/pgx/v5"
)

// TestFleetRedisTTLShorterThanStep: with ttl= shorter than the step,
// the running record outlives the ttl while its holder renews the lease:
// a second machine's run is busy (75), not a second execution; the first
// completes and is replayed.
func TestFleetRedisTTLShorterThanStep(t *testing.T) {
	s := redisStore(t)
	s.url += "?ttl=1s"
	fl := newFleet(t, s, nil)
	step := fl.script("step.sh", `echo x >> ran; sleep 3; echo "attempt $IDEMPOTENCY_ATTEMPT"`)
	args := []string{"run", "--task", "t-ttl", "--tool", "deploy", "--lease", "600ms", "--", step}
	a := fl.start("a", args...)
	waitFor(t, 10*time.Second, func() bool { return len(fl.lines("ran")) > 0 })
	time.Sleep(1500 * time.Millisecond) // past the ttl, the step still running
	if b := fl.run("b", args...); b.code != cli.ExitBusy {
		t.Fatalf("second machine past the ttl while the first renews: exit %d, want 75 (busy); ran %d:\n%s", b.code, len(fl.lines("ran")), b.stderr.String())
	}
	if c := a.wait(t, 30*time.Second); c != 0 {
		t.Fatalf("first machine: exit %d:\n%s", c, a.stderr.String())
	}
	if r := fl.run("c", args...); r.code != 0 || r.stdout.String() != "attempt 1\n" || len(fl.lines("ran")) != 1 {
		t.Fatalf("replay: exit %d, stdout %q, ran %d:\n%s", r.code, r.stdout.String(), len(fl.lines("ran")), r.stderr.String())
	}
}

// TestFleetPostgresDateStyle: a database whose DateStyle is not ISO
// (ALTER DATABASE … SET DateStyle = 'SQL, DMY', a site's default): run,
// replay and ledger ls work.
func TestFleetPostgresDateStyle(t *testing.T) {
	s := pgStore(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{conn.Config().Database}.Sanitize()+` SET DateStyle = 'SQL, DMY'`); err != nil {
		t.Fatal(err)
	}
	fl := newFleet(t, s, nil)
	step := fl.script("step.sh", `echo x >> ran; echo "attempt $IDEMPOTENCY_ATTEMPT"`)
	args := []string{"run", "-v", "--task", "t-datestyle", "--tool", "x", "--", step}
	first, second := fl.run("a", args...), fl.run("b", args...)
	if first.code != 0 || second.code != 0 || second.stdout.String() != "attempt 1\n" || len(fl.lines("ran")) != 1 {
		t.Fatalf("run then replay: exits %d %d, stdout %q, ran %d\n%s\n%s", first.code, second.code, second.stdout.String(), len(fl.lines("ran")), first.stderr.String(), second.stderr.String())
	}
	w := fl.run("c", "ledger", "ls", "--task", "t-datestyle", "--json")
	if w.code != 0 || !strings.Contains(w.stdout.String(), runKeyOf(t, first)) {
		t.Fatalf("ledger ls: exit %d: %s %s", w.code, w.stdout.String(), w.stderr.String())
	}
}
