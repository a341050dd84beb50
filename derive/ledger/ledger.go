// Package ledger records, per idempotency key, whether a step started,
// succeeded, failed or ended with an unknown outcome, so that a retried
// step is replayed instead of repeated, and a crash is never mistaken for
// success or for a clean retry.
//
// The rules (claim, renew, complete, resolve, takeover) are written once
// here; a Store is a thin translation of a few atomic primitives into its
// own (SQLite's BEGIN IMMEDIATE and INSERT … ON CONFLICT, PostgreSQL's
// INSERT … ON CONFLICT and UPDATE … WHERE, Redis's Lua scripts). Every
// store passes the scenarios in package ledgertest.
//
// This package imports no os and no command-line package.
package ledger

import (
	"context"
	"errors"
	"time"
)

// State is the state of a key's record.
type State string

const (
	// Running: an attempt claimed the key and has not recorded an outcome.
	Running State = "running"
	// Succeeded: the attempt's command exited 0 (or, for post, its final
	// response was saved).
	Succeeded State = "succeeded"
	// Failed: the attempt ended with another exit code.
	Failed State = "failed"
	// Unknown: the attempt ended with no recorded outcome (the holder or
	// the machine died, its lease expired, or the command was killed by a
	// signal).
	Unknown State = "unknown"
)

// Valid reports whether s is one of the four states.
func (s State) Valid() bool {
	switch s {
	case Running, Succeeded, Failed, Unknown:
		return true
	}
	return false
}

// Record is what a ledger keeps for one key.
type Record struct {
	Key         string `json:"key"`
	Task        string `json:"task"`
	Tool        string `json:"tool"`
	Kind        string `json:"kind"`        // "run" or "post"
	Fingerprint string `json:"fingerprint"` // hex sha256 of what must match for a replay
	// Request is what the fingerprint was computed from (the canonical
	// arguments and the command line, or the request), so that a
	// mismatch can be shown as a diff.
	Request []byte `json:"-"`

	State   State `json:"state"`
	Attempt int64 `json:"attempt"` // 1, 2, …; every claim and takeover adds one, and never goes back for a key
	// Token is the attempt's claim token: 128 random bits in hex, new for
	// every claim and takeover (never for a record's later writes). Every
	// renewal, completion, takeover, resolution and removal compares it,
	// so a paused holder never matches a newer claim, even one at the same
	// attempt number (after the record was removed, expired or lost with
	// the store's data). Empty in a record written before tokens were
	// kept; such a record is fenced by its attempt and state, as before.
	Token string `json:"token,omitempty"`

	Holder   string `json:"holder,omitempty"` // host and pid of the attempt
	ExitCode int    `json:"exit_code"`        // the command's exit code, 128+N for signal N, NoExit (-1) if none
	Reason   string `json:"reason,omitempty"` // how an unknown or resolved attempt ended, in words

	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	// LeaseUntil is when a running attempt's lease runs out, on the
	// store's clock (zero for stores whose liveness is a kernel lock).
	LeaseUntil time.Time `json:"lease_until,omitzero"`
	// StoredAt is when the store last wrote the record, on the store's
	// own clock (PostgreSQL's now(), Redis's TIME; zero for a store
	// without one, and for a record written before it was kept), and
	// ReadAt when this copy was read, on the same clock: retention is
	// judged on them where they are set (see Age), never on a worker's
	// clock. Both are set by the store, never by the caller.
	StoredAt time.Time `json:"-"`
	ReadAt   time.Time `json:"-"`

	Stdout Output `json:"stdout"`
	Stderr Output `json:"stderr"`
	// Meta holds a kind's own saved result (for post: the status line and
	// headers), opaque to the ledger.
	Meta []byte `json:"-"`
}

// Output is a recorded stream: its first bytes up to the cap, its full
// length and the sha256 of all of it.
type Output struct {
	Data      []byte `json:"-"`
	Length    int64  `json:"length"`
	SHA256    string `json:"sha256"`
	Truncated bool   `json:"truncated"`
}

// Version identifies one state of a record for a compare-and-set: the
// swap happens only if the stored record still has this attempt, state
// and token (an empty token matches only a record without one: a record
// written before tokens were kept).
type Version struct {
	Attempt int64
	State   State
	Token   string
}

// Filter selects records for List; zero fields match everything.
type Filter struct {
	Task  string
	Tool  string
	State State
}

