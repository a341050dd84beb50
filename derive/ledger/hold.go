package ledger

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"
)

// hold.go is the one claim / wait / renew / complete loop: run,
// post --ledger and mcp hold a key through it, so that what one of them
// does with a busy key, a lease or a failed completion, all of them do.
// It adds no rule of its own: the decisions are Claim's; this is the
// sequence around them (a kernel lock where the store has one, the wait
// for a busy key, the renewal, the completion and what follows a failed
// one, and the reconcile of an unknown outcome).

// KeyLocker is a store whose liveness is a kernel lock per key (SQLite on
// one machine). TryLock takes the key's lock without waiting and returns
// it, or nil and no error when another process holds it. The lock is held
// until the returned closer is closed (and, for a lock a child process
// inherits, until that child exits too).
type KeyLocker interface {
	TryLock(key string) (io.Closer, error)
}

// Verdict is what a reconcile found out about an unknown attempt's effect.
type Verdict int

const (
	// Undecided: the owner could not tell (the reconcile exited with
	// another code, timed out, or was killed): the outcome stays unknown
	// and the recovery policy decides.
	Undecided Verdict = iota
	// Happened: the effect happened; the record becomes succeeded and the
	// step is replayed from the reconcile's output.
	Happened
	// NotHappened: the effect did not happen; the record becomes failed
	// and the step runs as the next attempt with the same key.
	NotHappened
)

func (v Verdict) String() string {
	switch v {
	case Happened:
		return "happened"
	case NotHappened:
		return "not happened"
	}
	return "undecided"
}

// Reconciliation is a Reconciler's answer.
type Reconciliation struct {
	Verdict Verdict
	// Output is, for Happened, what a replay of the step returns (run: its
	// standard output; post: the response body; mcp: the tool's result).
	Output Output
	// Meta is, for Happened, the kind's own saved result (see Record.Meta).
	Meta []byte
	// Note says in words what the owner answered (the reconcile command's
	// standard error) or why it could not tell ("exit status 2", "timed
	// out after 30s", "killed by signal 9").
	Note string
	// Duplicated, with Happened: the effect happened more than once. The
	// record is settled as succeeded all the same (a rerun would add one
	// more), its reason says duplicated, and the faces warn.
	Duplicated bool
}

type keyLockCtx struct{}

// KeyLock returns the key's kernel lock that a Reconciler's ctx carries
// (nil on a lease store): a process that inherits it keeps the key locked
// until it exits, as a step's command does.
func KeyLock(ctx context.Context) io.Closer {
	l, _ := ctx.Value(keyLockCtx{}).(io.Closer)
	return l
}

func withKeyLock(ctx context.Context, lock io.Closer) context.Context {
	if lock == nil {
		return ctx
	}
	return context.WithValue(ctx, keyLockCtx{}, lock)
}

// Reconciler asks the owner of a step's effect whether the attempt in rec
// (whose outcome is unknown) made it. It runs while the caller holds the
// key (its lease renewed); ctx ends when that hold is lost, and carries
// the key's kernel lock (KeyLock). It must only look: settling the record
// is the loop's job.
type Reconciler func(ctx context.Context, rec *Record) Reconciliation

// HoldEvents are the loop's diagnostics; any may be nil. They are called
// from the loop's goroutine, except RenewFailed and Lost, which are called
// from the renewal's.
type HoldEvents struct {
	// Waiting: the key is busy and the loop starts waiting for it (once).
	Waiting func(rec *Record)
	// Reconciling: a reconcile of rec's unknown attempt starts.
	Reconciling func(rec *Record)
	// RenewFailed: a renewal failed and the lease is not lost yet.
	RenewFailed func(err error)
	// Lost: the hold is lost (once); err says why. It is called before
	// Holding.Lost() is closed, so it has returned when a waiter wakes.
	Lost func(err error)
}

