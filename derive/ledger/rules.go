package ledger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// NoExit is the ExitCode of a record that has no exit code: a running
// attempt, or one whose holder died before the command's end was seen.
const NoExit = -1

// Policy says what a claim does with a key whose last attempt has an
// unknown outcome.
type Policy string

const (
	// RecoverFail stops: the step is reported as unknown (exit 76) until
	// a person settles it with Resolve.
	RecoverFail Policy = "fail"
	// RecoverRetry runs the step again as the next attempt with the same
	// key: for steps whose owner dedupes by that key.
	RecoverRetry Policy = "retry"
)

// Valid reports whether p is one of the two policies.
func (p Policy) Valid() bool { return p == RecoverFail || p == RecoverRetry }

// Action is what a claim decided.
type Action int

const (
	// ActRun: the caller holds the key as Decision.Record.Attempt and must
	// run the step, then Complete it.
	ActRun Action = iota + 1
	// ActReplay: the step succeeded (or failed, with ReplayFailed): replay
	// Decision.Record.
	ActReplay
	// ActBusy: another attempt is running with a live holder.
	ActBusy
	// ActUnknown: the last attempt's outcome is unknown and the policy is
	// RecoverFail.
	ActUnknown
	// ActMismatch: the key's record has another fingerprint.
	ActMismatch
)

func (a Action) String() string {
	switch a {
	case ActRun:
		return "run"
	case ActReplay:
		return "replay"
	case ActBusy:
		return "busy"
	case ActUnknown:
		return "unknown"
	case ActMismatch:
		return "mismatch"
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// ClaimRequest is a claim of a key for one attempt of a step.
type ClaimRequest struct {
	// Record is the template of the attempt's record: Key, Task, Tool,
	// Kind, Fingerprint, Request and Holder are used; the rest is set by
	// the claim.
	Record Record
	// Lease is the running attempt's lease on lease stores.
	Lease time.Duration
	// Recover is the policy for an unknown outcome (RecoverFail if empty).
	Recover Policy
	// ReplayFailed replays a failed attempt instead of running again.
	ReplayFailed bool
	// Retain: a succeeded or failed record older than this is ignored
	// (zero: kept for ever); see Expired. An unknown or running record is
	// never ignored.
	Retain time.Duration
	// Now is the caller's clock, for StartedAt and EndedAt, and for
	// retention on a store without a clock of its own (time.Now if nil).
	// Leases, and retention where the store reports its clock, use the
	// store's.
	Now func() time.Time
	// LocallyLocked: the caller holds the key's kernel lock, so a running
	// record has no live holder (stores without leases, on one machine),
	// unless HolderAlive says otherwise.
	LocallyLocked bool
	// HolderAlive, if set, is asked before a running record whose kernel
	// lock is free (LocallyLocked) is declared dead: true means its
	// holder is alive after all (the recorded process still runs; its
	// lock was lost by accident), and the record is Busy. Nil: no check.
	HolderAlive HolderCheck
}

// HolderCheck reports whether the holder recorded in rec is alive, by a
// means other than the kernel lock (the recorded process and its start
// time).
type HolderCheck func(rec *Record) bool

// dead reports whether a running record's holder is dead: its lease ran
// out on the store's clock (expired), or its kernel lock is free
// (locallyLocked) and alive, if set, does not vouch for it.
func (alive HolderCheck) dead(rec *Record, expired, locallyLocked bool) bool {
	if expired {
		return true
	}
	return locallyLocked && (alive == nil || !alive(rec))
}

// Decision is the outcome of a claim.
type Decision struct {
	Action Action
	// Record is the key's record: the caller's new running attempt for
	// Run, the stored record otherwise.
	Record *Record
	// Previous is, for Run, the record the attempt took over (nil for a
	// first attempt); for Unknown, the record as it was when its holder
	// was found dead (nil if it was already unknown).
	Previous *Record
}

// maxRounds bounds the re-reads of a claim that lost races: each lost
// race means another caller moved the record forward.
const maxRounds = 64

// ErrContention: a claim lost every race it ran.
var ErrContention = errors.New("ledger: the key's record changed too often to claim it")

// Errors of Resolve and Forget.
var (
	// ErrBusy: the key's attempt is running with a live holder.
	ErrBusy = errors.New("the key's step is running")
	// ErrNotUnknown: Resolve of a record whose outcome is known.
	ErrNotUnknown = errors.New("the key's outcome is not unknown")
)

func nowFunc(f func() time.Time) time.Time {
	if f == nil {
		return time.Now()
	}
	return f()
}

// NewToken returns a fresh claim token: 128 bits from crypto/rand, in
// hex. It never repeats in practice, which is what fencing needs: a
// paused holder's token matches no later claim of its key.
func NewToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b[:])
}

