package ledgertest

import (
	"bytes"
	"errors"
	"strings"
	"time"

	"github.com/idemkey/idemkey/derive/ledger"
)

// The scenarios: fencing by claim token, attempt numbers that
// never go back, what a lost lease says, Release, the holder check, long
// task ids, leases in List, and outcomes too large for the store.

// loss is one way a paused holder's record can go from under it.
type loss struct {
	name string
	// lose makes the record of key go (its holder already dead).
	lose func(e *env, key string)
	// takeover: the record stays, and the next claim takes it over.
	takeover bool
	// marksLost: the store's high-water marks go too (the next attempt
	// may repeat the stale one's number: only the token fences).
	marksLost bool
}

func (e *env) losses() []loss {
	ls := []loss{
		{name: "forget", lose: func(e *env, key string) {
			if ok, err := ledger.Forget(e.ctx, e.s, ledger.ForgetRequest{Key: key, LocallyLocked: !e.caps.Leases}); err != nil || !ok {
				e.t.Fatalf("forget of the paused holder's record: %v %v", ok, err)
			}
		}},
		{name: "takeover", takeover: true, lose: func(e *env, key string) {
			// gc never removes a running record, however old: the key is
			// taken over instead.
			if _, err := ledger.GC(e.ctx, e.s, ledger.GCRequest{OlderThan: 0}); err != nil {
				e.t.Fatal(err)
			}
			e.wantState(key, ledger.Running, e.get(key).Attempt)
		}},
	}
	if e.caps.Vanish != nil {
		ls = append(ls, loss{name: "vanish", lose: func(e *env, key string) { e.caps.Vanish(e.t, e.s, key) }})
	}
	if e.caps.Wipe != nil {
		ls = append(ls, loss{name: "wipe", marksLost: true, lose: func(e *env, _ string) { e.caps.Wipe(e.t, e.s) }})
	}
	return ls
}

// pausedHolder claims key for a holder that is then paused past its
// lease (on a lock store: whose kernel lock is then free), and returns
// its record as the holder keeps it.
func (e *env) pausedHolder(key string) *ledger.Record {
	e.t.Helper()
	req := e.req(key)
	req.Lease = e.deadLease()
	stale := e.claim(req, ledger.ActRun).Record
	if e.caps.Leases {
		e.waitExpired(key)
	}
	return stale
}

// wantLost checks that a stale holder's renewal, completion and release
// all fail with want (errors.Is ErrLeaseLost too, and want's exact
// words), and change nothing.
func (e *env) wantLost(stale *ledger.Record, want error) {
	e.t.Helper()
	before, _, err := e.s.Get(e.ctx, stale.Key)
	if err != nil {
		e.t.Fatal(err)
	}
	check := func(what string, err error) {
		e.t.Helper()
		if !errors.Is(err, ledger.ErrLeaseLost) || !errors.Is(err, want) || err.Error() != want.Error() {
			e.t.Fatalf("%s by the stale holder (attempt %d): %v, want %q", what, stale.Attempt, err, want)
		}
	}
	check("renewal", ledger.Renew(e.ctx, e.s, stale, time.Minute))
	done := *stale
	done.State, done.ExitCode, done.EndedAt = ledger.Succeeded, 0, time.Now()
	done.Stdout = output("the stale holder's output", -1)
	_, err = ledger.Complete(e.ctx, e.s, &done)
	check("completion", err)
	check("release", ledger.Release(e.ctx, e.s, stale))
	after, expired, err := e.s.Get(e.ctx, stale.Key)
	if err != nil {
		e.t.Fatal(err)
	}
	switch {
	case before == nil && after != nil:
		e.t.Fatalf("the stale holder's writes left a record: %+v", after)
	case before != nil && (after == nil || after.Token != before.Token || after.State != before.State || after.Attempt != before.Attempt ||
		!bytes.Equal(after.Stdout.Data, before.Stdout.Data)):
		e.t.Fatalf("the stale holder's writes changed the record: %+v, was %+v", after, before)
	case before != nil && before.State == ledger.Running && e.caps.Leases && expired:
		e.t.Fatal("the stale holder's release ended the newer attempt's lease")
	}
}