// HoldRequest is a hold of a key for one attempt of a step.
type HoldRequest struct {
	// Claim is the claim made in each round; its LocallyLocked is set by
	// the loop.
	Claim ClaimRequest
	// Wait is how long to wait for a busy key (zero: Busy at once).
	Wait time.Duration
	// Locker is the store's kernel lock per key, if it has one.
	Locker KeyLocker
	// Prepare, if set, runs once before the first claim (run: whether the
	// command can run at all). When it fails, a record that can be
	// replayed still is (or a mismatch reported); otherwise its error is
	// Hold's.
	Prepare func() error
	// Guard, if set, is called right before each claim; the function it
	// returns is called with whether the claim is held (run: it takes in
	// the signals that would end idemkey from the claim on).
	Guard func() (done func(held bool))
	// Reconcile, if set, asks the owner about an unknown outcome before
	// the recovery policy applies, under a claim of the key.
	Reconcile Reconciler
	// Events are the loop's diagnostics.
	Events HoldEvents
}

// Held is what Hold decided.
type Held struct {
	Decision
	// Hold is the claim of the key for ActRun: run the step, then
	// Complete it (or Close it).
	Hold *Holding
	// Reconciled is the answer of the reconcile that ran in this call, if
	// one did (nil otherwise), for the report.
	Reconciled *Reconciliation
	// Waited reports whether the loop waited for a busy key.
	Waited bool
}

// StoreError is a failure of the store (or of its lock) during Hold; an
// error of Prepare is returned as it is.
type StoreError struct{ Err error }

func (e *StoreError) Error() string { return e.Err.Error() }
func (e *StoreError) Unwrap() error { return e.Err }

func storeErr(err error) error {
	if err == nil {
		return nil
	}
	return &StoreError{Err: err}
}

// The waits between two looks at a busy key on a store without Waiter.
const (
	firstPause = 5 * time.Millisecond
	maxPause   = 200 * time.Millisecond
)

// Hold claims the key of req.Claim, as Claim decides, and holds it for
// ActRun: on a store with a kernel lock per key, under that lock (a
// record that can be replayed is replayed without it); a busy key is
// waited for up to req.Wait (Waiter where the store has it, else looks
// with backoff) and then acted on; an unknown outcome is reconciled first
// when req.Reconcile is set. For ActRun, the returned Hold renews the
// lease every third of it until Complete or Close.
func Hold(ctx context.Context, s Store, req HoldRequest) (*Held, error) {
	key := req.Claim.Record.Key
	var deadline time.Time
	if req.Wait > 0 {
		deadline = time.Now().Add(req.Wait)
	}
	prepared := req.Prepare == nil
	waited := false
	var reconciled *Reconciliation
	for pause := firstPause; ; pause = min(2*pause, maxPause) {
		var rec *Record
		if req.Locker != nil {
			// One machine: a replay needs no lock, and the record says
			// who is busy when the lock is held.
			var err error
			if rec, _, err = s.Get(ctx, key); err != nil {
				return nil, storeErr(err)
			}
			if d := req.decideRead(rec); d != nil {
				return &Held{Decision: *d, Waited: waited, Reconciled: reconciled}, nil
			}
		}
		if !prepared {
			prepared = true
			if err := req.Prepare(); err != nil {
				return req.unprepared(ctx, s, rec, err)
			}
		}
		busy := rec
		var lock io.Closer
		if req.Locker != nil {
			var err error
			if lock, err = req.Locker.TryLock(key); err != nil {
				return nil, storeErr(err)
			}
		}
		if req.Locker == nil || lock != nil {
			h, err := req.round(ctx, s, lock)
			if err != nil {
				return nil, err
			}
			if h.Reconciled != nil {
				reconciled = h.Reconciled
			}
			h.Waited, h.Reconciled = waited, reconciled
			if h.Action != ActBusy {
				return h, nil
			}
			busy = h.Record
		}
		if deadline.IsZero() || !time.Now().Before(deadline) {
			return &Held{Decision: Decision{Action: ActBusy, Record: busy}, Waited: waited, Reconciled: reconciled}, nil
		}
		if !waited && req.Events.Waiting != nil {
			req.Events.Waiting(busy)
		}
		waited = true
		if err := req.pause(ctx, s, pause, deadline); err != nil {
			return nil, err
		}
	}
}

