// Package drift finds, in a log of tool calls, the retries that got a new
// idempotency key (drift) and the distinct writes that share one
// (collapse), and says which --omit flags would have given each retry one
// key. It is a pure library: the caller parses the log and derives the
// keys; drift reads no file and knows no command line.
//
// # What counts as a retry
//
// Two calls are one call retried when all of these hold:
//
//  1. Same task and same tool, and different keys.
//  2. Close: at most MaxBetween other calls of their task lie between them
//     that are not themselves repeats (the first call of each key counts,
//     its repeats do not), and, when both carry a time, at most WindowTime
//     apart. Lines of the log do not count: in a busy log hundreds of
//     other tasks' lines can lie between the attempts of one call. (The
//     search for a call's retries looks Window lines back.)
//  3. Their arguments, flattened to leaves (a scalar, an empty object or a
//     whole array, each at its RFC 6901 pointer), differ at no more than
//     MaxLeaves leaves and at no more than MaxFraction of the leaves.
//  4. Every difference is of a volatile kind:
//     - reordered array: the same elements in another order;
//     - float noise: two numbers, not both integers, within FloatTolerance
//     of each other (relative), such as 0.3 and 0.30000000000000004;
//     - timestamp: two date-times (RFC 3339 and its common variants, or
//     epoch seconds, milliseconds, microseconds or nanoseconds, as numbers
//     or as strings of digits) at most TimeGap apart, at a pointer that is
//     fresh (below);
//     - UUID or trace id: two random-looking identifiers (UUIDs, hex of 16
//     digits or more, W3C traceparent, ULIDs, prefixed random tokens, long
//     base32 or base36 tokens) at a fresh pointer;
//     - counter: two integers where the later is larger by 1 to MaxStep,
//     at a fresh pointer where at least CounterShare of the integer
//     differences between near-duplicate calls of the tool are such steps;
//     - reworded text: two texts of three words or more that mention the
//     same numbers and share at least TextSimilarity of their words, or two
//     strings that differ only in case, white space, normalization,
//     invisible characters or look-alike letters.
//     A time, id or counter at a pointer whose name says who the call
//     acts for (a tenant, account, user, customer, key: diff.Identity) is
//     never volatile: another tenant is another write.
//  5. The two calls do not carry different call ids, which are two calls
//     the model made, unless the log gives every attempt an id of its own:
//     most retry-like pairs (pairs that pass 1 to 4, or that share a key
//     and pass 2), and more than one, carry different ids.
//
// A pointer is fresh for a tool when its value differs in at least
// MinFresh of the tool's near-duplicate pairs of the same shape (pairs with
// the same leaves that pass 1 to 3 and whose every difference is of a
// volatile kind): a field the caller regenerates on every attempt varies
// across all of them, while a business field (an amount, a recipient, the
// id of another entity, a quantity a distinct call raised by one) stays
// equal within retries. Pairs of distinct calls that differ in a business
// field count for no statistic. Amounts, e-mail addresses, booleans, enumerations, added or
// removed members and any other difference make two calls distinct.
//
// Retry pairs are joined into clusters (connected components); a cluster
// with more than one key is a drift finding.
//
// # Collapsed writes
//
// One rule decides both: a pair the retry rule joins when its keys differ
// is not a collapse when they are equal. A key shared by two consecutive
// calls that the rule would not join (far apart by 2, or carrying
// different call ids by 5; a call id is the model's tool call id, never a
// transport request id) is a collapse finding: possibly distinct writes,
// the later swallowed.
//
// # Advice
//
// A finding's Omit holds only the varying pointers that are request
// metadata a retry regenerates (diff.Regenerated: the pointer's name and
// the values' shape); every other variation is a value the harness must
// send the same (SendSame), never offered as an --omit flag, which would
// let distinct writes share a key. Suggestions are made of Omit alone.
//
// # Cost
//
// Linear in the log: candidates come from buckets keyed by the hash of the
// leaves with one leaf left out (any single-leaf difference), MinHash bands
// over the leaf hashes (several leaves), and the last Recent calls of the
// same task and tool; buckets forget what lies beyond the window. The sets
// of a collapse group's call ids and of a cluster's keys are sets, so a
// group of a million calls costs no more than a million groups. Only
// candidate pairs are compared leaf by leaf, with the diff engine when an
// array changed inside.
package drift

import (
	"time"

	"github.com/idemkey/idemkey/canon"
)

// Call is one tool call of the log.
type Call struct {
	Line   int // 1-based line of the call in the log
	Task   string
	Tool   string
	CallID string     // the model's tool call id, or ""
	Time   int64      // Unix nanoseconds, or 0 when unknown
	Args   canon.Node // the whole arguments, before --omit and --only
	Text   []byte     // Args in canonical form, when the caller has it (else Prepare writes it)
	Key    [32]byte   // the key the caller derives for the call
}