// Store is the persistence a ledger needs. Each method is atomic on its
// own; the rules in this package combine them. Implementations translate
// each into their store's primitive and add nothing of their own.
//
// Times: a store that has its own clock (PostgreSQL's now(), Redis's
// TIME) uses it for LeaseUntil and for Expired; lease durations are
// passed, never deadlines computed on the worker.
type Store interface {
	// Get returns the key's record, or nil and no error when there is
	// none. expired reports whether a running record's lease has run out
	// on the store's clock (always false for stores without leases).
	Get(ctx context.Context, key string) (rec *Record, expired bool, err error)
	// Insert stores rec if the key has no record and reports whether it
	// did. A running rec gets LeaseUntil = store now + lease. The attempt
	// stored is the larger of rec.Attempt and one more than the key's
	// high-water mark, and Insert sets rec.Attempt to it: the store keeps,
	// per key, a mark of the highest attempt it has had that outlives the
	// record (kept when the record is deleted, or expires by a store's
	// own ttl), so that attempt numbers never go back for a key. Losing
	// the mark with the store's data (TRUNCATE, FLUSHALL) is allowed: the
	// token still fences.
	Insert(ctx context.Context, rec *Record, lease time.Duration) (bool, error)
	// Swap replaces the key's record by rec if the stored one still has
	// version from (and, when needExpired is set, a lease that has run
	// out on the store's clock), and reports whether it did. A running
	// rec gets LeaseUntil = store now + lease.
	Swap(ctx context.Context, from Version, needExpired bool, rec *Record, lease time.Duration) (bool, error)
	// Renew sets the lease of the key's record to store now + lease if
	// the stored record still has version from (always a running one),
	// and reports whether it did. A lease of zero or less ends the lease
	// at once (Release): the record then reads as expired.
	Renew(ctx context.Context, key string, from Version, lease time.Duration) (bool, error)
	// List returns the records that match f, without their outputs' data;
	// a store with leases sets each running record's LeaseUntil and every
	// record's ReadAt, so that LeaseExpired tells an expired lease.
	List(ctx context.Context, f Filter) ([]*Record, error)
	// Delete removes the key's record and reports whether it did. With
	// from set, only if the stored record still has that version (so that
	// gc and forget never remove a record that changed since it was read)
	// and, on a store with leases, when that version is running, only if
	// its lease has run out on the store's clock, checked in the same
	// atomic step: a holder that renewed after the caller saw its lease
	// expired keeps its record. With from nil, whatever it holds.
	Delete(ctx context.Context, key string, from *Version) (bool, error)
	// Close releases the store's resources.
	Close() error
}

// InsertGetter is implemented by stores that can insert a record in one
// round trip and, only when the key has one already, read it on the spot
// (PostgreSQL: INSERT … ON CONFLICT DO NOTHING, then the read on the same
// connection; Redis: one script that does both). Claim then starts with
// it instead of a Get followed by an Insert: a fresh key costs one round
// trip instead of two.
type InsertGetter interface {
	// InsertOrGet stores rec if the key has no record, as Insert does
	// (rec.Attempt included), and reports inserted. Otherwise it returns the stored record and
	// whether its lease ran out, as Get does; stored may be nil when the
	// conflicting record is not visible yet (or was removed meanwhile),
	// and the caller reads again.
	InsertOrGet(ctx context.Context, rec *Record, lease time.Duration) (inserted bool, stored *Record, expired bool, err error)
}

// LazySwapper is implemented by stores that can make a Swap visible at
// once and durable a little later: SQLite commits that one transaction
// with synchronous=NORMAL (no fdatasync of the WAL), PostgreSQL with
// synchronous_commit off (no wait for the WAL flush). Complete, and
// nothing else, uses it.
//
// That is safe for a completion, and only for it, because the claim before
// it was durable. A completion lost in a crash of the machine (or of the
// store's server) leaves the attempt's record running with a dead holder:
// its kernel lock is free, or its lease runs out. The next claim reads it
// as unknown, which is what the crash made it, and follows its recovery
// policy: the step is never repeated silently and never reported as
// succeeded when it was not; at worst a person settles it (resolve). The
// next durable write to the store makes every earlier one durable too.
// Claims, takeovers, renewals, resolutions and removals stay durable.
type LazySwapper interface {
	// SwapLazy is Swap(ctx, from, false, rec, 0) whose durability may lag
	// its visibility.
	SwapLazy(ctx context.Context, from Version, rec *Record) (bool, error)
}