// unprepared ends a hold whose Prepare failed: a record that can be
// replayed still is, a mismatch is still one; otherwise Prepare's error.
func (req *HoldRequest) unprepared(ctx context.Context, s Store, rec *Record, perr error) (*Held, error) {
	if req.Locker == nil {
		var err error
		if rec, _, err = s.Get(ctx, req.Claim.Record.Key); err != nil {
			return nil, storeErr(err)
		}
		if d := req.decideRead(rec); d != nil {
			return &Held{Decision: *d}, nil
		}
	}
	return nil, perr
}

// decideRead is what a read of the key's record alone decides: a
// mismatch, or a replay; nil when only a claim can decide.
func (req *HoldRequest) decideRead(rec *Record) *Decision {
	c := &req.Claim
	if rec == nil || Expired(rec, c.Retain, nowFunc(c.Now)) {
		return nil
	}
	if rec.Fingerprint != c.Record.Fingerprint {
		return &Decision{Action: ActMismatch, Record: rec}
	}
	if rec.State == Succeeded || rec.State == Failed && c.ReplayFailed {
		return &Decision{Action: ActReplay, Record: rec}
	}
	return nil
}

// pause waits for the busy key to change: on a Waiter, until it says so
// (at most a second, so that a missed notification costs little), else
// for the backoff's pause; never past the deadline.
func (req *HoldRequest) pause(ctx context.Context, s Store, pause time.Duration, deadline time.Time) error {
	if w, ok := s.(Waiter); ok && req.Locker == nil {
		wctx, cancel := context.WithDeadline(ctx, minTime(deadline, time.Now().Add(time.Second)))
		_ = w.Wait(wctx, req.Claim.Record.Key)
		cancel()
		return ctx.Err()
	}
	t := time.NewTimer(min(pause, time.Until(deadline)+time.Millisecond))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// round makes one claim under lock (nil on a lease store) and, for an
// unknown outcome with a Reconciler, the reconcile and the claim after
// it. The lock is released unless the key is held.
func (req *HoldRequest) round(ctx context.Context, s Store, lock io.Closer) (*Held, error) {
	var done func(bool)
	if req.Guard != nil {
		done = req.Guard()
	}
	h, err := req.claimOnce(ctx, s, lock)
	held := err == nil && h.Hold != nil
	if !held && lock != nil {
		lock.Close()
	}
	if done != nil {
		done(held)
	}
	return h, err
}

func (req *HoldRequest) claimOnce(ctx context.Context, s Store, lock io.Closer) (*Held, error) {
	cr := req.Claim
	cr.LocallyLocked = lock != nil
	if req.Reconcile != nil {
		cr.Recover = RecoverFail // the owner is asked before the policy applies
	}
	d, err := Claim(ctx, s, cr)
	if err != nil {
		return nil, storeErr(err)
	}
	var reconciled *Reconciliation
	if d.Action == ActUnknown && req.Reconcile != nil {
		died := d.Previous
		r, settled, err := req.reconcile(ctx, s, d.Record, lock)
		if err != nil {
			return nil, storeErr(err)
		}
		if settled == nil {
			// Another holder took the key meanwhile: busy.
			return &Held{Decision: Decision{Action: ActBusy}}, nil
		}
		reconciled = &r
		if r.Verdict == Happened {
			return &Held{Decision: Decision{Action: ActReplay, Record: settled, Previous: died}, Reconciled: reconciled}, nil
		}
		// Not happened (failed: the next attempt runs) or undecided
		// (unknown: the policy decides): the claim that follows.
		cr = req.Claim
		cr.LocallyLocked = lock != nil
		cr.ReplayFailed = false // reconciled as not happened: the step runs
		if d, err = Claim(ctx, s, cr); err != nil {
			return nil, storeErr(err)
		}
		if d.Previous == nil && d.Action == ActUnknown {
			d.Previous = died
		}
	}
	if d.Action == ActRun {
		return &Held{Decision: *d, Hold: newHolding(s, d.Record, req.Claim.Lease, lock, true, req.Events), Reconciled: reconciled}, nil
	}
	return &Held{Decision: *d, Reconciled: reconciled}, nil
}

// Holding is a held claim of a key: the running record of an attempt,
// its lease renewed every third of it in the background, and the kernel
// lock if the store has one. Complete records the attempt's outcome;
// Close ends the hold without one. Its methods are safe for concurrent
// use (a signal handler may complete it while the step runs).
type Holding struct {
	s        Store
	rec      Record
	lease    time.Duration
	lock     io.Closer
	ownsLock bool
	events   HoldEvents

	ctx     context.Context
	cancel  context.CancelCauseFunc
	lost    chan struct{} // closed when the hold is lost
	lostErr error         // why, set before lost is closed
	stop    chan struct{}
	ended   chan struct{} // closed when the renewal has stopped

	mu        sync.Mutex
	done      bool
	stopOnce  sync.Once
	closeOnce sync.Once
}

// ErrCompleted: Complete of a hold that was completed or closed already.
var ErrCompleted = errors.New("ledger: the attempt's hold has ended already")

// DefaultLease is a hold's lease when none is given.
const DefaultLease = 30 * time.Second

func newHolding(s Store, rec *Record, lease time.Duration, lock io.Closer, ownsLock bool, ev HoldEvents) *Holding {
	if lease <= 0 {
		lease = DefaultLease
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	h := &Holding{
		s: s, rec: *rec, lease: lease, lock: lock, ownsLock: ownsLock, events: ev,
		ctx: ctx, cancel: cancel, lost: make(chan struct{}), stop: make(chan struct{}), ended: make(chan struct{}),
	}
	go h.renew()
	return h
}

// Record returns the attempt's running record as claimed.
func (h *Holding) Record() *Record {
	r := h.rec
	return &r
}

// Attempt is the held attempt's number.
func (h *Holding) Attempt() int64 { return h.rec.Attempt }

// Lock returns the key's kernel lock, nil on a lease store. A child
// process that inherits it keeps the key locked until it exits.
func (h *Holding) Lock() io.Closer { return h.lock }

// Lost is closed when the hold is lost: a renewal matched nothing (a
// newer claim holds the key, or its record is gone) or the store could
// not be reached for a whole lease. LostErr says why.
func (h *Holding) Lost() <-chan struct{} { return h.lost }

// LostErr is why the hold was lost, nil while it is not.
func (h *Holding) LostErr() error {
	select {
	case <-h.lost:
		return h.lostErr
	default:
		return nil
	}
}

// Context ends when the hold is lost (its cause is LostErr) or ended
// (ErrCompleted).
func (h *Holding) Context() context.Context { return h.ctx }

// renew renews the lease every third of it until stopped. A renewal that
// fails for the store (not because the record changed) is retried at the
// next tick while the last good one is less than a lease ago.
func (h *Holding) renew() {
	defer close(h.ended)
	t := time.NewTicker(h.lease / 3)
	defer t.Stop()
	lastOK := time.Now()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), h.lease/3)
		err := Renew(ctx, h.s, &h.rec, h.lease)
		cancel()
		switch {
		case err == nil:
			lastOK = time.Now()
			continue
		case !errors.Is(err, ErrLeaseLost) && time.Since(lastOK) < h.lease:
			if h.events.RenewFailed != nil {
				h.events.RenewFailed(err)
			}
			continue
		}
		select {
		case <-h.stop:
			return // ended meanwhile: the failure is the end's, not a loss
		default:
		}
		// The event first: whoever waits on Lost() finds it said (post's
		// "no retry will be sent", a caller's record of why).
		if h.events.Lost != nil {
			h.events.Lost(err)
		}
		h.lostErr = err
		close(h.lost)
		h.cancel(err)
		return
	}
}

