// Package ledgertest is the table of scenarios every ledger.Store passes:
// the rules of package ledger run against the store, so that a store that
// translates a primitive wrongly fails here, not in production.
//
//	func TestScenarios(t *testing.T) {
//		ledgertest.Run(t, func(t *testing.T) ledger.Store { return open(t, url) }, ledgertest.Caps{Leases: true})
//	}
package ledgertest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/idemkey/idemkey/derive/ledger"
)

// Caps describes the store under test.
type Caps struct {
	// Leases: the store measures leases on its own clock (PostgreSQL,
	// Redis), and a running record whose lease ran out has no live
	// holder. Without leases (SQLite), liveness is the caller's kernel
	// lock, and the scenarios declare a holder dead by claiming with
	// LocallyLocked.
	Leases bool
	// ShortLease is the lease of the expiry scenarios (default 300 ms).
	ShortLease time.Duration
	// Concurrency is the number of goroutines racing one key (default 32).
	Concurrency int
	// Wipe, if set, loses every record of s and every high-water mark, as
	// TRUNCATE, FLUSHALL or an emptied file would.
	Wipe func(t *testing.T, s ledger.Store)
	// Vanish, if set, makes the record of key disappear as the store
	// itself can make it, behind the rules' back (Redis: its ttl runs
	// out; SQLite: a DELETE), its high-water mark kept.
	Vanish func(t *testing.T, s ledger.Store, key string)
	// Cramped, if set, returns a store (with the keys of the scenario
	// free) on which a claim fits but a completion with n bytes of output
	// is refused for its size (a full disk, maxmemory).
	Cramped func(t *testing.T) (s ledger.Store, n int)
	// Isolated: open returns a store of the scenario's own (a new file, a
	// new memory store), so that even the scenarios that act on the whole
	// store run beside the others.
	Isolated bool
	// OwnStore, if set, returns a store of the scenario's own (a table, a
	// server, a key prefix of its own) for each scenario that acts on the
	// whole store: those then run beside the others, not one at a time
	// before them (each waits a second or two for records to age).
	OwnStore func(t *testing.T) ledger.Store
}

// Run runs every scenario as a subtest; open returns a store with no
// records for the keys a scenario uses (each scenario uses its own keys),
// and is responsible for closing it (t.Cleanup). The scenarios that act
// on the whole store (storeWide) run first, one at a time, unless each
// scenario has a store of its own (Isolated) or each of them gets one
// (OwnStore); the others then run at once, each on its own keys: most of
// their time is spent waiting for leases and ages on the store's clock,
// and those waits overlap. Called concurrently, t.Run is not bound by
// -parallel.
func Run(t *testing.T, open func(t *testing.T) ledger.Store, caps Caps) {
	if caps.ShortLease <= 0 {
		caps.ShortLease = 300 * time.Millisecond
	}
	if caps.Concurrency <= 0 {
		caps.Concurrency = 32
	}
	run := func(sc scenario, open func(t *testing.T) ledger.Store) {
		t.Run(sc.name, func(t *testing.T) {
			e := &env{t: t, s: open(t), caps: caps, ctx: context.Background(), prefix: uniq()}
			sc.fn(e)
		})
	}
	var wg sync.WaitGroup
	for _, wide := range []bool{true, false} {
		for _, sc := range scenarios {
			if (sc.leases && !caps.Leases) || storeWide[sc.name] != wide {
				continue
			}
			o := open
			if wide && caps.OwnStore != nil {
				o = caps.OwnStore
			} else if wide && !caps.Isolated {
				run(sc, o)
				continue
			}
			wg.Go(func() { run(sc, o) })
		}
	}
	wg.Wait()
}

// storeWide are the scenarios that act on every record of the store, not
// only on their own keys: gc (which removes any old finished record) and
// Wipe. They must not run beside another scenario.
var storeWide = map[string]bool{
	"GC":                         true,
	"GCSparesReclaimed":          true,
	"StaleHolderFenced":          true,
	"AttemptsNeverGoBack":        true,
	"GCSparesReclaimedAfterWipe": true,
}

type scenario struct {
	name   string
	leases bool // only on lease stores
	fn     func(e *env)
}

var scenarios = []scenario{
	{"Primitives", false, primitives},
	{"FirstClaimRuns", false, firstClaimRuns},
	{"SucceededReplays", false, succeededReplays},
	{"OutputsRoundTrip", false, outputsRoundTrip},
	{"OddTextRecorded", false, oddTextRecorded},
	{"FailedRunsNextAttempt", false, failedRunsNextAttempt},
	{"FailedReplayed", false, failedReplayed},
	{"RunningIsBusy", false, runningIsBusy},
	{"DeadHolderIsUnknown", false, deadHolderIsUnknown},
	{"UnknownRetried", false, unknownRetried},
	{"SignalDeathUnknown", false, signalDeathUnknown},
	{"Mismatch", false, mismatch},
	{"Fencing", false, fencing},
	{"CompleteNeedsOutcome", false, completeNeedsOutcome},
	{"Resolve", false, resolve},
	{"Forget", false, forget},
	{"ListFilters", false, listFilters},
	{"Retention", false, retention},
	{"GC", false, gc},
	{"GCSparesReclaimed", false, gcSparesReclaimed},
	{"RaceOneKey", false, raceOneKey},
	{"RaceDistinctKeys", false, raceDistinctKeys},
	{"LeaseExpiresUnknown", true, leaseExpiresUnknown},
	{"LeaseRenewed", true, leaseRenewed},
	{"LeaseTakeoverFences", true, leaseTakeoverFences},
	{"ResolveExpiredRunning", true, resolveExpiredRunning},
	{"StaleHolderFenced", false, staleHolderFenced},
	{"LeaseLostSaysWhy", false, leaseLostSaysWhy},
	{"AttemptsNeverGoBack", false, attemptsNeverGoBack},
	{"Release", false, release},
	{"HolderAliveHook", false, holderAliveHook},
	{"LongTaskTool", false, longTaskTool},
	{"ListReportsLease", true, listReportsLease},
	{"CompleteTooLarge", false, completeTooLarge},
	{"LegacyRecord", false, legacyRecord},
	{"GCSparesReclaimedAfterWipe", false, gcSparesReclaimedAfterWipe},
}