// VersionOf returns rec's version for a compare-and-set.
func VersionOf(rec *Record) Version {
	return Version{Attempt: rec.Attempt, State: rec.State, Token: rec.Token}
}

// running is the version of rec's attempt while it runs: what its holder's
// renewals and completion must still find.
func running(rec *Record) Version {
	return Version{Attempt: rec.Attempt, State: Running, Token: rec.Token}
}

// Age is how long ago rec last changed. On a store with its own clock
// (rec.StoredAt and rec.ReadAt set), it is measured on that clock alone:
// the time between the store's last write of the record and its read, so
// that no worker's clock (one 8 days slow or fast) ages a record. Without
// them (SQLite; a record written before StoredAt was kept), it is now
// minus the record's end (or start, if it has none).
func Age(rec *Record, now time.Time) time.Duration {
	if !rec.StoredAt.IsZero() && !rec.ReadAt.IsZero() {
		return rec.ReadAt.Sub(rec.StoredAt)
	}
	return now.Sub(lastChange(rec))
}

// Expired reports whether a succeeded or failed record is older than
// retain (see Age for whose clock): a claim then ignores it and runs the
// step as the key's next attempt. An unknown or running record never
// expires: an unknown outcome waits for a person (resolve, forget), and a
// running record's liveness decides.
func Expired(rec *Record, retain time.Duration, now time.Time) bool {
	if retain <= 0 || (rec.State != Succeeded && rec.State != Failed) {
		return false
	}
	return Age(rec, now) > retain
}

// LeaseExpired reports whether a running record, as a store with leases
// read it (its ReadAt set), has a lease that ran out on the store's clock
// (the expired of Get, for records from List).
func LeaseExpired(rec *Record) bool {
	return rec.State == Running && !rec.LeaseUntil.IsZero() && !rec.ReadAt.IsZero() && !rec.ReadAt.Before(rec.LeaseUntil)
}

// Effective returns the record as the next claim would see it: a running
// record whose lease expired (expired), or whose holder is known dead
// (holderDead: its kernel lock is free and no other check vouches for
// it), is a copy that reads unknown, with how it ended in Reason; any
// other record is rec itself. For `ledger ls` and `show`.
func Effective(rec *Record, expired, holderDead bool) *Record {
	if rec == nil || rec.State != Running || !expired && !holderDead {
		return rec
	}
	r := *rec
	r.State = Unknown
	r.Reason = deadReason(!expired)
	return &r
}

func lastChange(rec *Record) time.Time {
	if !rec.EndedAt.IsZero() {
		return rec.EndedAt
	}
	return rec.StartedAt
}

// attemptRecord builds the running record of attempt n from the template,
// with a fresh token.
func (req *ClaimRequest) attemptRecord(n int64, now time.Time) *Record {
	t := req.Record
	return &Record{
		Key: t.Key, Task: t.Task, Tool: t.Tool, Kind: t.Kind,
		Fingerprint: t.Fingerprint, Request: t.Request, Holder: t.Holder,
		State: Running, Attempt: n, Token: NewToken(), ExitCode: NoExit, StartedAt: now,
	}
}