// stopRenewal stops the renewal and waits until it has, so that no
// renewal races the completion (or reports a loss that the completion
// caused).
func (h *Holding) stopRenewal() {
	h.stopOnce.Do(func() { close(h.stop) })
	<-h.ended
}

// Outcome is how a held attempt ended.
type Outcome struct {
	State    State // Succeeded, Failed or Unknown
	ExitCode int
	Reason   string
	Stdout   Output
	Stderr   Output
	Meta     []byte
	// EndedAt is when it ended (zero: now).
	EndedAt time.Time
}

// CompleteResult is what Holding.Complete did.
type CompleteResult struct {
	// Attempt is the held attempt.
	Attempt int64
	// Completion says whether the outputs' bytes were dropped for their
	// size (the outcome recorded without them).
	Completion
	// Record is the record as it was written (nil if it was not).
	Record *Record
	// Err is why the outcome was not recorded (nil if it was).
	// ErrLeaseLost: a newer claim holds the key (see Current).
	Err error
	// Current is, when Err is ErrLeaseLost, the key's record now (nil
	// when it is gone, or could not be read).
	Current *Record
	// Released reports that, the outcome not recorded, the claim was
	// released, so that the next claim finds the key unknown at once
	// instead of busy until the lease runs out; ReleaseErr is why not.
	Released   bool
	ReleaseErr error
}