type env struct {
	t      *testing.T
	s      ledger.Store
	caps   Caps
	ctx    context.Context
	prefix string
	n      int
}

func uniq() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// key returns a fresh key for the scenario.
func (e *env) key() string {
	e.n++
	return fmt.Sprintf("%s-%s-%d", strings.ReplaceAll(e.t.Name(), "/", "."), e.prefix, e.n)
}

func fp(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// req is a claim of key with fingerprint "a" and a long lease.
func (e *env) req(key string) ledger.ClaimRequest {
	return ledger.ClaimRequest{
		Record: ledger.Record{
			Key: key, Task: "task-" + e.prefix, Tool: "deploy", Kind: "run",
			Fingerprint: fp("a"), Request: []byte(`{"args":["./deploy.sh","prod"]}`),
			Holder: "host-a pid 100",
		},
		Lease:  time.Minute,
		Retain: 7 * 24 * time.Hour,
	}
}

// dead makes req see a running record's holder as dead: on lease stores
// by waiting until the lease (claimed as ShortLease) runs out on the
// store's clock, on lock stores by claiming with the kernel lock held.
func (e *env) dead(req ledger.ClaimRequest) ledger.ClaimRequest {
	e.t.Helper()
	if !e.caps.Leases {
		req.LocallyLocked = true
		return req
	}
	e.waitExpired(req.Record.Key)
	return req
}

// waitAged waits until the record of key is older than d as the rules
// measure it (ledger.Age: on the store's clock where it reports one).
func (e *env) waitAged(key string, d time.Duration) {
	e.t.Helper()
	deadline := time.Now().Add(d + 20*time.Second)
	for {
		rec := e.get(key)
		if ledger.Age(rec, time.Now()) > d {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the record of %s did not age past %v", key, d)
		}
		time.Sleep(d / 10)
	}
}

func (e *env) waitExpired(key string) {
	e.t.Helper()
	deadline := time.Now().Add(20*e.caps.ShortLease + 10*time.Second)
	for {
		rec, expired, err := e.s.Get(e.ctx, key)
		if err != nil {
			e.t.Fatalf("get %s: %v", key, err)
		}
		if rec == nil || rec.State != ledger.Running {
			e.t.Fatalf("waiting for the lease of %s to expire: record is %v", key, rec)
		}
		if expired {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the lease of %s (%v) did not expire on the store's clock", key, e.caps.ShortLease)
		}
		time.Sleep(e.caps.ShortLease / 10)
	}
}

// mustLive reports whether a lease of ShortLease taken at since or later
// must still be live: a loaded machine's claim and read can take longer
// than the lease, and then it may have run out (and a store may have
// dropped its lease_until with it).
func (e *env) mustLive(since time.Time) bool { return time.Since(since) < e.caps.ShortLease }

// deadLease is the lease for a claim that will be declared dead.
func (e *env) deadLease() time.Duration {
	if e.caps.Leases {
		return e.caps.ShortLease
	}
	return time.Minute
}

func (e *env) claim(req ledger.ClaimRequest, want ledger.Action) *ledger.Decision {
	e.t.Helper()
	d, err := ledger.Claim(e.ctx, e.s, req)
	if err != nil {
		e.t.Fatalf("claim %s: %v", req.Record.Key, err)
	}
	if d.Action != want {
		e.t.Fatalf("claim %s: action %v, want %v (record %+v)", req.Record.Key, d.Action, want, d.Record)
	}
	if d.Record == nil {
		e.t.Fatalf("claim %s: decision %v without a record", req.Record.Key, d.Action)
	}
	return d
}

func (e *env) get(key string) *ledger.Record {
	e.t.Helper()
	rec, _, err := e.s.Get(e.ctx, key)
	if err != nil {
		e.t.Fatalf("get %s: %v", key, err)
	}
	if rec == nil {
		e.t.Fatalf("get %s: no record", key)
	}
	return rec
}

func (e *env) complete(rec *ledger.Record, state ledger.State, code int) *ledger.Record {
	e.t.Helper()
	r := *rec
	r.State = state
	r.ExitCode = code
	r.EndedAt = time.Now()
	if _, err := ledger.Complete(e.ctx, e.s, &r); err != nil {
		e.t.Fatalf("complete %s attempt %d as %s: %v", rec.Key, rec.Attempt, state, err)
	}
	return &r
}

func (e *env) wantState(key string, state ledger.State, attempt int64) *ledger.Record {
	e.t.Helper()
	rec := e.get(key)
	if rec.State != state || rec.Attempt != attempt {
		e.t.Fatalf("record %s: state %s attempt %d, want %s attempt %d", key, rec.State, rec.Attempt, state, attempt)
	}
	return rec
}

func sameTime(a, b time.Time) bool {
	d := a.Sub(b)
	if d < 0 {
		d = -d
	}
	return d < time.Millisecond
}

func output(data string, capped int) ledger.Output {
	h := sha256.Sum256([]byte(data))
	o := ledger.Output{Length: int64(len(data)), SHA256: hex.EncodeToString(h[:])}
	if capped >= 0 && capped < len(data) {
		o.Data = []byte(data[:capped])
		o.Truncated = true
	} else {
		o.Data = []byte(data)
	}
	return o
}

// primitives checks the store's atomic operations directly.
func primitives(e *env) {
	k := e.key()
	rec, expired, err := e.s.Get(e.ctx, k)
	if err != nil || rec != nil || expired {
		e.t.Fatalf("get of a missing key: %v %v %v, want nil false nil", rec, expired, err)
	}
	r := &ledger.Record{Key: k, Task: "t", Tool: "x", Kind: "run", Fingerprint: fp("a"), State: ledger.Running, Attempt: 1, ExitCode: ledger.NoExit, StartedAt: time.Now()}
	if ok, err := e.s.Insert(e.ctx, r, time.Minute); err != nil || !ok {
		e.t.Fatalf("insert: %v %v", ok, err)
	}
	if ok, err := e.s.Insert(e.ctx, r, time.Minute); err != nil || ok {
		e.t.Fatalf("second insert of one key: %v %v, want false", ok, err)
	}
	got, expired, err := e.s.Get(e.ctx, k)
	if err != nil || got == nil || expired {
		e.t.Fatalf("get after insert: %v %v %v", got, expired, err)
	}
	if got.ExitCode != ledger.NoExit {
		e.t.Fatalf("exit code %d, want %d", got.ExitCode, ledger.NoExit)
	}
	next := *r
	next.State = ledger.Succeeded
	next.ExitCode = 0
	if ok, err := e.s.Swap(e.ctx, ledger.Version{Attempt: 2, State: ledger.Running}, false, &next, 0); err != nil || ok {
		e.t.Fatalf("swap from a wrong attempt: %v %v, want false", ok, err)
	}
	if ok, err := e.s.Swap(e.ctx, ledger.Version{Attempt: 1, State: ledger.Failed}, false, &next, 0); err != nil || ok {
		e.t.Fatalf("swap from a wrong state: %v %v, want false", ok, err)
	}
	if ok, err := e.s.Swap(e.ctx, ledger.Version{Attempt: 1, State: ledger.Running}, true, &next, 0); err != nil || ok {
		e.t.Fatalf("swap needing an expired lease of a live record: %v %v, want false", ok, err)
	}
	if ok, err := e.s.Swap(e.ctx, ledger.Version{Attempt: 1, State: ledger.Running}, false, &next, 0); err != nil || !ok {
		e.t.Fatalf("swap: %v %v", ok, err)
	}
	if ok, err := e.s.Renew(e.ctx, k, ledger.Version{Attempt: 1, State: ledger.Running}, time.Minute); err != nil || ok {
		e.t.Fatalf("renew of a finished record: %v %v, want false", ok, err)
	}
	if ok, err := e.s.Renew(e.ctx, e.key(), ledger.Version{Attempt: 1, State: ledger.Running}, time.Minute); err != nil || ok {
		e.t.Fatalf("renew of a missing record: %v %v, want false", ok, err)
	}
	if ok, err := e.s.Delete(e.ctx, k, &ledger.Version{Attempt: 1, State: ledger.Running}); err != nil || ok {
		e.t.Fatalf("delete from a stale version: %v %v, want false", ok, err)
	}
	if ok, err := e.s.Delete(e.ctx, k, &ledger.Version{Attempt: 1, State: ledger.Succeeded}); err != nil || !ok {
		e.t.Fatalf("delete: %v %v", ok, err)
	}
	if ok, err := e.s.Delete(e.ctx, k, nil); err != nil || ok {
		e.t.Fatalf("delete of a missing key: %v %v, want false", ok, err)
	}
	if ok, err := e.s.Insert(e.ctx, r, time.Minute); err != nil || !ok {
		e.t.Fatalf("insert after delete: %v %v", ok, err)
	}
	if ok, err := e.s.Delete(e.ctx, k, nil); err != nil || !ok {
		e.t.Fatalf("unconditional delete: %v %v", ok, err)
	}
}

func firstClaimRuns(e *env) {
	k := e.key()
	before := time.Now()
	d := e.claim(e.req(k), ledger.ActRun)
	if d.Record.Attempt != 1 || d.Record.State != ledger.Running || d.Previous != nil {
		e.t.Fatalf("first claim: %+v", d)
	}
	rec := e.wantState(k, ledger.Running, 1)
	req := e.req(k)
	if rec.Task != req.Record.Task || rec.Tool != "deploy" || rec.Kind != "run" || rec.Fingerprint != fp("a") ||
		!bytes.Equal(rec.Request, req.Record.Request) || rec.Holder != "host-a pid 100" || rec.ExitCode != ledger.NoExit {
		e.t.Fatalf("stored record does not round-trip: %+v", rec)
	}
	if rec.StartedAt.Before(before.Add(-time.Second)) || rec.StartedAt.After(time.Now().Add(time.Second)) {
		e.t.Fatalf("started_at %v, want about %v", rec.StartedAt, before)
	}
	if !rec.EndedAt.IsZero() {
		e.t.Fatalf("running record has ended_at %v", rec.EndedAt)
	}
}

func succeededReplays(e *env) {
	k := e.key()
	d := e.claim(e.req(k), ledger.ActRun)
	done := e.complete(d.Record, ledger.Succeeded, 0)
	for range 2 {
		r := e.claim(e.req(k), ledger.ActReplay)
		if r.Record.Attempt != 1 || r.Record.State != ledger.Succeeded || r.Record.ExitCode != 0 {
			e.t.Fatalf("replay: %+v", r.Record)
		}
		if !sameTime(r.Record.EndedAt, done.EndedAt) || !sameTime(r.Record.StartedAt, d.Record.StartedAt) {
			e.t.Fatalf("times do not round-trip: started %v/%v ended %v/%v", r.Record.StartedAt, d.Record.StartedAt, r.Record.EndedAt, done.EndedAt)
		}
	}
	// The policy does not matter for a succeeded record.
	req := e.req(k)
	req.Recover = ledger.RecoverRetry
	req.LocallyLocked = true
	e.claim(req, ledger.ActReplay)
}

// outputsRoundTrip: a failed record's outputs (bytes of every value, a
// kept prefix of a longer stream), meta and reason come back as recorded
// in its replay, small and large, and List gives their lengths and
// hashes without their data.
func outputsRoundTrip(e *env) {
	bin := string([]byte{0, 1, 2, 0xff, 0xfe, '\n', '\r'})
	outputsRoundTripOf(e, output("hello\n"+bin, -1), output(strings.Repeat("e", 5000), 1024))
	// Outputs large enough to take a store's path for large writes, with
	// every byte value.
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	outputsRoundTripOf(e, output(strings.Repeat(string(all), 1024), -1), output(strings.Repeat(bin, 40000), 200000))
}

func outputsRoundTripOf(e *env, stdout, stderr ledger.Output) {
	k := e.key()
	d := e.claim(e.req(k), ledger.ActRun)
	r := *d.Record
	r.State = ledger.Failed
	r.ExitCode = 3
	r.EndedAt = time.Now()
	r.Stdout, r.Stderr = stdout, stderr
	r.Meta = []byte(`{"status":201}`)
	r.Reason = "exit status 3"
	if _, err := ledger.Complete(e.ctx, e.s, &r); err != nil {
		e.t.Fatal(err)
	}
	req := e.req(k)
	req.ReplayFailed = true
	got := e.claim(req, ledger.ActReplay).Record
	for _, c := range []struct {
		name      string
		got, want ledger.Output
	}{{"stdout", got.Stdout, r.Stdout}, {"stderr", got.Stderr, r.Stderr}} {
		if !bytes.Equal(c.got.Data, c.want.Data) || c.got.Length != c.want.Length || c.got.SHA256 != c.want.SHA256 || c.got.Truncated != c.want.Truncated {
			e.t.Fatalf("%s does not round-trip: got %d bytes length %d sha %s truncated %v, want %d bytes length %d sha %s truncated %v",
				c.name, len(c.got.Data), c.got.Length, c.got.SHA256, c.got.Truncated, len(c.want.Data), c.want.Length, c.want.SHA256, c.want.Truncated)
		}
	}
	if !bytes.Equal(got.Meta, r.Meta) || got.ExitCode != 3 || got.Reason != "exit status 3" {
		e.t.Fatalf("meta, exit code or reason do not round-trip: %q %d %q", got.Meta, got.ExitCode, got.Reason)
	}
	// List returns no output data, but the lengths and hashes.
	recs, err := e.s.List(e.ctx, ledger.Filter{Task: req.Record.Task})
	if err != nil {
		e.t.Fatal(err)
	}
	i := slices.IndexFunc(recs, func(l *ledger.Record) bool { return l.Key == k })
	if i < 0 {
		e.t.Fatalf("list: %d records, none of key %s", len(recs), k)
	}
	l := recs[i]
	if len(l.Stdout.Data) != 0 || l.Stdout.Length != r.Stdout.Length || l.Stderr.SHA256 != r.Stderr.SHA256 || l.Stderr.Truncated != r.Stderr.Truncated {
		e.t.Fatalf("list record outputs: %+v %+v", l.Stdout, l.Stderr)
	}
}

// oddTextRecorded: text fields holding what a store's text type may not
// (NUL, bytes that are not UTF-8: a task id from --task, a reason quoting
// a command path given with --args) are still recorded: the claim, the
// completion and the replay work, the outcome is kept, the reason keeps
// its words (byte for byte, or on a store whose text holds only UTF-8
// with what it cannot hold replaced), and List's filter finds the record
// by the task and tool as they were claimed.
func oddTextRecorded(e *env) {
	k := e.key()
	req := e.req(k)
	req.Record.Task = "task-\x00-\xff\xfe-" + e.prefix
	req.Record.Tool = "deploy\x00\xc3"
	req.Record.Holder = "host-\xff pid 100"
	d := e.claim(req, ledger.ActRun)
	r := *d.Record
	r.State, r.ExitCode, r.EndedAt = ledger.Failed, 126, time.Now()
	r.Reason = "could not start: fork/exec ./\xff\x00run: no such file or directory"
	if _, err := ledger.Complete(e.ctx, e.s, &r); err != nil {
		e.t.Fatalf("complete with a reason that is not UTF-8: %v", err)
	}
	req.ReplayFailed = true
	got := e.claim(req, ledger.ActReplay).Record
	if got.State != ledger.Failed || got.ExitCode != 126 || got.Attempt != 1 {
		e.t.Fatalf("replayed: %+v", got)
	}
	if got.Reason != r.Reason && !utf8.ValidString(got.Reason) || !strings.HasPrefix(got.Reason, "could not start: fork/exec ./") || !strings.HasSuffix(got.Reason, "run: no such file or directory") {
		e.t.Fatalf("reason %q: want UTF-8 keeping the words of %q", got.Reason, r.Reason)
	}
	for _, f := range []ledger.Filter{{Task: req.Record.Task}, {Task: req.Record.Task, Tool: req.Record.Tool}} {
		recs, err := e.s.List(e.ctx, f)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(recs) != 1 || recs[0].Key != k {
			e.t.Fatalf("list %q: %d records, want the one claimed", f, len(recs))
		}
	}
}

func failedRunsNextAttempt(e *env) {
	k := e.key()
	d := e.claim(e.req(k), ledger.ActRun)
	e.complete(d.Record, ledger.Failed, 2)
	d2 := e.claim(e.req(k), ledger.ActRun)
	if d2.Record.Attempt != 2 || d2.Previous == nil || d2.Previous.State != ledger.Failed || d2.Previous.ExitCode != 2 {
		e.t.Fatalf("after a failure: %+v previous %+v", d2.Record, d2.Previous)
	}
	e.wantState(k, ledger.Running, 2)
	e.complete(d2.Record, ledger.Succeeded, 0)
	r := e.claim(e.req(k), ledger.ActReplay)
	if r.Record.Attempt != 2 {
		e.t.Fatalf("replay of attempt %d, want 2", r.Record.Attempt)
	}
}

func failedReplayed(e *env) {
	k := e.key()
	d := e.claim(e.req(k), ledger.ActRun)
	e.complete(d.Record, ledger.Failed, 4)
	req := e.req(k)
	req.ReplayFailed = true
	r := e.claim(req, ledger.ActReplay)
	if r.Record.State != ledger.Failed || r.Record.ExitCode != 4 || r.Record.Attempt != 1 {
		e.t.Fatalf("replayed failure: %+v", r.Record)
	}
	e.wantState(k, ledger.Failed, 1)
}

func runningIsBusy(e *env) {
	k := e.key()
	e.claim(e.req(k), ledger.ActRun)
	for _, p := range []ledger.Policy{ledger.RecoverFail, ledger.RecoverRetry} {
		req := e.req(k)
		req.Recover = p
		req.Record.Holder = "host-b pid 200"
		b := e.claim(req, ledger.ActBusy)
		if b.Record.Holder != "host-a pid 100" || b.Record.Attempt != 1 {
			e.t.Fatalf("busy decision shows %+v, want the holder's record", b.Record)
		}
	}
	e.wantState(k, ledger.Running, 1)
}

func deadHolderIsUnknown(e *env) {
	k := e.key()
	req := e.req(k)
	req.Lease = e.deadLease()
	e.claim(req, ledger.ActRun)
	u := e.claim(e.dead(e.req(k)), ledger.ActUnknown)
	if u.Record.State != ledger.Unknown || u.Record.Attempt != 1 || u.Record.Reason == "" || u.Record.Holder != "host-a pid 100" {
		e.t.Fatalf("dead holder: %+v", u.Record)
	}
	if u.Previous == nil || u.Previous.State != ledger.Running {
		e.t.Fatalf("unknown decision's previous: %+v, want the running record", u.Previous)
	}
	rec := e.wantState(k, ledger.Unknown, 1)
	if rec.EndedAt.IsZero() || rec.Reason == "" {
		e.t.Fatalf("unknown record has no end or reason: %+v", rec)
	}
	// Stays unknown, for every later attempt under the fail policy.
	again := e.claim(e.req(k), ledger.ActUnknown)
	if again.Previous != nil {
		e.t.Fatalf("an already unknown record reported as just found dead")
	}
	e.wantState(k, ledger.Unknown, 1)
}

func unknownRetried(e *env) {
	k := e.key()
	req := e.req(k)
	req.Lease = e.deadLease()
	e.claim(req, ledger.ActRun)
	retry := e.dead(e.req(k))
	retry.Recover = ledger.RecoverRetry
	retry.Record.Holder = "host-b pid 200"
	d := e.claim(retry, ledger.ActRun)
	if d.Record.Attempt != 2 || d.Record.Holder != "host-b pid 200" || d.Previous == nil || d.Previous.State != ledger.Unknown {
		e.t.Fatalf("retry of an unknown step: %+v previous %+v", d.Record, d.Previous)
	}
	e.wantState(k, ledger.Running, 2)
	e.complete(d.Record, ledger.Succeeded, 0)
	e.claim(e.req(k), ledger.ActReplay)
}

func signalDeathUnknown(e *env) {
	k := e.key()
	d := e.claim(e.req(k), ledger.ActRun)
	e.complete(d.Record, ledger.Unknown, 128+9)
	u := e.claim(e.req(k), ledger.ActUnknown)
	if u.Record.ExitCode != 137 {
		e.t.Fatalf("exit code %d, want 137", u.Record.ExitCode)
	}
	req := e.req(k)
	req.Recover = ledger.RecoverRetry
	if d := e.claim(req, ledger.ActRun); d.Record.Attempt != 2 {
		e.t.Fatalf("attempt %d, want 2", d.Record.Attempt)
	}
}

func mismatch(e *env) {
	k := e.key()
	d := e.claim(e.req(k), ledger.ActRun)
	other := e.req(k)
	other.Record.Fingerprint = fp("b")
	m := e.claim(other, ledger.ActMismatch)
	if m.Record.Fingerprint != fp("a") || !bytes.Equal(m.Record.Request, e.req(k).Record.Request) {
		e.t.Fatalf("mismatch shows %+v, want the stored record with its request", m.Record)
	}
	e.complete(d.Record, ledger.Succeeded, 0)
	e.claim(other, ledger.ActMismatch)
	e.wantState(k, ledger.Succeeded, 1)
}

func fencing(e *env) {
	k := e.key()
	req := e.req(k)
	req.Lease = e.deadLease()
	first := e.claim(req, ledger.ActRun).Record
	retry := e.dead(e.req(k))
	retry.Recover = ledger.RecoverRetry
	second := e.claim(retry, ledger.ActRun).Record
	if second.Attempt != 2 {
		e.t.Fatalf("takeover attempt %d, want 2", second.Attempt)
	}
	if err := ledger.Renew(e.ctx, e.s, first, time.Minute); !errors.Is(err, ledger.ErrLeaseLost) {
		e.t.Fatalf("stale renewal: %v, want ErrLeaseLost", err)
	}
	stale := *first
	stale.State = ledger.Succeeded
	stale.ExitCode = 0
	stale.EndedAt = time.Now()
	if _, err := ledger.Complete(e.ctx, e.s, &stale); !errors.Is(err, ledger.ErrLeaseLost) {
		e.t.Fatalf("stale completion: %v, want ErrLeaseLost", err)
	}
	e.wantState(k, ledger.Running, 2)
	if err := ledger.Renew(e.ctx, e.s, second, time.Minute); err != nil {
		e.t.Fatalf("current renewal: %v", err)
	}
	e.complete(second, ledger.Failed, 1)
	// A completed attempt cannot complete twice.
	if _, err := ledger.Complete(e.ctx, e.s, &stale); !errors.Is(err, ledger.ErrLeaseLost) {
		e.t.Fatalf("completion of a finished record: %v", err)
	}
	third := e.claim(e.req(k), ledger.ActRun).Record
	if third.Attempt != 3 {
		e.t.Fatalf("attempt %d, want 3", third.Attempt)
	}
}

func completeNeedsOutcome(e *env) {
	k := e.key()
	d := e.claim(e.req(k), ledger.ActRun)
	r := *d.Record
	if _, err := ledger.Complete(e.ctx, e.s, &r); err == nil || errors.Is(err, ledger.ErrLeaseLost) {
		e.t.Fatalf("complete with state running: %v, want a usage error", err)
	}
	e.wantState(k, ledger.Running, 1)
}

func resolve(e *env) {
	k := e.key()
	if _, err := ledger.Resolve(e.ctx, e.s, ledger.ResolveRequest{Key: k, As: ledger.Succeeded}); !errors.Is(err, ledger.ErrNotFound) {
		e.t.Fatalf("resolve of a missing key: %v, want ErrNotFound", err)
	}
	d := e.claim(e.req(k), ledger.ActRun)
	if _, err := ledger.Resolve(e.ctx, e.s, ledger.ResolveRequest{Key: k, As: ledger.Succeeded}); !errors.Is(err, ledger.ErrBusy) {
		e.t.Fatalf("resolve of a running step: %v, want ErrBusy", err)
	}
	e.complete(d.Record, ledger.Unknown, 137)
	if _, err := ledger.Resolve(e.ctx, e.s, ledger.ResolveRequest{Key: k, As: ledger.Running}); err == nil {
		e.t.Fatal("resolve as running accepted")
	}
	r, err := ledger.Resolve(e.ctx, e.s, ledger.ResolveRequest{Key: k, As: ledger.Succeeded, Reason: "the deploy is live"})
	if err != nil {
		e.t.Fatal(err)
	}
	if r.State != ledger.Succeeded || r.ExitCode != 0 || !strings.Contains(r.Reason, "the deploy is live") {
		e.t.Fatalf("resolved: %+v", r)
	}
	e.claim(e.req(k), ledger.ActReplay)
	if _, err := ledger.Resolve(e.ctx, e.s, ledger.ResolveRequest{Key: k, As: ledger.Failed}); !errors.Is(err, ledger.ErrNotUnknown) {
		e.t.Fatalf("resolve of a succeeded step: %v, want ErrNotUnknown", err)
	}

	k2 := e.key()
	d = e.claim(e.req(k2), ledger.ActRun)
	e.complete(d.Record, ledger.Unknown, ledger.NoExit)
	r, err = ledger.Resolve(e.ctx, e.s, ledger.ResolveRequest{Key: k2, As: ledger.Failed})
	if err != nil {
		e.t.Fatal(err)
	}
	if r.State != ledger.Failed || r.ExitCode <= 0 {
		e.t.Fatalf("resolved as failed: %+v", r)
	}
	if d := e.claim(e.req(k2), ledger.ActRun); d.Record.Attempt != 2 {
		e.t.Fatalf("after resolve as failed: attempt %d, want 2", d.Record.Attempt)
	}

	// A running record whose holder is dead may be settled.
	k3 := e.key()
	req := e.req(k3)
	req.Lease = e.deadLease()
	e.claim(req, ledger.ActRun)
	rr := ledger.ResolveRequest{Key: k3, As: ledger.Failed, LocallyLocked: !e.caps.Leases}
	if e.caps.Leases {
		e.waitExpired(k3)
	}
	rr.Reason = "no deploy found"
	r, err = ledger.Resolve(e.ctx, e.s, rr)
	if err != nil {
		e.t.Fatalf("resolve of a dead running step: %v", err)
	}
	// The reason keeps how the attempt ended, as for an unknown record.
	if want := "resolved as failed: no deploy found (was: holder "; !strings.HasPrefix(r.Reason, want) || !strings.HasSuffix(r.Reason, "while the record said running)") {
		e.t.Fatalf("resolved from running: reason %q, want %q… (how its holder was found dead)", r.Reason, want)
	}
	e.wantState(k3, ledger.Failed, 1)
}

func forget(e *env) {
	k := e.key()
	if ok, err := ledger.Forget(e.ctx, e.s, ledger.ForgetRequest{Key: k, LocallyLocked: false}); err != nil || ok {
		e.t.Fatalf("forget of a missing key: %v %v", ok, err)
	}
	d := e.claim(e.req(k), ledger.ActRun)
	if _, err := ledger.Forget(e.ctx, e.s, ledger.ForgetRequest{Key: k, LocallyLocked: false}); !errors.Is(err, ledger.ErrBusy) {
		e.t.Fatalf("forget of a running step: %v, want ErrBusy", err)
	}
	e.complete(d.Record, ledger.Succeeded, 0)
	if ok, err := ledger.Forget(e.ctx, e.s, ledger.ForgetRequest{Key: k, LocallyLocked: false}); err != nil || !ok {
		e.t.Fatalf("forget: %v %v", ok, err)
	}
	if rec, _, err := e.s.Get(e.ctx, k); err != nil || rec != nil {
		e.t.Fatalf("after forget: %v %v", rec, err)
	}
	req := e.req(k)
	req.Lease = e.deadLease()
	if d := e.claim(req, ledger.ActRun); d.Record.Attempt != 2 {
		e.t.Fatalf("after forget: attempt %d, want 2 (attempt numbers never go back)", d.Record.Attempt)
	}
	if e.caps.Leases {
		e.waitExpired(k)
	}
	if ok, err := ledger.Forget(e.ctx, e.s, ledger.ForgetRequest{Key: k, LocallyLocked: !e.caps.Leases}); err != nil || !ok {
		e.t.Fatalf("forget of a dead running step: %v %v", ok, err)
	}
}

func listFilters(e *env) {
	task := "list-" + e.prefix
	mk := func(tool string, state ledger.State) string {
		k := e.key()
		req := e.req(k)
		req.Record.Task = task
		req.Record.Tool = tool
		d := e.claim(req, ledger.ActRun)
		if state != ledger.Running {
			e.complete(d.Record, state, map[ledger.State]int{ledger.Succeeded: 0, ledger.Failed: 1, ledger.Unknown: 137}[state])
		}
		return k
	}
	a := mk("deploy", ledger.Succeeded)
	b := mk("deploy", ledger.Failed)
	c := mk("notify", ledger.Running)
	dd := mk("notify", ledger.Unknown)
	other := e.key()
	e.claim(e.req(other), ledger.ActRun)

	check := func(f ledger.Filter, want ...string) {
		e.t.Helper()
		recs, err := e.s.List(e.ctx, f)
		if err != nil {
			e.t.Fatal(err)
		}
		got := map[string]bool{}
		for _, r := range recs {
			got[r.Key] = true
		}
		for _, k := range want {
			if !got[k] {
				e.t.Errorf("list %+v: %s missing", f, k)
			}
		}
		if f.Task != "" && len(recs) != len(want) {
			e.t.Errorf("list %+v: %d records, want %d", f, len(recs), len(want))
		}
	}
	check(ledger.Filter{Task: task}, a, b, c, dd)
	check(ledger.Filter{Task: task, Tool: "deploy"}, a, b)
	check(ledger.Filter{Task: task, State: ledger.Running}, c)
	check(ledger.Filter{Task: task, Tool: "notify", State: ledger.Unknown}, dd)
	check(ledger.Filter{Task: task, Tool: "nothing"})
	check(ledger.Filter{}, a, b, c, dd, other)
	recs, _ := e.s.List(e.ctx, ledger.Filter{Task: task, Tool: "deploy", State: ledger.Failed})
	if len(recs) == 1 && (recs[0].ExitCode != 1 || recs[0].Attempt != 1 || recs[0].Task != task || recs[0].StartedAt.IsZero()) {
		e.t.Errorf("listed record lacks fields: %+v", recs[0])
	}
}

// retention: a succeeded or failed record older than Retain (ledger.Age:
// on the store's clock where it has one) is ignored, whatever its
// fingerprint, and the claim runs the key's next attempt. An unknown
// record never expires into a run, nor does a running one. On a store with
// its own clock, no worker's clock ages a record: neither a worker whose
// clock is 8 days fast nor a completion written by one 8 days slow.
func retention(e *env) {
	const retain = time.Second
	k := e.key()
	d := e.claim(e.req(k), ledger.ActRun)
	e.complete(d.Record, ledger.Succeeded, 0)
	unknown := e.key()
	d = e.claim(e.req(unknown), ledger.ActRun)
	e.complete(d.Record, ledger.Unknown, 137)
	e.waitAged(k, retain)
	e.waitAged(unknown, retain)
	req := e.req(k)
	req.Retain = retain
	req.Record.Fingerprint = fp("b")
	r := e.claim(req, ledger.ActRun)
	if r.Record.Attempt != 2 || r.Previous != nil {
		e.t.Fatalf("claim over an expired record: attempt %d previous %v, want attempt 2 and no previous", r.Record.Attempt, r.Previous)
	}
	if rec := e.wantState(k, ledger.Running, 2); rec.Fingerprint != fp("b") {
		e.t.Fatalf("fingerprint %s, want the new one", rec.Fingerprint)
	}
	// A running record never expires by retention.
	e.claim(req, ledger.ActBusy)
	// Nor an unknown one, with either policy's words: it waits for a person.
	ureq := e.req(unknown)
	ureq.Retain = retain
	e.claim(ureq, ledger.ActUnknown)
	e.wantState(unknown, ledger.Unknown, 1)

	// Within retention, kept; zero retention keeps for ever.
	k2 := e.key()
	d = e.claim(e.req(k2), ledger.ActRun)
	e.complete(d.Record, ledger.Succeeded, 0)
	req2 := e.req(k2)
	req2.Retain = time.Hour
	e.claim(req2, ledger.ActReplay)
	req2.Retain = 0
	req2.Now = func() time.Time { return time.Now().Add(365 * 24 * time.Hour) }
	e.claim(req2, ledger.ActReplay)

	// A worker whose clock is 8 days fast.
	fast := e.req(k2)
	fast.Now = func() time.Time { return time.Now().Add(8 * 24 * time.Hour) }
	// A completion written by a worker whose clock is 8 days slow.
	k3 := e.key()
	d = e.claim(e.req(k3), ledger.ActRun)
	slow := *d.Record
	slow.State, slow.ExitCode, slow.EndedAt = ledger.Succeeded, 0, time.Now().Add(-8*24*time.Hour)
	if _, err := ledger.Complete(e.ctx, e.s, &slow); err != nil {
		e.t.Fatal(err)
	}
	want := ledger.ActReplay
	if !e.caps.Leases {
		// One machine, one clock: the caller's is the store's.
		want = ledger.ActRun
	}
	e.claim(fast, want)
	e.claim(e.req(k3), want)
}

// gc removes the succeeded and failed records older than its bound, and
// never an unknown or running one, however old and whether or not its
// holder is alive: removing it would let the next run repeat a step whose
// outcome is unknown.
func gc(e *env) {
	const older = time.Second
	old := e.key()
	d := e.claim(e.req(old), ledger.ActRun)
	e.complete(d.Record, ledger.Failed, 1)
	unknown := e.key()
	d = e.claim(e.req(unknown), ledger.ActRun)
	e.complete(d.Record, ledger.Unknown, 137)
	running := e.key()
	rreq := e.req(running)
	rreq.Lease = e.deadLease()
	e.claim(rreq, ledger.ActRun)
	e.waitAged(old, older)
	e.waitAged(unknown, older)
	if e.caps.Leases {
		e.waitExpired(running)
	}
	recent := e.key()
	d = e.claim(e.req(recent), ledger.ActRun)
	e.complete(d.Record, ledger.Succeeded, 0)
	n, err := ledger.GC(e.ctx, e.s, ledger.GCRequest{OlderThan: older})
	if err != nil {
		e.t.Fatal(err)
	}
	if n < 1 {
		e.t.Fatalf("gc removed %d records, want at least 1", n)
	}
	if rec, _, _ := e.s.Get(e.ctx, old); rec != nil {
		e.t.Fatalf("old record kept: %+v", rec)
	}
	e.wantState(unknown, ledger.Unknown, 1)
	e.wantState(running, ledger.Running, 1)
	e.wantState(recent, ledger.Succeeded, 1)
	// The unknown step still waits for a person.
	e.claim(e.req(unknown), ledger.ActUnknown)
}

// deleteHook is a store whose Delete runs before first.
type deleteHook struct {
	ledger.Store
	before func(key string)
}

func (d *deleteHook) Delete(ctx context.Context, key string, from *ledger.Version) (bool, error) {
	if d.before != nil {
		d.before(key)
	}
	return d.Store.Delete(ctx, key, from)
}

// gcSparesReclaimed: gc lists an expired record (attempt 1, succeeded);
// before it deletes it, the step runs again (a claim of an expired record
// runs the next attempt) and succeeds. It is not the record gc listed: it
// must stay, or the next run of the step would run it once more.
func gcSparesReclaimed(e *env) { e.gcSparesRerun(false) }

// gcSparesRerun runs gc over an expired record that, before gc deletes
// it, the step replaces by running again (after a wipe of the store with
// wipe set, at the same attempt number), and checks that the new record
// stays.
func (e *env) gcSparesRerun(wipe bool) {
	const older = time.Second
	k := e.key()
	d := e.claim(e.req(k), ledger.ActRun)
	e.complete(d.Record, ledger.Succeeded, 0)
	e.waitAged(k, older)
	want := d.Record.Attempt + 1
	hook := &deleteHook{Store: e.s}
	hook.before = func(key string) {
		if key != k {
			return
		}
		hook.before = nil
		req := e.req(k)
		req.Retain = older
		if wipe {
			e.caps.Wipe(e.t, e.s)
			want = d.Record.Attempt // the marks are gone too
		}
		again := e.claim(req, ledger.ActRun)
		if again.Record.Attempt != want {
			e.t.Fatalf("the step again: attempt %d, want %d", again.Record.Attempt, want)
		}
		e.complete(again.Record, ledger.Succeeded, 0)
	}
	if _, err := ledger.GC(e.ctx, hook, ledger.GCRequest{OlderThan: older}); err != nil {
		e.t.Fatal(err)
	}
	if hook.before != nil {
		e.t.Fatal("gc did not try to remove the expired record")
	}
	if rec := e.wantState(k, ledger.Succeeded, want); rec.Token == d.Record.Token {
		e.t.Fatal("the record is the one gc listed")
	}
}

func raceOneKey(e *env) {
	k := e.key()
	n := e.caps.Concurrency
	var start, done sync.WaitGroup
	start.Add(1)
	results := make([]ledger.Action, n)
	errs := make([]error, n)
	for i := range n {
		done.Add(1)
		go func() {
			defer done.Done()
			req := e.req(k)
			req.Record.Holder = fmt.Sprintf("worker %d", i)
			start.Wait()
			d, err := ledger.Claim(e.ctx, e.s, req)
			errs[i] = err
			if err == nil {
				results[i] = d.Action
			}
		}()
	}
	start.Done()
	done.Wait()
	runs := 0
	for i := range n {
		if errs[i] != nil {
			e.t.Fatalf("worker %d: %v", i, errs[i])
		}
		switch results[i] {
		case ledger.ActRun:
			runs++
		case ledger.ActBusy:
		default:
			e.t.Fatalf("worker %d: %v, want run or busy", i, results[i])
		}
	}
	if runs != 1 {
		e.t.Fatalf("%d of %d racing claims ran, want exactly 1", runs, n)
	}
	e.wantState(k, ledger.Running, 1)
}

func raceDistinctKeys(e *env) {
	n := 16
	keys := make([]string, n)
	for i := range keys {
		keys[i] = e.key()
	}
	var start, done sync.WaitGroup
	start.Add(1)
	errs := make([]error, n)
	for i := range n {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			d, err := ledger.Claim(e.ctx, e.s, e.req(keys[i]))
			if err == nil && d.Action != ledger.ActRun {
				err = fmt.Errorf("action %v, want run", d.Action)
			}
			if err == nil {
				r := *d.Record
				r.State, r.ExitCode, r.EndedAt = ledger.Succeeded, 0, time.Now()
				_, err = ledger.Complete(e.ctx, e.s, &r)
			}
			errs[i] = err
		}()
	}
	start.Done()
	done.Wait()
	for i, err := range errs {
		if err != nil {
			e.t.Errorf("key %d: %v", i, err)
		}
	}
	for _, k := range keys {
		e.wantState(k, ledger.Succeeded, 1)
	}
}

