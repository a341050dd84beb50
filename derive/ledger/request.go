package ledger

// What a record keeps of a request (Record.Request), and how a mismatch
// is told from it: the same for run, post and mcp.

import (
	"fmt"
	"strings"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/derive/diff"
)

// MaxKeptRequest bounds the request a record keeps to show what differs
// on a mismatch. The fingerprint is always of the whole request, so a
// match stays exact; a larger one is not kept (every write of the record
// carries it, the completion's too, after the command ran).
const MaxKeptRequest = 1 << 20

// KeptRequest is what a record keeps of req: req itself, or nothing past
// MaxKeptRequest.
func KeptRequest(req []byte) []byte {
	if len(req) > MaxKeptRequest {
		return []byte{} // not NULL: PostgreSQL's column is NOT NULL
	}
	return req
}

// DescribeDifference says where a recorded request and a new one differ,
// as diff would: the first difference that changes the key, with its
// kind's reason, and how many more there are.
func DescribeDifference(recorded, now []byte) string {
	if len(recorded) == 0 {
		return fmt.Sprintf("the fingerprints differ (a request past %d bytes is not kept to compare)", MaxKeptRequest)
	}
	a, err1 := canon.Parse(recorded, canon.JS)
	b, err2 := canon.Parse(now, canon.JS)
	if err1 != nil || err2 != nil {
		return "the recorded request cannot be compared"
	}
	res := diff.Compare(&diff.Side{Name: "recorded", Doc: a, Args: a.Root()},
		&diff.Side{Name: "now", Doc: b, Args: b.Root()}, diff.Options{Scheme: canon.JS, Max: 1})
	if len(res.Diffs.Items) == 0 {
		return "the fingerprints differ"
	}
	e := res.Diffs.Items[0]
	// The request is {"args":…,"command":[…]} (post: its own members),
	// compared as the arguments of a call: its pointers start /args.
	ptr := strings.TrimPrefix(e.Pointer, "/args")
	what, rest := "arguments differ", ptr
	if r, ok := strings.CutPrefix(ptr, "/command"); ok {
		what, rest = "the command line differs", r
	} else if r, ok := strings.CutPrefix(ptr, "/args"); ok {
		rest = r
	}
	if rest == "" {
		rest = "the top"
	}
	msg := fmt.Sprintf("%s at %s: recorded %s, now %s", what, diff.RevealPointer(rest),
		diff.Shorten(e.A.Revealed(), 60), diff.Shorten(e.B.Revealed(), 60))
	if e.Reason != "" {
		msg += " (" + e.Reason + ")"
	}
	if more := res.Diffs.Total() - 1; more > 0 {
		word := "differences"
		if more == 1 {
			word = "difference"
		}
		msg += fmt.Sprintf(", and %d more %s", more, word)
	}
	return msg
}