// Claim decides what an attempt of a step does with the key, and claims
// the key when it is to run. It is the one place where the rules live:
//
//   - no record: claim the key's next attempt (1, or one more than the
//     highest it had: attempt numbers never go back);
//   - a succeeded or failed record older than Retain: ignored, as if
//     there were none (the next attempt);
//   - another fingerprint: Mismatch;
//   - succeeded: Replay; failed: claim the next attempt, or Replay with
//     ReplayFailed;
//   - running with a live holder: Busy; running without one (its lease ran
//     out, or the caller holds the kernel lock and HolderAlive does not
//     vouch for the holder): recorded as unknown, then as unknown;
//   - unknown: Unknown with RecoverFail; the next attempt with RecoverRetry.
//
// Every claim and takeover is a compare-and-set on the stored record's
// attempt, state and token, and writes a fresh token; a lost race
// re-reads.
func Claim(ctx context.Context, s Store, req ClaimRequest) (*Decision, error) {
	key := req.Record.Key
	if key == "" {
		return nil, errors.New("ledger: claim without a key")
	}
	policy := req.Recover
	if policy == "" {
		policy = RecoverFail
	}
	if !policy.Valid() {
		return nil, fmt.Errorf("ledger: invalid recovery policy %q", policy)
	}
	var died *Record // the running record this claim found dead
	for round := range maxRounds {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		now := nowFunc(req.Now)
		rec, expired, d, err := req.read(ctx, s, round, now)
		if d != nil || err != nil {
			return d, err
		}
		if rec == nil {
			continue
		}
		if Expired(rec, req.Retain, now) {
			// Ignored: as if there were no record.
			if d, err := req.next(ctx, s, rec, nil, now); d != nil || err != nil {
				return d, err
			}
			continue
		}
		if rec.Fingerprint != req.Record.Fingerprint {
			return &Decision{Action: ActMismatch, Record: rec}, nil
		}
		switch rec.State {
		case Succeeded:
			return &Decision{Action: ActReplay, Record: rec}, nil
		case Failed:
			if req.ReplayFailed {
				return &Decision{Action: ActReplay, Record: rec}, nil
			}
			if d, err := req.next(ctx, s, rec, rec, now); d != nil || err != nil {
				return d, err
			}
		case Running:
			if !req.HolderAlive.dead(rec, expired, req.LocallyLocked) {
				return &Decision{Action: ActBusy, Record: rec}, nil
			}
			dead := *rec
			dead.State = Unknown
			dead.EndedAt = now
			dead.LeaseUntil = time.Time{}
			dead.Reason = deadReason(req.LocallyLocked && !expired)
			ok, err := s.Swap(ctx, VersionOf(rec), !req.LocallyLocked, &dead, 0)
			if err != nil {
				return nil, err
			}
			if ok {
				r := *rec
				died = &r
			}
		case Unknown:
			if policy == RecoverFail {
				return &Decision{Action: ActUnknown, Record: rec, Previous: died}, nil
			}
			if d, err := req.next(ctx, s, rec, rec, now); d != nil || err != nil {
				return d, err
			}
		default:
			return nil, fmt.Errorf("ledger: record %s has invalid state %q", key, rec.State)
		}
	}
	return nil, ErrContention
}

// read returns the key's record (and whether its lease ran out), or, when
// the key had none, the decision of the insert that claimed it; nothing
// at all when the insert lost a race (read again). Most claims are of a
// fresh key or a replay: on an InsertGetter the first round tries the
// insert and reads what is there in one go.
func (req *ClaimRequest) read(ctx context.Context, s Store, round int, now time.Time) (*Record, bool, *Decision, error) {
	if ig, ok := s.(InsertGetter); ok && round == 0 {
		fresh := req.attemptRecord(1, now)
		inserted, rec, expired, err := ig.InsertOrGet(ctx, fresh, req.Lease)
		if err != nil {
			return nil, false, nil, err
		}
		if inserted {
			return nil, false, &Decision{Action: ActRun, Record: fresh}, nil
		}
		return rec, expired, nil, nil
	}
	rec, expired, err := s.Get(ctx, req.Record.Key)
	if err != nil || rec != nil {
		return rec, expired, nil, err
	}
	fresh := req.attemptRecord(1, now)
	ok, err := s.Insert(ctx, fresh, req.Lease)
	if err != nil {
		return nil, false, nil, err
	}
	if ok {
		return nil, false, &Decision{Action: ActRun, Record: fresh}, nil
	}
	return nil, false, nil, nil
}

// deadReason says how a running record's holder was found dead: its
// kernel lock free (lockFree), or its lease run out.
func deadReason(lockFree bool) string {
	if lockFree {
		return "holder died: its lock was free while the record said running"
	}
	return "holder lost: its lease expired while the record said running"
}

// next claims the next attempt over rec, with a fresh token (prev is the
// decision's Previous); nil, nil if rec changed meanwhile.
func (req *ClaimRequest) next(ctx context.Context, s Store, rec, prev *Record, now time.Time) (*Decision, error) {
	n := req.attemptRecord(rec.Attempt+1, now)
	ok, err := s.Swap(ctx, VersionOf(rec), false, n, req.Lease)
	if err != nil || !ok {
		return nil, err
	}
	return &Decision{Action: ActRun, Record: n, Previous: prev}, nil
}

