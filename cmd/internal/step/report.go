package step

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/derive/ledger"
)

// The lines that report a step's record: an outcome recorded without its
// outputs or not recorded at all, a hold lost.

// WarnOutputsDropped says that an outcome was recorded without its
// outputs' bytes (the store refused it for its size).
func WarnOutputsDropped(w io.Writer, key string, c ledger.CompleteResult) {
	if c.Err == nil && c.OutputsDropped {
		fmt.Fprintf(w, "idemkey: warning: the outcome of attempt %d of %s was recorded without its output (the ledger refused it for its size: %v); a replay returns no output, only its length and sha256\n",
			c.Attempt, key, c.Cause)
	}
}

// NotRecordedWhy says why a completion failed and what the key's record
// is now.
func NotRecordedWhy(c ledger.CompleteResult) string {
	if !errors.Is(c.Err, ledger.ErrLeaseLost) {
		s := fmt.Sprintf("%v; the next attempt will find it unknown", c.Err)
		switch {
		case c.Released:
			s += " (the claim was released: at once)"
		case c.ReleaseErr != nil:
			s += fmt.Sprintf(" once the lease runs out (releasing the claim failed too: %v)", c.ReleaseErr)
		}
		return s
	}
	cur := c.Current
	switch {
	case cur != nil && cur.Attempt != c.Attempt:
		return fmt.Sprintf("attempt %d holds the key now; its record stands (%s)", cur.Attempt, recordNow(cur))
	case errors.Is(c.Err, ledger.ErrAttemptEnded) && cur != nil:
		return fmt.Sprintf("the attempt was recorded as %s by someone else meanwhile (its lease ran out, or a person resolved it); that record stands", cur.State)
	}
	return strings.TrimPrefix(c.Err.Error(), "lease lost: ")
}

// LossLine says that a hold was lost and why: the ledger's word for what
// happened to the key's record (a newer attempt, a record gone, an
// attempt ended by someone else), with who holds the key now; or that the
// ledger refused every renewal for a whole lease (it answered, with an
// error); or that it did not answer for a whole lease.
func LossLine(ctx context.Context, s ledger.Store, h *ledger.Holding, key string, lease time.Duration) string {
	err := h.LostErr()
	if !errors.Is(err, ledger.ErrLeaseLost) {
		what := "did not answer"
		if answered(err) {
			what = "answered every renewal with an error"
		}
		return fmt.Sprintf("lease lost: the ledger %s for a whole lease (%s): %v; attempt %d of %s is no longer sure to hold the key, and another worker may take it over",
			what, lease, err, h.Attempt(), key)
	}
	msg := fmt.Sprintf("%v: attempt %d of %s is no longer the key's holder", err, h.Attempt(), key)
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	cur, _, gerr := s.Get(rctx, key)
	cancel()
	switch {
	case gerr != nil || cur == nil:
	case cur.Attempt != h.Attempt():
		msg += fmt.Sprintf(" (attempt %d holds it now: %s)", cur.Attempt, recordNow(cur))
	case cur.State != ledger.Running:
		msg += fmt.Sprintf(" (its record says %s now)", cur.State)
	}
	return msg
}

// answered reports whether err is a ledger server's own answer (it was
// reached, and refused the statement or script: a missing table, a
// permission, a read-only server), rather than a connection that failed
// or timed out. PostgreSQL's answers carry a SQLSTATE (those of classes
// 08 and 57P are the connection's end: no answer); Redis's are reply
// errors.
func answered(err error) bool {
	var pg interface{ SQLState() string }
	if errors.As(err, &pg) {
		c := pg.SQLState()
		return !strings.HasPrefix(c, "08") && !strings.HasPrefix(c, "57P")
	}
	var rd interface{ RedisError() }
	return errors.As(err, &rd)
}

// recordNow says whose a key's record is: its state, start and holder.
func recordNow(cur *ledger.Record) string {
	return fmt.Sprintf("%s, started at %s by %s", cur.State, cli.Stamp(cur.StartedAt), ledger.HolderName(cur.Holder))
}
