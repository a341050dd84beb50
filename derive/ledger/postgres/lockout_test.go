package postgres

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemkey/idemkey/derive/ledger/testserver"
)

// beforeTokens is the last commit of this repository before claim tokens
// (their API came in the commit after it): an idemkey whose PostgreSQL
// statements fence by attempt and state only, and whose forget keeps no
// high-water mark of attempts.
const beforeTokens = "989bdc7212480fbe9051d46de65dfa45bd55996a"

// TestOlderBinaryLockedOut: an idemkey of before claim tokens, still
// running in a fleet that upgrades. Its holder is paused (SIGSTOP) mid-
// step; its lease runs out and an older `ledger forget` removes its
// record; a newer worker claims the key again (upgrading the table), at
// attempt 1 again, and runs. The paused holder is resumed: its renewal
// fails (the upgraded table has no lease_until) and it gives up its step
// (exit 76), it does not overwrite the newer claim, and the newer worker completes with its
// own outcome. An older `run` on a fresh key fails without running its
// step, and an older `ledger ls` fails too.
func TestOlderBinaryLockedOut(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds an older idemkey")
	}
	url := testserver.Postgres(t)
	old := newCLI(t, idemkey(t, beforeTokens))
	cur := newCLI(t, idemkey(t, ""))
	cur.env, cur.dir = old.env, old.dir // one directory, one effects file
	step := old.script("step.sh", `echo "$WHO" >> "$DIR/started"
while [ ! -e "$DIR/go-$WHO" ]; do sleep 0.05; done
echo "$WHO" >> "$EFFECTS"
echo "$WHO"
`)
	runArgs := []string{"run", "--ledger", url, "--task", "fleet", "--tool", "deploy", "--lease", "1s", "--", step}

	holder, _, holderErr := old.cmd([]string{"WHO=old"}, runArgs...)
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer holder.Process.Kill()
	old.waitFile("started")
	holder.Process.Signal(syscall.SIGSTOP)

	// The paused holder's lease runs out on the server's clock.
	ctx := context.Background()
	conn := connect(t, url)
	var key string
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		var expired bool
		err := conn.QueryRow(ctx, `SELECT key, lease_until <= now() FROM idemkey_ledger`).Scan(&key, &expired)
		if err == nil && expired {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the paused holder's lease never ran out: %v", err)
		}
	}
	if r := old.run(nil, "ledger", "forget", key, "--ledger", url); r.code != 0 {
		t.Fatalf("older ledger forget: exit %d, %q", r.code, r.stderr)
	}

	newer, newOut, newErr := cur.cmd([]string{"WHO=new"}, append([]string{"run", "--ledger", url, "--task", "fleet", "--tool", "deploy", "--lease", "3s", "--"}, step)...)
	if err := newer.Start(); err != nil {
		t.Fatal(err)
	}
	defer newer.Process.Kill()
	for deadline := time.Now().Add(time.Minute); len(old.lines("started")) < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the newer worker never started its step: %q", newErr)
		}
	}
	var attempt int64
	if err := conn.QueryRow(ctx, `SELECT attempt FROM idemkey_ledger WHERE key = $1`, key).Scan(&attempt); err != nil || attempt != 1 {
		t.Fatalf("the newer claim: attempt %d, %v (the older forget kept no mark: want 1, the paused holder's number)", attempt, err)
	}

	// The older holder wakes and renews: its renewal fails, and it gives
	// up its step. Its step is let go only after that (or after 30 s), so
	// that a renewal slower than the step's last 50 ms on a loaded machine
	// does not leave the completion alone to fail (a warning, exit 0).
	holder.Process.Signal(syscall.SIGCONT)
	ended := make(chan struct{})
	go func() { holder.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(30 * time.Second):
	}
	old.touch("go-old")
	<-ended
	if holder.ProcessState.ExitCode() == 0 || !strings.Contains(holderErr.String(), "lease_until") {
		t.Fatalf("the older holder: exit %d, %q; want its writes refused (no column lease_until)", holder.ProcessState.ExitCode(), holderErr)
	}

	old.touch("go-new")
	if err := newer.Wait(); err != nil || newOut.String() != "new\n" {
		t.Fatalf("the newer worker: %v, %q, %q (killed by the older holder's writes?)", err, newOut, newErr)
	}
	r := cur.run(nil, "ledger", "show", key, "--json", "--ledger", url)
	if r.code != 0 || !strings.Contains(r.stdout, `"state":"succeeded"`) || !strings.Contains(r.stdout, `"attempt":1`) {
		t.Fatalf("the record after both: exit %d, %s %q", r.code, r.stdout, r.stderr)
	}
	if r := cur.run([]string{"WHO=again"}, runArgs...); r.code != 0 || r.stdout != "new\n" {
		t.Fatalf("a replay after both: exit %d, %q, %q (want the newer worker's outcome)", r.code, r.stdout, r.stderr)
	}

	// An older claim on the upgraded ledger fails before its step starts,
	// and so does an older read.
	r = old.run([]string{"WHO=late"}, "run", "--ledger", url, "--task", "late", "--tool", "deploy", "--", step)
	if r.code == 0 || len(old.lines("started")) != 2 {
		t.Fatalf("an older run on the upgraded ledger: exit %d, %q; started %q", r.code, r.stderr, old.lines("started"))
	}
	if r := old.run(nil, "ledger", "ls", "--ledger", url); r.code == 0 {
		t.Fatalf("an older ledger ls on the upgraded ledger: exit 0, %q", r.stdout)
	}
}
