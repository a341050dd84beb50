package ledger

import (
	"context"
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
	// Retain: a finished record older than this is ignored (zero: kept
	// for ever).
	Retain time.Duration
	// Now is the caller's clock, for StartedAt, EndedAt and retention
	// (time.Now if nil). Leases use the store's own clock.
	Now func() time.Time
	// LocallyLocked: the caller holds the key's kernel lock, so a running
	// record has no live holder (stores without leases, on one machine).
	LocallyLocked bool
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

// VersionOf returns rec's version for a compare-and-set.
func VersionOf(rec *Record) Version { return Version{Attempt: rec.Attempt, State: rec.State} }

// Expired reports whether a finished record is older than retain at now:
// its end (or its start, if it has no end) is more than retain ago. A
// running record never expires by retention: its liveness decides.
func Expired(rec *Record, retain time.Duration, now time.Time) bool {
	if retain <= 0 || rec.State == Running {
		return false
	}
	return now.Sub(lastChange(rec)) > retain
}

func lastChange(rec *Record) time.Time {
	if !rec.EndedAt.IsZero() {
		return rec.EndedAt
	}
	return rec.StartedAt
}

// attemptRecord builds the running record of attempt n from the template.
func (req *ClaimRequest) attemptRecord(n int64, now time.Time) *Record {
	t := req.Record
	return &Record{
		Key: t.Key, Task: t.Task, Tool: t.Tool, Kind: t.Kind,
		Fingerprint: t.Fingerprint, Request: t.Request, Holder: t.Holder,
		State: Running, Attempt: n, ExitCode: NoExit, StartedAt: now,
	}
}

// Claim decides what an attempt of a step does with the key, and claims
// the key when it is to run. It is the one place where the rules live:
//
//   - no record, or a finished one older than Retain: claim attempt 1;
//   - another fingerprint: Mismatch;
//   - succeeded: Replay; failed: claim the next attempt, or Replay with
//     ReplayFailed;
//   - running with a live holder: Busy; running without one (its lease ran
//     out, or the caller holds the kernel lock): recorded as unknown, then
//     as unknown;
//   - unknown: Unknown with RecoverFail; the next attempt with RecoverRetry.
//
// Every claim and takeover is a compare-and-set; a lost race re-reads.
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
	ig, _ := s.(InsertGetter)
	for round := range maxRounds {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		now := nowFunc(req.Now)
		var rec *Record
		var expired bool
		var err error
		if ig != nil && round == 0 {
			// Most claims are of a fresh key or a replay: try the insert
			// and read what is there in one go.
			fresh := req.attemptRecord(1, now)
			var inserted bool
			inserted, rec, expired, err = ig.InsertOrGet(ctx, fresh, req.Lease)
			if err != nil {
				return nil, err
			}
			if inserted {
				return &Decision{Action: ActRun, Record: fresh}, nil
			}
			if rec == nil {
				continue
			}
		} else if rec, expired, err = s.Get(ctx, key); err != nil {
			return nil, err
		}
		if rec == nil {
			fresh := req.attemptRecord(1, now)
			ok, err := s.Insert(ctx, fresh, req.Lease)
			if err != nil {
				return nil, err
			}
			if ok {
				return &Decision{Action: ActRun, Record: fresh}, nil
			}
			continue
		}
		if Expired(rec, req.Retain, now) {
			// Ignored: as if there were no record.
			fresh := req.attemptRecord(1, now)
			ok, err := s.Swap(ctx, VersionOf(rec), false, fresh, req.Lease)
			if err != nil {
				return nil, err
			}
			if ok {
				return &Decision{Action: ActRun, Record: fresh}, nil
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
			if d, err := req.takeover(ctx, s, rec, now); d != nil || err != nil {
				return d, err
			}
		case Running:
			if !req.LocallyLocked && !expired {
				return &Decision{Action: ActBusy, Record: rec}, nil
			}
			dead := *rec
			dead.State = Unknown
			dead.EndedAt = now
			dead.LeaseUntil = time.Time{}
			dead.Reason = deadReason(req.LocallyLocked)
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
			if d, err := req.takeover(ctx, s, rec, now); d != nil || err != nil {
				return d, err
			}
		default:
			return nil, fmt.Errorf("ledger: record %s has invalid state %q", key, rec.State)
		}
	}
	return nil, ErrContention
}

// deadReason says how a running record's holder was found dead: its
// kernel lock free (locallyLocked), or its lease run out.
func deadReason(locallyLocked bool) string {
	if locallyLocked {
		return "holder died: its lock was free while the record said running"
	}
	return "holder lost: its lease expired while the record said running"
}

// takeover claims the next attempt over rec; nil, nil if rec changed
// meanwhile.
func (req *ClaimRequest) takeover(ctx context.Context, s Store, rec *Record, now time.Time) (*Decision, error) {
	next := req.attemptRecord(rec.Attempt+1, now)
	ok, err := s.Swap(ctx, VersionOf(rec), false, next, req.Lease)
	if err != nil || !ok {
		return nil, err
	}
	return &Decision{Action: ActRun, Record: next, Previous: rec}, nil
}

// Renew extends the lease of attempt's running record; ErrLeaseLost if the
// record is no longer running at that attempt.
func Renew(ctx context.Context, s Store, key string, attempt int64, lease time.Duration) error {
	ok, err := s.Renew(ctx, key, attempt, lease)
	if err != nil {
		return err
	}
	if !ok {
		return ErrLeaseLost
	}
	return nil
}

// Complete records the outcome of rec's attempt (rec.State succeeded,
// failed or unknown), only if the stored record is still running at
// rec.Attempt: ErrLeaseLost otherwise, and the newer record stays. On a
// LazySwapper the outcome may become durable shortly after it is
// recorded (see LazySwapper for why that is safe).
func Complete(ctx context.Context, s Store, rec *Record) error {
	switch rec.State {
	case Succeeded, Failed, Unknown:
	default:
		return fmt.Errorf("ledger: complete with state %q (want succeeded, failed or unknown)", rec.State)
	}
	r := *rec
	r.LeaseUntil = time.Time{}
	from := Version{Attempt: rec.Attempt, State: Running}
	var ok bool
	var err error
	if ls, lazy := s.(LazySwapper); lazy {
		ok, err = ls.SwapLazy(ctx, from, &r)
	} else {
		ok, err = s.Swap(ctx, from, false, &r, 0)
	}
	if err != nil {
		return err
	}
	if !ok {
		return ErrLeaseLost
	}
	return nil
}

// ResolveRequest settles an unknown step: a person checked the owner.
type ResolveRequest struct {
	Key    string
	As     State // Succeeded or Failed
	Reason string
	Now    func() time.Time
	// LocallyLocked: the caller holds the key's kernel lock, so a running
	// record's holder is dead and the record may be settled.
	LocallyLocked bool
}

// Resolve settles an unknown record as succeeded (later claims replay it)
// or failed (later claims run the next attempt). A running record may be
// settled only when its holder is dead (lease expired, or LocallyLocked);
// ErrBusy otherwise. ErrNotUnknown for a finished record, ErrNotFound
// without one.
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
			if !expired && !req.LocallyLocked {
				return rec, ErrBusy
			}
		default:
			return rec, ErrNotUnknown
		}
		now := nowFunc(req.Now)
		r := *rec
		r.State = req.As
		r.LeaseUntil = time.Time{}
		if r.EndedAt.IsZero() {
			r.EndedAt = now
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
			reason += " (was: " + deadReason(req.LocallyLocked) + ")"
		}
		r.Reason = reason
		ok, err := s.Swap(ctx, VersionOf(rec), rec.State == Running && !req.LocallyLocked, &r, 0)
		if err != nil {
			return nil, err
		}
		if ok {
			return &r, nil
		}
	}
	return nil, ErrContention
}