// Renew extends the lease of rec's attempt (rec as its claim returned it)
// while it runs: ErrLeaseLost, ErrRecordGone or ErrAttemptEnded when the
// stored record is no longer that attempt's running record (its token
// compared), and a store's error as it is.
func Renew(ctx context.Context, s Store, rec *Record, lease time.Duration) error {
	ok, err := s.Renew(ctx, rec.Key, running(rec), lease)
	if err != nil {
		return err
	}
	if !ok {
		return lost(ctx, s, rec)
	}
	return nil
}

// Release ends the lease of rec's running attempt at once, on the store's
// clock, fenced by its token: for a holder that exits without a recorded
// outcome (its completion failed), so that the next claim finds the
// holder dead (unknown) at once instead of busy for the rest of the lease.
// On a store without leases it only checks the record (the kernel lock
// ends with the holder). It reports the same errors as Renew.
func Release(ctx context.Context, s Store, rec *Record) error {
	return Renew(ctx, s, rec, 0)
}

// lost says why rec's attempt no longer matches the stored record.
func lost(ctx context.Context, s Store, rec *Record) error {
	cur, _, err := s.Get(ctx, rec.Key)
	switch {
	case err != nil:
		return fmt.Errorf("%w (reading the key's record to say more: %v)", ErrLeaseLost, err)
	case cur == nil:
		return ErrRecordGone
	case cur.Token == rec.Token && cur.Attempt == rec.Attempt && cur.State != Running:
		return ErrAttemptEnded
	}
	return ErrLeaseLost
}

// Completion reports how Complete recorded an outcome.
type Completion struct {
	// OutputsDropped: the store refused the record for its size
	// (ErrTooLarge), and the outcome was recorded without the outputs'
	// bytes: their lengths and sha256 are kept and Truncated is set, so a
	// replay returns no output. The caller says so.
	OutputsDropped bool
	// Cause is the store's error for the full record (OutputsDropped).
	Cause error
}

// Complete records the outcome of rec's attempt (rec.State succeeded,
// failed or unknown), only if the stored record is still running at
// rec's attempt and token: ErrLeaseLost (ErrRecordGone, ErrAttemptEnded)
// otherwise, and the newer record stays. When the store refuses the
// record for its size (ErrTooLarge), the outcome is recorded again
// without the outputs' bytes, and Completion says so. On a LazySwapper the
// outcome may become durable shortly after it is recorded (see
// LazySwapper for why that is safe).
func Complete(ctx context.Context, s Store, rec *Record) (Completion, error) {
	switch rec.State {
	case Succeeded, Failed, Unknown:
	default:
		return Completion{}, fmt.Errorf("ledger: complete with state %q (want succeeded, failed or unknown)", rec.State)
	}
	r := *rec
	r.LeaseUntil = time.Time{}
	var c Completion
	ok, err := swapOutcome(ctx, s, &r)
	if errors.Is(err, ErrTooLarge) && (len(r.Stdout.Data) > 0 || len(r.Stderr.Data) > 0) {
		c = Completion{OutputsDropped: true, Cause: err}
		r.Stdout = dropData(r.Stdout)
		r.Stderr = dropData(r.Stderr)
		ok, err = swapOutcome(ctx, s, &r)
	}
	if err != nil {
		return Completion{}, err
	}
	if !ok {
		return Completion{}, lost(ctx, s, rec)
	}
	return c, nil
}

func swapOutcome(ctx context.Context, s Store, r *Record) (bool, error) {
	if ls, lazy := s.(LazySwapper); lazy {
		return ls.SwapLazy(ctx, running(r), r)
	}
	return s.Swap(ctx, running(r), false, r, 0)
}

// dropData is o without its bytes: its length and sha256 stay, and it is
// marked truncated.
func dropData(o Output) Output {
	o.Data = nil
	o.Truncated = true
	return o
}

// ResolveRequest settles an unknown step: a person checked the owner.
type ResolveRequest struct {
	Key    string
	As     State // Succeeded or Failed
	Reason string
	Now    func() time.Time
	// LocallyLocked: the caller holds the key's kernel lock, so a running
	// record's holder is dead and the record may be settled, unless
	// HolderAlive vouches for it (as in ClaimRequest).
	LocallyLocked bool
	HolderAlive   HolderCheck
}

