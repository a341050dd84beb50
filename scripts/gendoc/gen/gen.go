// Package gen generates JSON benchmark inputs deterministically: the same
// seed and size always give the same bytes, so figures measured by the Go
// benchmarks and by scripts/bench.sh are comparable across runs and
// machines.
//
// The documents look like what AI agents send as tool-call arguments —
// objects whose member names are not sorted, nested arrays, code and prose
// in strings (with and without escapes, ASCII and not), integers, decimals,
// exponents, booleans and nulls — only much bigger.
package gen

import (
	"math/rand/v2"
	"strconv"
	"sync"
)

// A Gen writes JSON into a buffer from a seeded generator.
type Gen struct {
	r   *rand.Rand
	buf []byte
}

// New returns a generator seeded with seed.
func New(seed uint64) *Gen {
	return &Gen{r: rand.New(rand.NewPCG(seed, 0x1de7_4e79))}
}

// Mixed returns a document of at least size bytes (and at most a few
// kilobytes more): an array of tool-call-like records.
func Mixed(size int, seed uint64) []byte {
	return New(seed).array(size, (*Gen).record)
}

// Strings returns a string-heavy document of at least size bytes: an array
// of objects whose values are long strings, a quarter of them with escapes
// and a third with non-ASCII text.
func Strings(size int, seed uint64) []byte {
	return New(seed).array(size, func(g *Gen) {
		g.buf = append(g.buf, '{')
		for k, j := range g.r.Perm(len(stringNames))[:4] {
			if k > 0 {
				g.buf = append(g.buf, ',')
			}
			g.name(stringNames[j])
			g.text(200 + g.r.IntN(800))
		}
		g.buf = append(g.buf, '}')
	})
}

// Numbers returns a number-heavy document of at least size bytes: an array
// of arrays of integers, decimals and exponents in every common form.
func Numbers(size int, seed uint64) []byte {
	return New(seed).array(size, func(g *Gen) {
		g.buf = append(g.buf, '[')
		for k := range 16 {
			if k > 0 {
				g.buf = append(g.buf, ',')
			}
			g.number()
		}
		g.buf = append(g.buf, ']')
	})
}

// ToolCall returns the arguments of one realistic tool call, about 400
// bytes.
func ToolCall(seed uint64) []byte {
	g := New(seed)
	g.toolArgs()
	return g.buf
}

// Call appends one JSON Lines record {"task":…,"tool":…,"args":{…}}
// (without the newline) for call number i to dst.
func (g *Gen) Call(dst []byte, i int) []byte {
	g.buf = append(dst, `{"task":"task-`...)
	g.buf = strconv.AppendInt(g.buf, int64(i/50), 10)
	g.buf = append(g.buf, `","tool":"`...)
	g.buf = append(g.buf, tools[g.r.IntN(len(tools))]...)
	g.buf = append(g.buf, `","args":`...)
	g.toolArgs()
	g.buf = append(g.buf, '}')
	return g.buf
}

// Calls returns n JSON Lines records, one per line.
func Calls(n int, seed uint64) []byte {
	g := New(seed)
	out := make([]byte, 0, n*460)
	for i := range n {
		out = append(g.Call(out, i), '\n')
	}
	return out
}

func (g *Gen) array(size int, elem func(*Gen)) []byte {
	g.buf = make([]byte, 0, size+size/64)
	g.buf = append(g.buf, "[\n"...)
	for first := true; len(g.buf) < size; first = false {
		if !first {
			g.buf = append(g.buf, ",\n"...)
		}
		elem(g)
	}
	return append(g.buf, "\n]\n"...)
}