// Forget removes the key's record, so that the next claim runs the step
// as attempt 1. A running record with a live holder is not removed
// (ErrBusy): its holder would otherwise complete a newer attempt's record.
// It reports false, and no error, when there was no record.
func Forget(ctx context.Context, s Store, key string, locallyLocked bool) (bool, error) {
	for range maxRounds {
		rec, expired, err := s.Get(ctx, key)
		if err != nil {
			return false, err
		}
		if rec == nil {
			return false, nil
		}
		if rec.State == Running && !expired && !locallyLocked {
			return false, ErrBusy
		}
		v := VersionOf(rec)
		ok, err := s.Delete(ctx, key, &v)
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
	// OlderThan: records whose last change (end, or start) is older are
	// removed.
	OlderThan time.Duration
	Now       func() time.Time
	// RunningRemovable is asked about an old running record; it is
	// removed only if this reports true (its holder is known dead) and,
	// on a store with leases, only if its lease has still run out when
	// the store removes it (Delete checks it atomically). Nil: running
	// records are kept.
	RunningRemovable func(ctx context.Context, rec *Record) bool
}

// GC removes the records older than req.OlderThan and returns how many it
// removed. A record that changed since it was listed stays.
func GC(ctx context.Context, s Store, req GCRequest) (int, error) {
	recs, err := s.List(ctx, Filter{})
	if err != nil {
		return 0, err
	}
	now := nowFunc(req.Now)
	n := 0
	for _, rec := range recs {
		if now.Sub(lastChange(rec)) <= req.OlderThan {
			continue
		}
		if rec.State == Running && (req.RunningRemovable == nil || !req.RunningRemovable(ctx, rec)) {
			continue
		}
		v := VersionOf(rec)
		v.StartedAt = rec.StartedAt // this record, not a later claim at its attempt
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