// releaseTimeout bounds the release after a failed completion.
const releaseTimeout = 5 * time.Second

// Complete records the held attempt's outcome, fenced by its claim, and
// ends the hold (the renewal stops; the kernel lock is released). When
// the outcome cannot be written and the key is still this attempt's, the
// claim is released so that the key reads unknown at once. The second
// Complete (or one after Close) returns ErrCompleted in Err.
func (h *Holding) Complete(ctx context.Context, o Outcome) CompleteResult {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return CompleteResult{Attempt: h.rec.Attempt, Err: ErrCompleted}
	}
	h.done = true
	h.stopRenewal()
	defer h.closeLock()
	r := h.rec
	r.State, r.ExitCode, r.Reason = o.State, o.ExitCode, o.Reason
	r.Stdout, r.Stderr, r.Meta = o.Stdout, o.Stderr, o.Meta
	r.EndedAt = o.EndedAt
	if r.EndedAt.IsZero() {
		r.EndedAt = time.Now()
	}
	return h.write(ctx, &r)
}

// write completes the attempt with rec (the hold's lock is the caller's).
func (h *Holding) write(ctx context.Context, rec *Record) CompleteResult {
	defer h.cancel(ErrCompleted)
	done, err := Complete(ctx, h.s, rec)
	c := CompleteResult{Attempt: rec.Attempt, Completion: done, Err: err}
	switch {
	case err == nil:
		if done.OutputsDropped {
			rec.Stdout, rec.Stderr = dropData(rec.Stdout), dropData(rec.Stderr)
		}
		c.Record = rec
	case errors.Is(err, ErrLeaseLost):
		// A newer claim holds the key, or its record is gone: say which.
		if cur, _, gerr := h.s.Get(ctx, rec.Key); gerr == nil {
			c.Current = cur
		}
	default:
		// Not written, and the key still this attempt's as far as anyone
		// knows: end the lease now, so that the next claim finds the
		// holder gone (unknown) at once instead of busy for a lease.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		c.ReleaseErr = Release(rctx, h.s, rec)
		cancel()
		c.Released = c.ReleaseErr == nil
	}
	return c
}

func (h *Holding) closeLock() {
	h.closeOnce.Do(func() {
		if h.ownsLock && h.lock != nil {
			h.lock.Close()
		}
	})
}

// Close ends the hold without recording an outcome: the renewal stops and
// the kernel lock is released, so that the next claim finds the attempt's
// holder dead (its lease, on a lease store, runs out). It is a no-op
// after Complete.
func (h *Holding) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return
	}
	h.done = true
	h.stopRenewal()
	h.closeLock()
	h.cancel(ErrCompleted)
}