// Options are the thresholds of the heuristic. The zero value of a field
// means its default (see Defaults).
type Options struct {
	Window         int           // lines: how far back the search for a call's retries looks
	MaxBetween     int           // a retry comes back with at most this many other calls of its task between (negative: none)
	WindowTime     time.Duration // and at most this far apart in time, when known
	MaxLeaves      int           // a retry differs at no more leaves
	MaxFraction    float64       // nor at more than this share of the leaves
	MinFresh       float64       // share of near-duplicate pairs in which a volatile pointer differs
	TimeGap        time.Duration // timestamps of one call's attempts differ by at most this
	FloatTolerance float64       // relative difference of float noise
	MaxStep        int           // a counter grows by at most this between attempts
	CounterShare   float64       // share of a counter pointer's differences that are such steps
	TextSimilarity float64       // word overlap of a reworded text
	Share          float64       // a tool's suggestion: pointers varying in at least this share of its clusters
	Recent         int           // each call is also compared with the last Recent calls of its task and tool
	Scheme         canon.Scheme

	// Omit and Only are the caller's --omit and --only pointers: variations
	// the key does not cover are not differences.
	Omit, Only []string

	// Rekey derives the key of arguments with more pointers omitted,
	// exactly as the caller derived Call.Key; it verifies the suggested
	// flags. It must be safe for concurrent use. When nil, nothing is
	// verified.
	Rekey func(task, tool string, args canon.Node, omit []string) ([32]byte, error)
}

// Defaults are the default thresholds.
var Defaults = Options{
	Window:         2000,
	MaxBetween:     10,
	WindowTime:     10 * time.Minute,
	MaxLeaves:      8,
	MaxFraction:    0.67,
	MinFresh:       0.8,
	TimeGap:        15 * time.Minute,
	FloatTolerance: 1e-9,
	MaxStep:        3,
	CounterShare:   0.9,
	TextSimilarity: 0.5,
	Share:          0.5,
	Recent:         8,
}

func (o Options) withDefaults() Options {
	d := Defaults
	if o.Window > 0 {
		d.Window = o.Window
	}
	if o.MaxBetween != 0 {
		d.MaxBetween = o.MaxBetween
	}
	if o.WindowTime > 0 {
		d.WindowTime = o.WindowTime
	}
	if o.MaxLeaves > 0 {
		d.MaxLeaves = o.MaxLeaves
	}
	if o.MaxFraction > 0 {
		d.MaxFraction = o.MaxFraction
	}
	if o.MinFresh > 0 {
		d.MinFresh = o.MinFresh
	}
	if o.TimeGap > 0 {
		d.TimeGap = o.TimeGap
	}
	if o.FloatTolerance > 0 {
		d.FloatTolerance = o.FloatTolerance
	}
	if o.MaxStep > 0 {
		d.MaxStep = o.MaxStep
	}
	if o.CounterShare > 0 {
		d.CounterShare = o.CounterShare
	}
	if o.TextSimilarity > 0 {
		d.TextSimilarity = o.TextSimilarity
	}
	if o.Share > 0 {
		d.Share = o.Share
	}
	if o.Recent > 0 {
		d.Recent = o.Recent
	}
	d.Scheme = o.Scheme
	d.Rekey = o.Rekey
	d.Omit, d.Only = o.Omit, o.Only
	return d
}

// Variation kinds.
const (
	KindTimestamp = "timestamp"
	KindID        = "uuid"
	KindCounter   = "counter"
	KindFloat     = "float-noise"
	KindReordered = "reordered-array"
	KindReworded  = "reworded-text"
	KindOther     = "other"
)

// Finding kinds.
const (
	FindingDrift    = "drift"
	FindingCollapse = "collapse"
)

// Variation is one pointer whose value varies within a drift cluster.
type Variation struct {
	Pointer string // RFC 6901, relative to the arguments, as --omit takes it
	Kind    string

	// Regenerated: request metadata that each attempt regenerates (see
	// diff.Regenerated), which the key may leave out. Any other variation
	// is a value that identifies the effect, or may: the harness must send
	// the same value, and Advice says how.
	Regenerated bool
	Advice      string
}

// Finding is one drift cluster or one collapsed key.
type Finding struct {
	Kind  string // FindingDrift or FindingCollapse
	Task  string
	Tool  string
	Lines []int      // ascending
	Keys  [][32]byte // in the order of their first line

	// Drift.
	Variations []Variation // sorted by pointer
	Omit       []string    // the regenerated pointers: the --omit flags to adopt
	SendSame   []string    // the other varying pointers: values the harness must send the same
	Verified   bool        // no value varies and Rekey gave every call of the cluster one key with Omit

	// Collapse.
	CallIDs []string // the distinct call ids, in order of appearance
	Reason  string   // why the calls look distinct
}

// Pointers returns the varying pointers of a drift finding.
func (f *Finding) Pointers() []string {
	ps := make([]string, len(f.Variations))
	for k, v := range f.Variations {
		ps[k] = v.Pointer
	}
	return ps
}

// Suggestion is the pointers a tool's calls should leave out of the key:
// those that vary in most of its drift clusters.
type Suggestion struct {
	Tool     string
	Omit     []string
	Clusters int // the tool's drift clusters
}

// Report is the result of an analysis.
type Report struct {
	Calls       int
	Findings    []Finding // drift findings first (by first line), then collapses
	Suggestions []Suggestion
}