// staleHolderFenced: a holder paused past its lease wakes up after its
// record was forgotten, taken over, expired by the store (ttl), or lost
// with the store's data, and a newer attempt claimed the key: its
// renewal, completion and release fail with ErrLeaseLost and never touch
// the newer record, which renews and completes as its own. The newer
// attempt's number is higher than the stale one's, unless the store lost
// its marks too (then the token alone fences).
func staleHolderFenced(e *env) {
	for _, l := range e.losses() {
		k := e.key()
		stale := e.pausedHolder(k)
		l.lose(e, k)
		req := e.req(k)
		req.Record.Holder = "host-b pid 200"
		if l.takeover {
			req = e.dead(req)
			req.Recover = ledger.RecoverRetry
		} else if rec, _, err := e.s.Get(e.ctx, k); err != nil || rec != nil {
			e.t.Fatalf("%s: record after the loss: %+v %v, want none", l.name, rec, err)
		}
		newer := e.claim(req, ledger.ActRun).Record
		if newer.Attempt <= stale.Attempt && !l.marksLost {
			e.t.Fatalf("%s: the newer claim is attempt %d after attempt %d: attempt numbers went back", l.name, newer.Attempt, stale.Attempt)
		}
		if newer.Token == "" || newer.Token == stale.Token {
			e.t.Fatalf("%s: tokens %q and %q, want two distinct", l.name, stale.Token, newer.Token)
		}
		e.wantLost(stale, ledger.ErrLeaseLost)
		if got := e.wantState(k, ledger.Running, newer.Attempt); got.Token != newer.Token || got.Holder != "host-b pid 200" {
			e.t.Fatalf("%s: record %+v, want the newer attempt's", l.name, got)
		}
		if err := ledger.Renew(e.ctx, e.s, newer, time.Minute); err != nil {
			e.t.Fatalf("%s: the newer attempt's renewal: %v", l.name, err)
		}
		e.complete(newer, ledger.Succeeded, 0)
		e.claim(e.req(k), ledger.ActReplay)
	}
}

// leaseLostSaysWhy: a stale holder is told what happened to its record:
// gone (and its writes create none), ended by another worker (and its
// writes leave it unknown, even after its retention), or held by a newer
// attempt (staleHolderFenced).
func leaseLostSaysWhy(e *env) {
	k := e.key()
	stale := e.pausedHolder(k)
	if ok, err := ledger.Forget(e.ctx, e.s, ledger.ForgetRequest{Key: k, LocallyLocked: !e.caps.Leases}); err != nil || !ok {
		e.t.Fatalf("forget: %v %v", ok, err)
	}
	e.wantLost(stale, ledger.ErrRecordGone)

	k2 := e.key()
	stale = e.pausedHolder(k2)
	e.claim(e.dead(e.req(k2)), ledger.ActUnknown)
	e.wantLost(stale, ledger.ErrAttemptEnded)
	// An unknown outcome never expires into a run.
	const retain = time.Second
	e.waitAged(k2, retain)
	req := e.req(k2)
	req.Retain = retain
	e.claim(req, ledger.ActUnknown)
	e.wantLost(stale, ledger.ErrAttemptEnded)
	if rec := e.wantState(k2, ledger.Unknown, stale.Attempt); rec.Token != stale.Token {
		e.t.Fatalf("unknown record's token %q, want the attempt's %q", rec.Token, stale.Token)
	}
}

// attemptsNeverGoBack: whatever removes or replaces a key's record
// (forget, gc, retention, the store's own expiry), its next claim runs a
// higher attempt, with a token of its own.
func attemptsNeverGoBack(e *env) {
	const older = time.Second
	k := e.key()
	tokens := map[string]bool{}
	var last int64
	next := func(how string, req ledger.ClaimRequest) *ledger.Record {
		e.t.Helper()
		r := e.claim(req, ledger.ActRun).Record
		if r.Attempt <= last || tokens[r.Token] {
			e.t.Fatalf("after %s: attempt %d token %s (the last was %d, tokens %v)", how, r.Attempt, r.Token, last, tokens)
		}
		last, tokens[r.Token] = r.Attempt, true
		e.wantState(k, ledger.Running, r.Attempt)
		return r
	}
	r := next("the first claim", e.req(k))
	e.complete(r, ledger.Succeeded, 0)
	if ok, err := ledger.Forget(e.ctx, e.s, ledger.ForgetRequest{Key: k}); err != nil || !ok {
		e.t.Fatalf("forget: %v %v", ok, err)
	}
	r = next("forget", e.req(k))
	e.complete(r, ledger.Failed, 1)
	e.waitAged(k, older)
	if n, err := ledger.GC(e.ctx, e.s, ledger.GCRequest{OlderThan: older}); err != nil || n < 1 {
		e.t.Fatalf("gc: %d %v", n, err)
	}
	r = next("gc", e.req(k))
	e.complete(r, ledger.Succeeded, 0)
	e.waitAged(k, older)
	req := e.req(k)
	req.Retain = older
	r = next("retention", req)
	if e.caps.Vanish != nil {
		e.complete(r, ledger.Succeeded, 0)
		e.caps.Vanish(e.t, e.s, k)
		next("the store's expiry", e.req(k))
	}
}