// reconcile takes the key's unknown record over as a reconciling claim
// (the same attempt, running under this holder, renewed), asks the owner,
// and settles the record by the answer: succeeded, failed, or unknown
// again as it was. It returns the settled record, or nil when another
// holder took the key meanwhile (the caller reads it as busy).
func (req *HoldRequest) reconcile(ctx context.Context, s Store, unknown *Record, lock io.Closer) (Reconciliation, *Record, error) {
	cr := req.Claim
	h, err := holdForReconcile(ctx, s, unknown, VersionOf(unknown), false, cr.Record.Holder, cr.Lease, lock, req.Events)
	if err != nil || h == nil {
		return Reconciliation{}, nil, err
	}
	if req.Events.Reconciling != nil {
		req.Events.Reconciling(unknown)
	}
	r := req.Reconcile(withKeyLock(h.Context(), lock), unknown)
	settled, err := h.settle(ctx, unknown, r, nowFunc(req.Claim.Now))
	return r, settled, err
}

// holdForReconcile claims the unknown record for its reconcile: the same
// attempt, running, held by this caller (a live lease or its kernel lock),
// so that no other caller reconciles or runs the key meanwhile. from is
// the stored record's version (unknown, or running with a dead holder:
// needExpired when that is for its lease to say). Nil, nil when the
// record changed first.
func holdForReconcile(ctx context.Context, s Store, unknown *Record, from Version, needExpired bool, holder string, lease time.Duration, lock io.Closer, ev HoldEvents) (*Holding, error) {
	r := *unknown
	// The same attempt under a claim of its own: a new token fences a
	// stale holder of the attempt out of it.
	r.State, r.Holder, r.LeaseUntil, r.Token = Running, holder, time.Time{}, NewToken()
	r.Reason = "reconciling: asking the owner whether the effect happened"
	if unknown.Reason != "" {
		r.Reason += " (was: " + unknown.Reason + ")"
	}
	ok, err := s.Swap(ctx, from, needExpired, &r, lease)
	if err != nil || !ok {
		return nil, err
	}
	return newHolding(s, &r, lease, lock, false, ev), nil
}

// settle writes the reconcile's answer over the reconciling claim (see
// Settle). It returns the settled record, nil if the hold was lost.
func (h *Holding) settle(ctx context.Context, unknown *Record, r Reconciliation, now time.Time) (*Record, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.done = true
	h.stopRenewal()
	if h.LostErr() != nil {
		return nil, nil
	}
	rec := Settle(unknown, r, h.rec.Holder, now)
	rec.Token = h.rec.Token // the reconcile's claim
	c := h.write(ctx, rec)
	if c.Err != nil {
		if errors.Is(c.Err, ErrLeaseLost) {
			return nil, nil
		}
		return nil, c.Err
	}
	return c.Record, nil
}

// Settle is the record an unknown one becomes by a reconcile's answer:
// Happened, succeeded with the answer's output (exit 0);
// NotHappened, failed (its exit code, or 1); Undecided, unknown as it was.
// The reason says it was reconciled, what the owner said, and how the
// attempt had ended.
func Settle(unknown *Record, r Reconciliation, holder string, now time.Time) *Record {
	rec := *unknown
	rec.LeaseUntil = time.Time{}
	switch r.Verdict {
	case Happened:
		rec.State, rec.ExitCode, rec.Holder = Succeeded, 0, holder
		rec.Stdout, rec.Stderr, rec.Meta = r.Output, Output{}, r.Meta
		rec.Reason = reconciledReason("succeeded: "+r.Said(), r.Note, unknown.Reason)
	case NotHappened:
		rec.State, rec.Holder = Failed, holder
		if rec.ExitCode <= 0 {
			rec.ExitCode = 1
		}
		rec.Reason = reconciledReason("failed: the owner says the effect did not happen", r.Note, unknown.Reason)
	}
	if rec.EndedAt.IsZero() {
		rec.EndedAt = now
	}
	return &rec
}