func leaseExpiresUnknown(e *env) {
	k := e.key()
	req := e.req(k)
	req.Lease = e.caps.ShortLease
	before := time.Now()
	e.claim(req, ledger.ActRun)
	if rec, expired, _ := e.s.Get(e.ctx, k); rec == nil || (rec.LeaseUntil.IsZero() || expired) && e.mustLive(before) {
		e.t.Fatalf("fresh lease: %+v expired %v, want a live lease with lease_until", rec, expired)
	}
	e.waitExpired(k)
	u := e.claim(e.req(k), ledger.ActUnknown)
	if u.Record.Attempt != 1 || !strings.Contains(u.Record.Reason, "lease") {
		e.t.Fatalf("expired lease: %+v", u.Record)
	}
}

func leaseRenewed(e *env) {
	k := e.key()
	req := e.req(k)
	req.Lease = e.caps.ShortLease
	held := e.claim(req, ledger.ActRun).Record
	// Renewed every third of the lease for four leases: never expired.
	// The claim that must find it busy comes right after a renewal, so
	// that a loaded machine's slow round trips do not outlast the lease.
	for range 12 {
		time.Sleep(e.caps.ShortLease / 3)
		before := time.Now()
		if err := ledger.Renew(e.ctx, e.s, held, e.caps.ShortLease); err != nil {
			e.t.Fatalf("renew: %v", err)
		}
		if rec, expired, err := e.s.Get(e.ctx, k); err != nil || rec == nil || expired && e.mustLive(before) {
			e.t.Fatalf("renewed lease expired: %v %v %v", rec, expired, err)
		}
	}
	if err := ledger.Renew(e.ctx, e.s, held, e.caps.ShortLease); err != nil {
		e.t.Fatalf("renew: %v", err)
	}
	e.claim(e.req(k), ledger.ActBusy)
	e.waitExpired(k)
	if err := ledger.Renew(e.ctx, e.s, held, e.caps.ShortLease); err != nil {
		// A renewal after expiry but before a takeover may succeed or
		// not; either is safe. What matters is after a takeover (Fencing).
		if !errors.Is(err, ledger.ErrLeaseLost) {
			e.t.Fatal(err)
		}
	}
}