// release: a holder that exits without a recorded outcome releases its
// lease, so the next claim finds it dead (unknown) at once instead of
// busy for the rest of the lease. A release by a stale holder ends
// nothing.
func release(e *env) {
	k := e.key()
	d := e.claim(e.req(k), ledger.ActRun) // a lease of a minute
	if err := ledger.Release(e.ctx, e.s, d.Record); err != nil {
		e.t.Fatalf("release: %v", err)
	}
	rec, expired, err := e.s.Get(e.ctx, k)
	if err != nil || rec == nil || rec.State != ledger.Running {
		e.t.Fatalf("after release: %+v %v", rec, err)
	}
	if !e.caps.Leases {
		// The kernel lock ends with the holder; the record is as it was.
		return
	}
	if !expired {
		e.t.Fatal("after release the lease is still live on the store's clock")
	}
	u := e.claim(e.req(k), ledger.ActUnknown)
	if u.Previous == nil || !strings.Contains(u.Record.Reason, "lease") {
		e.t.Fatalf("claim after release: %+v previous %v", u.Record, u.Previous)
	}
}

// holderAliveHook: with the kernel lock free (LocallyLocked), the rules
// ask HolderAlive about the recorded holder before declaring it dead:
// alive keeps the record busy for claims, resolve and forget; dead makes
// it unknown.
func holderAliveHook(e *env) {
	k := e.key()
	d := e.claim(e.req(k), ledger.ActRun)
	var asked []*ledger.Record
	alive := true
	hook := func(rec *ledger.Record) bool {
		asked = append(asked, rec)
		return alive
	}
	req := e.req(k)
	req.LocallyLocked, req.HolderAlive = true, hook
	e.claim(req, ledger.ActBusy)
	if _, err := ledger.Resolve(e.ctx, e.s, ledger.ResolveRequest{Key: k, As: ledger.Failed, LocallyLocked: true, HolderAlive: hook}); !errors.Is(err, ledger.ErrBusy) {
		e.t.Fatalf("resolve of a live holder's record: %v, want ErrBusy", err)
	}
	if _, err := ledger.Forget(e.ctx, e.s, ledger.ForgetRequest{Key: k, LocallyLocked: true, HolderAlive: hook}); !errors.Is(err, ledger.ErrBusy) {
		e.t.Fatalf("forget of a live holder's record: %v, want ErrBusy", err)
	}
	if len(asked) != 3 || asked[0].Token != d.Record.Token || asked[0].Holder != "host-a pid 100" {
		e.t.Fatalf("HolderAlive asked %d times (want 3), first about %+v", len(asked), asked)
	}
	e.wantState(k, ledger.Running, 1)
	alive = false
	e.claim(req, ledger.ActUnknown)
}

// longTaskTool: a task id of 5 KB and a long tool name work as a short
// one does (PostgreSQL's btree refused an index row over 2704 bytes).
func longTaskTool(e *env) {
	k := e.key()
	req := e.req(k)
	req.Record.Task = strings.Repeat("t", 5000) + e.prefix
	req.Record.Tool = strings.Repeat("x", 3000)
	d := e.claim(req, ledger.ActRun)
	e.complete(d.Record, ledger.Succeeded, 0)
	e.claim(req, ledger.ActReplay)
	for _, f := range []ledger.Filter{{Task: req.Record.Task}, {Task: req.Record.Task, Tool: req.Record.Tool}} {
		recs, err := e.s.List(e.ctx, f)
		if err != nil || len(recs) != 1 || recs[0].Task != req.Record.Task {
			e.t.Fatalf("list by a long task: %d records, %v", len(recs), err)
		}
	}
}

// listReportsLease: on a lease store, List gives a running record's
// lease and the store's time of the read, so that LeaseExpired tells an
// expired one, and Effective shows it as the next claim would see it.
func listReportsLease(e *env) {
	k := e.key()
	req := e.req(k)
	req.Lease = e.caps.ShortLease
	before := time.Now()
	e.claim(req, ledger.ActRun)
	find := func() *ledger.Record {
		e.t.Helper()
		recs, err := e.s.List(e.ctx, ledger.Filter{Task: req.Record.Task})
		if err != nil || len(recs) != 1 {
			e.t.Fatalf("list: %d records, %v", len(recs), err)
		}
		return recs[0]
	}
	live := find()
	if live.ReadAt.IsZero() || (live.LeaseUntil.IsZero() || ledger.LeaseExpired(live)) && e.mustLive(before) {
		e.t.Fatalf("listed live lease: lease_until %v read at %v expired %v", live.LeaseUntil, live.ReadAt, ledger.LeaseExpired(live))
	}
	if !ledger.LeaseExpired(live) && ledger.Effective(live, false, false) != live {
		e.t.Fatal("Effective changed a live record")
	}
	e.waitExpired(k)
	dead := find()
	if !ledger.LeaseExpired(dead) {
		e.t.Fatalf("listed expired lease: lease_until %v read at %v, not expired", dead.LeaseUntil, dead.ReadAt)
	}
	eff := ledger.Effective(dead, ledger.LeaseExpired(dead), false)
	if eff.State != ledger.Unknown || !strings.Contains(eff.Reason, "lease expired") || dead.State != ledger.Running {
		e.t.Fatalf("effective record %+v (listed %s)", eff, dead.State)
	}
	if u := e.claim(e.req(k), ledger.ActUnknown); u.Record.Reason != eff.Reason {
		e.t.Fatalf("the claim's reason %q, Effective's %q", u.Record.Reason, eff.Reason)
	}
}