// Said is the answer in words: "the owner says the effect happened", …
func (r Reconciliation) Said() string {
	switch {
	case r.Verdict == Happened && r.Duplicated:
		return "the owner says the effect happened more than once (duplicated)"
	case r.Verdict == Happened:
		return "the owner says the effect happened"
	case r.Verdict == NotHappened:
		return "the owner says the effect did not happen"
	}
	return "the owner could not tell"
}

func reconciledReason(what, note, was string) string {
	s := "reconciled as " + what
	if note != "" {
		s += ": " + note
	}
	if was != "" {
		s += " (was: " + was + ")"
	}
	return s
}

// ReconcileRequest settles one key's unknown outcome by asking its owner,
// outside a step (idemkey ledger reconcile).
type ReconcileRequest struct {
	Key    string
	Holder string        // the reconciling claim's holder
	Lease  time.Duration // its lease, renewed while the reconcile runs
	Locker KeyLocker     // the store's kernel lock per key, if it has one
	// HolderAlive vouches for a running record's holder whose kernel lock
	// is free (as in ClaimRequest).
	HolderAlive HolderCheck
	Reconcile   Reconciler
	// DryRun asks the owner without claiming the key or writing: Record
	// is what the record would become.
	DryRun bool
	Now    func() time.Time
	Events HoldEvents
}

// Settled is what ReconcileKey did.
type Settled struct {
	// Found is the key's record as found (nil: none); a running one whose
	// holder is dead is shown as the unknown it is.
	Found *Record
	// Record is the record as settled (with DryRun, as it would be); nil
	// when no reconcile ran.
	Record *Record
	// Answer is the reconcile's (nil when none ran).
	Answer *Reconciliation
	// Busy: the key's step is running with a live holder (or its lock is
	// held): nothing was asked.
	Busy bool
}

// ReconcileKey asks the owner about the key's step if its outcome is
// unknown (or its running holder is dead), under a claim of the key as a
// step's reconcile is, and settles the record by the answer (see
// Settle). A record that is not unknown is left alone: Found says what
// it is.
func ReconcileKey(ctx context.Context, s Store, req ReconcileRequest) (*Settled, error) {
	var lock io.Closer
	if req.Locker != nil {
		var err error
		if lock, err = req.Locker.TryLock(req.Key); err != nil {
			return nil, err
		}
		if lock == nil {
			rec, _, err := s.Get(ctx, req.Key)
			return &Settled{Found: rec, Busy: true}, err
		}
		defer lock.Close()
	}
	for range maxRounds {
		rec, expired, err := s.Get(ctx, req.Key)
		if err != nil || rec == nil {
			return &Settled{}, err
		}
		found := rec
		switch rec.State {
		case Unknown:
		case Running:
			if !req.HolderAlive.dead(rec, expired, lock != nil) {
				return &Settled{Found: rec, Busy: true}, nil
			}
			r := *rec
			r.State, r.EndedAt, r.LeaseUntil = Unknown, nowFunc(req.Now), time.Time{}
			r.Reason = deadReason(lock != nil && !expired)
			found = &r
		default:
			return &Settled{Found: rec}, nil
		}
		if req.DryRun {
			answer := req.Reconcile(ctx, found)
			return &Settled{Found: found, Record: Settle(found, answer, req.Holder, nowFunc(req.Now)), Answer: &answer}, nil
		}
		needExpired := rec.State == Running && lock == nil
		h, err := holdForReconcile(ctx, s, found, VersionOf(rec), needExpired, req.Holder, req.Lease, lock, req.Events)
		if err != nil {
			return nil, err
		}
		if h == nil {
			continue // changed meanwhile: read it again
		}
		if req.Events.Reconciling != nil {
			req.Events.Reconciling(found)
		}
		answer := req.Reconcile(withKeyLock(h.Context(), lock), found)
		settled, err := h.settle(ctx, found, answer, nowFunc(req.Now))
		if err != nil {
			return nil, err
		}
		return &Settled{Found: found, Record: settled, Answer: &answer}, nil
	}
	return nil, ErrContention
}
