package ledger_test

import (
	"strings"
	"testing"

	"github.com/idemkey/idemkey/derive/ledger"
)

// TestLockHeldIsInProgress: an unknown record whose key's lock another
// process holds (a process of its step still runs) is in progress, as a
// run of the key finds it: ls and show say running, resolve and forget
// refuse (exit 1) and change nothing; once the lock is free, the record
// reads unknown and resolve settles it.
func TestLockHeldIsInProgress(t *testing.T) {
	r := newRig(t)
	r.put("k1", ledger.Unknown)
	unlock := r.lock("k1")
	if m := r.Show("k1"); m["state"] != "running" || !strings.Contains(m["reason"].(string), "its lock is held") {
		t.Fatalf("show with the lock held: %v", m)
	}
	if res := r.run("ledger", "ls"); !strings.Contains(res.stdout, "running") {
		t.Fatalf("ls with the lock held:\n%s", res.stdout)
	}
	for _, args := range [][]string{{"resolve", "k1", "--as", "failed"}, {"forget", "k1", "--yes"}} {
		res := r.run(append([]string{"ledger"}, args...)...)
		if res.code != 1 || res.stdout != "" || !strings.Contains(res.stderr, "is running: its holder is alive (its lock is held") {
			t.Fatalf("%s with the lock held: exit %d\n%s", args[0], res.code, res.stderr)
		}
	}
	unlock()
	if m := r.Show("k1"); m["state"] != "unknown" {
		t.Fatalf("show with the lock free: %v", m)
	}
	if res := r.run("ledger", "resolve", "k1", "--as", "failed"); res.code != 0 {
		t.Fatalf("resolve with the lock free: exit %d\n%s", res.code, res.stderr)
	}
}

// TestForgetUnknownNeedsYes: forget refuses an unknown record without
// --yes (exit 1, a hint naming resolve), --dry-run says what would go and
// removes nothing, and --yes forgets it.
func TestForgetUnknownNeedsYes(t *testing.T) {
	r := newRig(t)
	r.put("k1", ledger.Unknown)
	res := r.run("ledger", "forget", "k1")
	if res.code != 1 || res.stdout != "" || !strings.Contains(res.stderr, "k1 is unknown") || !strings.Contains(res.stderr, "hint: check with the owner, then settle it: idemkey ledger resolve k1") {
		t.Fatalf("forget of an unknown record: exit %d\n%s", res.code, res.stderr)
	}
	res = r.run("ledger", "forget", "k1", "--yes", "--dry-run")
	if res.code != 0 || !strings.Contains(res.stderr, "would forget k1 (unknown, attempt 1); nothing removed") {
		t.Fatalf("--dry-run: exit %d\n%s", res.code, res.stderr)
	}
	if m := r.Show("k1"); m["state"] != "unknown" {
		t.Fatalf("after refusals and a dry run: %v", m)
	}
	r.put("k2", ledger.Succeeded)
	if res := r.run("ledger", "forget", "k2", "--dry-run", "--json"); res.code != 0 || !strings.Contains(res.stdout, `"dry_run":true`) {
		t.Fatalf("--dry-run --json: exit %d %s\n%s", res.code, res.stdout, res.stderr)
	}
	if res := r.run("ledger", "forget", "k1", "--yes"); res.code != 0 {
		t.Fatalf("forget --yes: exit %d\n%s", res.code, res.stderr)
	}
	if res := r.run("ledger", "forget", "k2"); res.code != 0 {
		t.Fatalf("forget of a succeeded record: exit %d\n%s", res.code, res.stderr)
	}
	if res := r.run("ledger", "ls", "--json"); strings.TrimSpace(res.stdout) != "[]" {
		t.Fatalf("left: %s", res.stdout)
	}
}