var (
	tools       = []string{"open_pull_request", "send_email", "create_invoice", "write_file", "run_query", "charge_card", "post_message"}
	stringNames = []string{"content", "body", "description", "diff", "summary", "notes", "prompt", "excerpt"}
	words       = []string{"the", "agent", "retries", "request", "idempotency", "key", "payment", "invoice", "customer", "deploy",
		"branch", "review", "timeout", "network", "tool", "call", "result", "order", "update", "config", "value", "error"}
	// Non-ASCII text as real tool arguments carry it: accented Latin,
	// CJK, Cyrillic, symbols and an astral emoji.
	foreign = []string{"Größe", "ändern", "café", "naïve", "東京", "日本語", "データ", "Привет", "мир", "—", "✓", "€", "😀", "🚀", "ß"}
	// Escapes as other producers write them (Python's json.dumps escapes
	// everything outside ASCII).
	escapes = []string{`\n`, `\t`, `\"`, `\\`, `\/`, `\u00e9`, `\u65e5\u672c`, `\ud83d\ude00`, `\u2028`, `\r\n`, `\u0001`}
	fields  = []string{"id", "path", "content", "message", "amount", "count", "ratio", "enabled", "parent", "tags",
		"matrix", "options", "items", "created_at", "currency", "retries", "zone", "Accept", "_meta", "0", "10", "2"}
)

// name writes "s": (s needs no escaping).
func (g *Gen) name(s string) {
	g.buf = append(g.buf, '"')
	g.buf = append(g.buf, s...)
	g.buf = append(g.buf, '"', ':')
}

// text writes a string of about n bytes of prose or code: plain ASCII,
// with escapes, or with non-ASCII characters.
func (g *Gen) text(n int) {
	kind := g.r.IntN(12) // 0-2 escapes, 3-6 non-ASCII, 7-11 plain ASCII
	g.buf = append(g.buf, '"')
	start := len(g.buf)
	for len(g.buf)-start < n {
		switch {
		case kind < 3 && g.r.IntN(6) == 0:
			g.buf = append(g.buf, escapes[g.r.IntN(len(escapes))]...)
		case kind >= 3 && kind < 7 && g.r.IntN(4) == 0:
			g.buf = append(g.buf, foreign[g.r.IntN(len(foreign))]...)
		default:
			g.buf = append(g.buf, words[g.r.IntN(len(words))]...)
		}
		g.buf = append(g.buf, ' ')
	}
	g.buf = append(g.buf, '"')
}

// number writes an integer, a decimal or a number with an exponent.
func (g *Gen) number() {
	r := g.r
	switch r.IntN(8) {
	case 0, 1: // small integer
		g.buf = strconv.AppendInt(g.buf, int64(r.IntN(2000))-200, 10)
	case 2: // large integer, sometimes past 2^53
		g.buf = strconv.AppendUint(g.buf, r.Uint64()>>r.IntN(20), 10)
	case 3, 4: // money-like decimal
		g.buf = strconv.AppendInt(g.buf, int64(r.IntN(100000)), 10)
		g.buf = append(g.buf, '.')
		g.buf = strconv.AppendInt(g.buf, int64(10+r.IntN(90)), 10)
	case 5: // full-precision double
		g.buf = strconv.AppendFloat(g.buf, r.NormFloat64()*1000, 'g', -1, 64)
	case 6: // exponent, both cases and signs
		g.buf = strconv.AppendInt(g.buf, int64(1+r.IntN(9)), 10)
		if r.IntN(2) == 0 {
			g.buf = append(g.buf, '.')
			g.buf = strconv.AppendInt(g.buf, int64(r.IntN(1000)), 10)
		}
		g.buf = append(g.buf, "eE"[r.IntN(2)])
		g.buf = append(g.buf, []string{"", "+", "-"}[r.IntN(3)]...)
		g.buf = strconv.AppendInt(g.buf, int64(r.IntN(30)), 10)
	default: // written with a trailing zero or as 1.0
		g.buf = strconv.AppendInt(g.buf, int64(r.IntN(100)), 10)
		g.buf = append(g.buf, ".50"...)
	}
}

// scalar writes a random non-container value.
func (g *Gen) scalar() {
	switch g.r.IntN(7) {
	case 0, 1:
		g.text(4 + g.r.IntN(40))
	case 2, 3:
		g.number()
	case 4:
		g.buf = append(g.buf, "true"...)
	case 5:
		g.buf = append(g.buf, "false"...)
	default:
		g.buf = append(g.buf, "null"...)
	}
}