// Resolve settles an unknown record as succeeded (later claims replay it)
// or failed (later claims run the next attempt). A running record may be
// settled only when its holder is dead (lease expired, or LocallyLocked
// and HolderAlive does not vouch for it); ErrBusy otherwise. ErrNotUnknown
// for a finished record, ErrNotFound without one.
func Resolve(ctx context.Context, s Store, req ResolveRequest) (*Record, error) {
	if req.As != Succeeded && req.As != Failed {
		return nil, fmt.Errorf("ledger: resolve as %q (want succeeded or failed)", req.As)
	}
	for range maxRounds {
		rec, expired, err := s.Get(ctx, req.Key)
		if err != nil {
			return nil, err
		}
		if rec == nil {
			return nil, ErrNotFound
		}
		switch rec.State {
		case Unknown:
		case Running:
			if !req.HolderAlive.dead(rec, expired, req.LocallyLocked) {
				return rec, ErrBusy
			}
		default:
			return rec, ErrNotUnknown
		}
		r := resolved(rec, req, expired)
		ok, err := s.Swap(ctx, VersionOf(rec), rec.State == Running && !req.LocallyLocked, r, 0)
		if err != nil {
			return nil, err
		}
		if ok {
			return r, nil
		}
	}
	return nil, ErrContention
}

// resolved is rec settled as req says.
func resolved(rec *Record, req ResolveRequest, expired bool) *Record {
	r := *rec
	r.State = req.As
	r.LeaseUntil = time.Time{}
	if r.EndedAt.IsZero() {
		r.EndedAt = nowFunc(req.Now)
	}
	switch {
	case req.As == Succeeded:
		r.ExitCode = 0
	case r.ExitCode <= 0:
		r.ExitCode = 1
	}
	reason := "resolved as " + string(req.As)
	if req.Reason != "" {
		reason += ": " + req.Reason
	}
	switch {
	case rec.Reason != "":
		reason += " (was: " + rec.Reason + ")"
	case rec.State == Running:
		// Settled straight from running: keep how it ended, as a
		// claim that found it dead would.
		reason += " (was: " + deadReason(req.LocallyLocked && !expired) + ")"
	}
	r.Reason = reason
	return &r
}

// ForgetRequest removes one key's record.
type ForgetRequest struct {
	Key string
	// LocallyLocked and HolderAlive: as in ClaimRequest.
	LocallyLocked bool
	HolderAlive   HolderCheck
}

// Forget removes the key's record, so that the next claim runs the step
// again, as the key's next attempt (the store's high-water mark keeps the
// attempt number going up). A running record with a live holder is not
// removed (ErrBusy). It reports false, and no error, when there was no
// record.
func Forget(ctx context.Context, s Store, req ForgetRequest) (bool, error) {
	for range maxRounds {
		rec, expired, err := s.Get(ctx, req.Key)
		if err != nil {
			return false, err
		}
		if rec == nil {
			return false, nil
		}
		if rec.State == Running && !req.HolderAlive.dead(rec, expired, req.LocallyLocked) {
			return false, ErrBusy
		}
		v := VersionOf(rec)
		ok, err := s.Delete(ctx, req.Key, &v)
		if err != nil {
			return false, err
		}
		if ok {
			return true, nil
		}
	}
	return false, ErrContention
}

// GCRequest removes old records.
type GCRequest struct {
	// OlderThan: succeeded and failed records whose Age is more are
	// removed.
	OlderThan time.Duration
	Now       func() time.Time
}

// GC removes the succeeded and failed records older than req.OlderThan
// (see Age for whose clock) and returns how many it removed. An unknown
// or running record is never removed, whatever its age: its outcome is
// for a person to settle (resolve, forget), and removing it would let the
// next run repeat a step that may have happened. A record that changed
// since it was listed stays (its version, token included, is compared).
func GC(ctx context.Context, s Store, req GCRequest) (int, error) {
	recs, err := s.List(ctx, Filter{})
	if err != nil {
		return 0, err
	}
	now := nowFunc(req.Now)
	n := 0
	for _, rec := range recs {
		if rec.State != Succeeded && rec.State != Failed || Age(rec, now) <= req.OlderThan {
			continue
		}
		v := VersionOf(rec)
		ok, err := s.Delete(ctx, rec.Key, &v)
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}
