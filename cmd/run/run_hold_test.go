package run_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/cmd/internal/step"
	"github.com/jackc/pgx/v5"
)

// The ends of a hold, as run says them: what
// happened to a lost lease, a completion the store refused, an outcome
// recorded without its output.

// TestRunLeaseLostRecordGone: the record removed under a running step
// (behind idemkey's back): the loss says the record is gone, not that a
// newer attempt holds the key; the command is killed (76) and nothing is
// written back.
func TestRunLeaseLostRecordGone(t *testing.T) {
	t.Parallel()
	r := clitest.NewRig(t)
	c := r.Cmd("run", "--task", "t1", "--tool", "gone", "--lease", "150ms", "--", "sh", "-c",
		`touch `+r.Path("mark")+`; sleep 30`)
	var errb bytes.Buffer
	c.Stderr = &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	r.WaitFile("mark")
	r.ExecLedger(`DELETE FROM records`)
	_ = c.Wait()
	said := errb.String()
	if c.ProcessState.ExitCode() != cli.ExitUnknown || !strings.Contains(said, "idemkey: lease lost: the key's record is gone (") ||
		!strings.Contains(said, "): attempt 1 of ") || strings.Contains(said, "newer attempt") {
		t.Fatalf("exit %d: %s", c.ProcessState.ExitCode(), said)
	}
	if out := r.Idemkey("ledger", "ls", "--json"); bytes.Contains(out.Stdout, []byte(`"key"`)) {
		t.Fatalf("a record came back: %s", out.Stdout)
	}
}

// TestRunLeaseLostLedgerSilent: a store that stops answering for a whole
// lease: the loss says so (not "a newer attempt holds the key").
func TestRunLeaseLostLedgerSilent(t *testing.T) {
	t.Parallel()
	r, px := stalledRedisRig(t)
	c := r.Cmd("run", "--task", "t1", "--tool", "silent", "--lease", "1500ms", "--", "sh", "-c", `touch `+r.Path("mark")+`; sleep 30`)
	var errb bytes.Buffer
	c.Stderr = &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	r.WaitFile("mark")
	px.paused.Store(true)
	_ = c.Wait()
	px.paused.Store(false)
	said := errb.String()
	if c.ProcessState.ExitCode() != cli.ExitUnknown || !strings.Contains(said, "idemkey: lease lost: the ledger did not answer for a whole lease (1.5s): ") ||
		strings.Contains(said, "newer attempt") {
		t.Fatalf("exit %d: %s", c.ProcessState.ExitCode(), said)
	}
}

// TestRunFailedCompletionReleases: the store refuses the outcome (here a
// PostgreSQL trigger, as a full disk would): the claim is released on the
// way out, so the next run finds the key unknown at once (76), not in
// progress elsewhere (75) for the rest of its 30 s lease.
func TestRunFailedCompletionReleases(t *testing.T) {
	t.Parallel()
	s := clitest.PGStore(t)
	r := clitest.NewRig(t)
	r.Env = append(step.WithoutEnv(r.Env, "IDEMKEY_LEDGER"), "IDEMKEY_LEDGER="+s.URL)
	if res := r.Idemkey("ledger", "init"); res.Code != 0 {
		t.Fatalf("ledger init: %d %s", res.Code, res.Stderr)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE FUNCTION refuse_end() RETURNS trigger AS $$
BEGIN IF NEW.state = 'succeeded' THEN RAISE EXCEPTION 'no space left (test)'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql;
CREATE TRIGGER refuse_end BEFORE UPDATE ON idemkey_ledger FOR EACH ROW EXECUTE FUNCTION refuse_end()`); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--task", "t1", "--tool", "full", "--", "echo", "done"}
	first := r.Idemkey(args...)
	if first.Code != 0 || string(first.Stdout) != "done\n" ||
		!strings.Contains(string(first.Stderr), "no space left (test)") ||
		!strings.Contains(string(first.Stderr), "; the next attempt will find it unknown (the claim was released: at once)\n") {
		t.Fatalf("first: exit %d, %q: %s", first.Code, first.Stdout, first.Stderr)
	}
	start := time.Now()
	next := r.Idemkey(args...)
	if next.Code != cli.ExitUnknown || !strings.Contains(string(next.Stderr), "idemkey: outcome unknown: ") {
		t.Fatalf("next (%v later): exit %d, want 76: %s", time.Since(start), next.Code, next.Stderr)
	}
}

// TestRunOutputsDroppedWarns: a Redis under maxmemory (noeviction) refuses
// the outcome with its 6 MB of output; the outcome is recorded without the
// bytes, and run says so; a replay returns no output and says why.
func TestRunOutputsDroppedWarns(t *testing.T) {
	t.Parallel()
	s := clitest.RedisStore(t, "--maxmemory", "4mb", "--maxmemory-policy", "noeviction")
	r := clitest.NewRig(t)
	r.Env = append(step.WithoutEnv(r.Env, "IDEMKEY_LEDGER"), "IDEMKEY_LEDGER="+s.URL)
	args := []string{"run", "--task", "t1", "--tool", "big", "--max-output", "8MiB", "--", "sh", "-c", "head -c 6000000 /dev/zero | tr '\\0' a"}
	first := r.Idemkey(args...)
	if first.Code != 0 || len(first.Stdout) != 6000000 ||
		!strings.Contains(string(first.Stderr), "idemkey: warning: the outcome of attempt 1 of ") ||
		!strings.Contains(string(first.Stderr), " was recorded without its output (the ledger refused it for its size: ") {
		t.Fatalf("first: exit %d, %d bytes: %s", first.Code, len(first.Stdout), first.Stderr)
	}
	next := r.Idemkey(args...)
	if next.Code != 0 || len(next.Stdout) != 0 || !strings.Contains(string(next.Stderr), "the recorded stdout was truncated: replayed 0 of its 6000000 bytes") {
		t.Fatalf("replay: exit %d, %d bytes: %s", next.Code, len(next.Stdout), next.Stderr)
	}
}

// TestRunHolderKilledByItsCommand: a command that kills its holder at
// once may do so before the holder has said that it started it. Either
// way the command ran: idemkey ends as its holder did (137), the outcome
// is unknown, and the next run does not run the command again (76).
// Twenty keys make the early kill likely at least once.
func TestRunHolderKilledByItsCommand(t *testing.T) {
	t.Parallel()
	r := clitest.NewRig(t)
	const n = 20
	for i := range n {
		task := fmt.Sprint("t-", i)
		args := []string{"run", "--task", task, "--tool", "deploy", "--", "sh", "-c", `echo ran >> ran; kill -9 $PPID`}
		if res := r.Idemkey(args...); res.Code != 128+int(syscall.SIGKILL) {
			t.Fatalf("%s: exit %d, want 137: %s", task, res.Code, res.Stderr)
		}
		if res := r.Idemkey(args...); res.Code != cli.ExitUnknown || !bytes.Contains(res.Stderr, []byte("outcome unknown")) {
			t.Fatalf("%s, run again: exit %d, want 76: %s", task, res.Code, res.Stderr)
		}
	}
	if got := r.Lines("ran"); got != n {
		t.Fatalf("the commands ran %d times, want %d (once a key)", got, n)
	}
}