// Waiter is implemented by stores that can say when a key's record may
// have changed (PostgreSQL's LISTEN/NOTIFY). Wait blocks until then, or
// until ctx ends; a spurious return is allowed. Callers of stores without
// it poll with backoff. Only changes of a stored record need to wake it
// (Swap, Delete): callers wait on a record they saw running, never on a
// missing one, so an Insert need not.
type Waiter interface {
	Wait(ctx context.Context, key string) error
}

// Checkpointer is implemented by stores that keep committed records in a
// log beside their file until a checkpoint copies them into it (SQLite's
// WAL): Checkpoint copies every committed record into the database file
// and empties the log, so that the file alone holds the ledger (a copy of
// it is complete). `ledger gc` and `ledger init` call it.
type Checkpointer interface {
	Checkpoint(ctx context.Context) error
}

// ErrTooLarge is what a store's error for a write refused for its size
// wraps (errors.Is): SQLite's SQLITE_FULL and SQLITE_TOOBIG, PostgreSQL's
// disk_full, out_of_memory and program_limit_exceeded, Redis's OOM under
// maxmemory. Complete then stores the outcome without the outputs' bytes.
var ErrTooLarge = errors.New("the store refused the write for its size")

// TooLarge returns err marked as a write refused for its size: errors.Is
// reports it as ErrTooLarge, and its text is err's.
func TooLarge(err error) error { return &tooLarge{err} }

type tooLarge struct{ err error }

func (e *tooLarge) Error() string        { return e.err.Error() }
func (e *tooLarge) Unwrap() error        { return e.err }
func (e *tooLarge) Is(target error) bool { return target == ErrTooLarge }

// Errors the rules return.
var (
	// ErrLeaseLost: a renewal or completion found the key's record held
	// by another attempt (another token: a takeover, or a claim after the
	// record was removed). The holder must not overwrite that record.
	// ErrRecordGone and ErrAttemptEnded are lease losses too (errors.Is
	// reports them as ErrLeaseLost), with their own words; a store's
	// error (unreachable, refused) is passed through as it is, and is not
	// a lease loss.
	ErrLeaseLost = errors.New("lease lost: a newer attempt holds the key")
	// ErrRecordGone: the key has no record any more (forgotten, collected
	// by gc, expired by the store's ttl, or lost with the store's data).
	ErrRecordGone error = &leaseLost{"lease lost: the key's record is gone (forgotten, collected by gc, expired by the store's ttl, or lost with the store's data)"}
	// ErrAttemptEnded: the key's record is still this attempt's, but no
	// longer running: another worker found its lease expired and recorded
	// it as unknown, or a person resolved it.
	ErrAttemptEnded error = &leaseLost{"lease lost: the attempt was recorded as ended by another worker (its lease expired) or resolved by a person"}
	// ErrNotDurable: a claim the store could not make durable (a Redis
	// primary's replicas did not acknowledge it in time). The store
	// withdrew it, and the step must not start; its caller reports the
	// key as busy (exit 75 in run): a later try may succeed.
	ErrNotDurable = errors.New("the claim could not be made durable")
	// ErrNotFound: no record for the key.
	ErrNotFound = errors.New("no record for this key")
)

// leaseLost is a lease loss with its own words.
type leaseLost struct{ msg string }

func (e *leaseLost) Error() string        { return e.msg }
func (e *leaseLost) Is(target error) bool { return target == ErrLeaseLost }

// HolderName is a recorded holder as a person reads it: "HOST pid PID",
// without the process group, start time and boot id that a holder check
// reads back (see sqlite.Holder). Any other text is returned whole.
func HolderName(holder string) string {
	// "HOST pid PID pgid …": cut before the fourth word.
	words, i := 0, 0
	for i < len(holder) {
		for i < len(holder) && holder[i] == ' ' {
			i++
		}
		if i == len(holder) {
			break
		}
		if words == 3 {
			if j := i; len(holder) > j+5 && holder[j:j+5] == "pgid " {
				return holder[:i-1]
			}
			return holder
		}
		for i < len(holder) && holder[i] != ' ' {
			i++
		}
		words++
	}
	return holder
}