func leaseTakeoverFences(e *env) {
	k := e.key()
	req := e.req(k)
	req.Lease = e.caps.ShortLease
	first := e.claim(req, ledger.ActRun).Record
	e.waitExpired(k)
	retry := e.req(k)
	retry.Recover = ledger.RecoverRetry
	second := e.claim(retry, ledger.ActRun).Record
	if second.Attempt != 2 {
		e.t.Fatalf("attempt %d, want 2", second.Attempt)
	}
	if err := ledger.Renew(e.ctx, e.s, first, time.Minute); !errors.Is(err, ledger.ErrLeaseLost) {
		e.t.Fatalf("stale renewal: %v", err)
	}
	r := *first
	r.State, r.ExitCode = ledger.Succeeded, 0
	if _, err := ledger.Complete(e.ctx, e.s, &r); !errors.Is(err, ledger.ErrLeaseLost) {
		e.t.Fatalf("stale completion: %v", err)
	}
	rec := e.wantState(k, ledger.Running, 2)
	if rec.Holder != second.Holder {
		e.t.Fatalf("holder %q", rec.Holder)
	}
	// The new attempt has a fresh lease: busy for others.
	e.claim(e.req(k), ledger.ActBusy)
}

func resolveExpiredRunning(e *env) {
	k := e.key()
	req := e.req(k)
	req.Lease = e.caps.ShortLease
	e.claim(req, ledger.ActRun)
	e.waitExpired(k)
	r, err := ledger.Resolve(e.ctx, e.s, ledger.ResolveRequest{Key: k, As: ledger.Succeeded})
	if err != nil {
		e.t.Fatal(err)
	}
	if r.State != ledger.Succeeded {
		e.t.Fatalf("%+v", r)
	}
	e.claim(e.req(k), ledger.ActReplay)
}