// completeTooLarge: an outcome the store refuses for its size is recorded
// without the outputs' bytes (their lengths and sha256 kept, marked
// truncated), and Complete says so: the success is not lost to unknown.
func completeTooLarge(e *env) {
	if e.caps.Cramped == nil {
		e.t.Skip("no way to fill this store in a test")
	}
	s, n := e.caps.Cramped(e.t)
	e.s = s
	k := e.key()
	d := e.claim(e.req(k), ledger.ActRun)
	r := *d.Record
	r.State, r.ExitCode, r.EndedAt = ledger.Succeeded, 0, time.Now()
	big := strings.Repeat("o", n)
	r.Stdout = output(big, -1)
	r.Stderr = output("a few words\n", -1)
	c, err := ledger.Complete(e.ctx, e.s, &r)
	if err != nil {
		e.t.Fatalf("complete with %d bytes of output on a full store: %v", n, err)
	}
	if !c.OutputsDropped || !errors.Is(c.Cause, ledger.ErrTooLarge) {
		e.t.Fatalf("completion %+v, want OutputsDropped with an ErrTooLarge cause", c)
	}
	got := e.claim(e.req(k), ledger.ActReplay).Record
	for _, o := range []struct{ got, want ledger.Output }{{got.Stdout, r.Stdout}, {got.Stderr, r.Stderr}} {
		if len(o.got.Data) != 0 || !o.got.Truncated || o.got.Length != o.want.Length || o.got.SHA256 != o.want.SHA256 {
			e.t.Fatalf("recorded output %d bytes, truncated %v, length %d, sha %s; want none, truncated, %d, %s",
				len(o.got.Data), o.got.Truncated, o.got.Length, o.got.SHA256, o.want.Length, o.want.SHA256)
		}
	}
	// A completion that fits records its bytes as before.
	k2 := e.key()
	d = e.claim(e.req(k2), ledger.ActRun)
	small := *d.Record
	small.State, small.ExitCode, small.EndedAt, small.Stdout = ledger.Succeeded, 0, time.Now(), output("ok\n", -1)
	if c, err := ledger.Complete(e.ctx, e.s, &small); err != nil || c.OutputsDropped {
		e.t.Fatalf("a small completion: %+v %v", c, err)
	}
	if got := e.claim(e.req(k2), ledger.ActReplay).Record; string(got.Stdout.Data) != "ok\n" {
		e.t.Fatalf("small output %q", got.Stdout.Data)
	}
}

// legacyRecord: a record written before tokens were kept (no token) is
// fenced by its attempt and state as before: its holder completes it, and
// the next attempt over it gets a token.
func legacyRecord(e *env) {
	k := e.key()
	old := &ledger.Record{Key: k, Task: "task-" + e.prefix, Tool: "deploy", Kind: "run", Fingerprint: fp("a"),
		State: ledger.Running, Attempt: 1, ExitCode: ledger.NoExit, StartedAt: time.Now(), Holder: "old idemkey"}
	if ok, err := e.s.Insert(e.ctx, old, time.Minute); err != nil || !ok {
		e.t.Fatalf("insert: %v %v", ok, err)
	}
	if err := ledger.Renew(e.ctx, e.s, old, time.Minute); err != nil {
		e.t.Fatalf("renew of a record without a token: %v", err)
	}
	e.complete(old, ledger.Failed, 3)
	if got := e.wantState(k, ledger.Failed, old.Attempt); got.Token != "" || got.ExitCode != 3 {
		e.t.Fatalf("completed legacy record: %+v", got)
	}
	d := e.claim(e.req(k), ledger.ActRun)
	if d.Record.Token == "" || d.Record.Attempt != old.Attempt+1 {
		e.t.Fatalf("attempt over a legacy record: %+v", d.Record)
	}
	// The old holder, paused, cannot complete the new attempt.
	e.wantLost(old, ledger.ErrLeaseLost)
}

// gcSparesReclaimedAfterWipe: gc lists a record; before it deletes it,
// the store loses its data and the step runs again at the same attempt
// number: the new record is not the one gc listed (its token differs),
// and stays.
func gcSparesReclaimedAfterWipe(e *env) {
	if e.caps.Wipe == nil {
		e.t.Skip("no Wipe for this store")
	}
	e.gcSparesRerun(true)
}
