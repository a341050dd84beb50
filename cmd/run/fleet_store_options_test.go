package run_test

// Shared-store settings end to end: a Redis ttl shorter than a renewed step,
// a PostgreSQL DateStyle other than ISO; idemkey run in real processes on real servers.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/jackc/pgx/v5"
)

// TestFleetRedisTTLShorterThanStep: with ttl= shorter than the step,
// the running record outlives the ttl while its holder renews the lease:
// a second machine's run is busy (75), not a second execution; the first
// completes and is replayed.
func TestFleetRedisTTLShorterThanStep(t *testing.T) {
	t.Parallel()
	s := clitest.RedisStore(t)
	s.URL += "?ttl=1s"
	fl := clitest.NewFleet(t, s, nil)
	step := fl.Script("step.sh", `echo x >> ran; sleep 3; echo "attempt $IDEMPOTENCY_ATTEMPT"`)
	args := []string{"run", "--task", "t-ttl", "--tool", "deploy", "--lease", "600ms", "--", step}
	a := fl.Start("a", args...)
	clitest.WaitFor(t, 10*time.Second, func() bool { return len(fl.Lines("ran")) > 0 })
	time.Sleep(1500 * time.Millisecond) // past the ttl, the step still running
	if b := fl.Run("b", args...); b.Code != cli.ExitBusy {
		t.Fatalf("second machine past the ttl while the first renews: exit %d, want 75 (busy); ran %d:\n%s", b.Code, len(fl.Lines("ran")), b.Stderr.String())
	}
	if c := a.Wait(t, 30*time.Second); c != 0 {
		t.Fatalf("first machine: exit %d:\n%s", c, a.Stderr.String())
	}
	if r := fl.Run("c", args...); r.Code != 0 || r.Stdout.String() != "attempt 1\n" || len(fl.Lines("ran")) != 1 {
		t.Fatalf("replay: exit %d, stdout %q, ran %d:\n%s", r.Code, r.Stdout.String(), len(fl.Lines("ran")), r.Stderr.String())
	}
}

// TestFleetPostgresDateStyle: a database whose DateStyle is not ISO
// (ALTER DATABASE … SET DateStyle = 'SQL, DMY', a site's default): run,
// replay and ledger ls work.
func TestFleetPostgresDateStyle(t *testing.T) {
	t.Parallel()
	s := clitest.PGStore(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{conn.Config().Database}.Sanitize()+` SET DateStyle = 'SQL, DMY'`); err != nil {
		t.Fatal(err)
	}
	fl := clitest.NewFleet(t, s, nil)
	step := fl.Script("step.sh", `echo x >> ran; echo "attempt $IDEMPOTENCY_ATTEMPT"`)
	args := []string{"run", "-v", "--task", "t-datestyle", "--tool", "x", "--", step}
	first, second := fl.Run("a", args...), fl.Run("b", args...)
	if first.Code != 0 || second.Code != 0 || second.Stdout.String() != "attempt 1\n" || len(fl.Lines("ran")) != 1 {
		t.Fatalf("run then replay: exits %d %d, stdout %q, ran %d\n%s\n%s", first.Code, second.Code, second.Stdout.String(), len(fl.Lines("ran")), first.Stderr.String(), second.Stderr.String())
	}
	w := fl.Run("c", "ledger", "ls", "--task", "t-datestyle", "--json")
	if w.Code != 0 || !strings.Contains(w.Stdout.String(), clitest.RunKeyOf(t, first)) {
		t.Fatalf("ledger ls: exit %d: %s %s", w.Code, w.Stdout.String(), w.Stderr.String())
	}
}