// object writes an object of k distinct member names from fields, in a
// random order, calling value to write each member's value.
func (g *Gen) object(k int, value func(*Gen, string)) {
	perm := g.r.Perm(len(fields))
	g.buf = append(g.buf, '{')
	for j := range min(k, len(perm)) {
		if j > 0 {
			g.buf = append(g.buf, ',')
		}
		f := fields[perm[j]]
		g.name(f)
		value(g, f)
	}
	g.buf = append(g.buf, '}')
}

// record writes one element of a mixed document: a tool-call-like object
// of 8 to 18 members, with nested objects and arrays.
func (g *Gen) record() {
	g.object(8+g.r.IntN(11), (*Gen).field)
}

func (g *Gen) field(name string) {
	r := g.r
	switch name {
	case "content", "message":
		g.text(20 + r.IntN(300))
	case "tags":
		g.buf = append(g.buf, '[')
		for j := range r.IntN(5) {
			if j > 0 {
				g.buf = append(g.buf, ',')
			}
			g.text(3 + r.IntN(10))
		}
		g.buf = append(g.buf, ']')
	case "matrix":
		g.buf = append(g.buf, '[')
		for j := range 1 + r.IntN(3) {
			if j > 0 {
				g.buf = append(g.buf, ',')
			}
			g.buf = append(g.buf, '[')
			for k := range 1 + r.IntN(4) {
				if k > 0 {
					g.buf = append(g.buf, ',')
				}
				g.number()
			}
			g.buf = append(g.buf, ']')
		}
		g.buf = append(g.buf, ']')
	case "options", "_meta":
		g.object(2+r.IntN(5), func(g *Gen, _ string) { g.scalar() })
	case "items":
		g.buf = append(g.buf, '[')
		for j := range r.IntN(4) {
			if j > 0 {
				g.buf = append(g.buf, ',')
			}
			g.object(2+r.IntN(4), func(g *Gen, _ string) { g.scalar() })
		}
		g.buf = append(g.buf, ']')
	case "amount", "count", "ratio", "retries":
		g.number()
	case "enabled":
		g.buf = strconv.AppendBool(g.buf, r.IntN(2) == 0)
	case "parent":
		g.buf = append(g.buf, "null"...)
	default:
		g.scalar()
	}
}

// toolArgs writes the arguments of one tool call, about 400 bytes.
func (g *Gen) toolArgs() {
	r := g.r
	g.buf = append(g.buf, `{"title":`...)
	g.text(30 + r.IntN(20))
	g.buf = append(g.buf, `,"repo":"acme/`...)
	g.buf = append(g.buf, words[r.IntN(len(words))]...)
	g.buf = append(g.buf, `","body":`...)
	g.text(150 + r.IntN(60))
	g.buf = append(g.buf, `,"labels":[`...)
	for j := range 1 + r.IntN(3) {
		if j > 0 {
			g.buf = append(g.buf, ',')
		}
		g.text(3 + r.IntN(8))
	}
	g.buf = append(g.buf, `],"draft":`...)
	g.buf = strconv.AppendBool(g.buf, r.IntN(2) == 0)
	g.buf = append(g.buf, `,"amount":`...)
	g.number()
	g.buf = append(g.buf, `,"base":"main","reviewers":null,"meta":{"retry":`...)
	g.buf = strconv.AppendInt(g.buf, int64(r.IntN(5)), 10)
	g.buf = append(g.buf, `,"attempt_id":"`...)
	g.buf = strconv.AppendUint(g.buf, r.Uint64(), 36)
	g.buf = append(g.buf, `"}}`...)
}

// Seed is the seed the benchmarks and scripts/bench.sh use.
const Seed = 1

// Benchmark inputs, generated on first use and shared by the benchmarks of
// every package.
var (
	Mixed64MiB   = sync.OnceValue(func() []byte { return Mixed(64<<20, Seed) })
	Strings16MiB = sync.OnceValue(func() []byte { return Strings(16<<20, Seed) })
	Numbers16MiB = sync.OnceValue(func() []byte { return Numbers(16<<20, Seed) })
	Call400      = sync.OnceValue(func() []byte { return ToolCall(Seed) })
	Calls10k     = sync.OnceValue(func() []byte { return Calls(10000, Seed) })
)
