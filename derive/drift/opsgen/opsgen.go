// Package opsgen is a third generator of logs for idemkey drift, written
// apart from driftgen and the test's second generator so that the
// heuristic can be measured on logs it was not built against: other
// tools, field names and nesting (volatile fields inside objects and
// arrays: /meta/request_id, /rows/0/ts), other time formats (RFC 3339
// with offsets and fractions, epoch seconds and milliseconds as numbers
// and as strings, dates), UUID v4 and v7, ULIDs, hex trace ids, W3C
// traceparent, counters from 0 and from 1, float noise (0.1+0.2 and one
// ulp), arrays of scalars and of objects reordered, texts reworded
// (synonyms, punctuation, case, white space, a word inserted), retries
// that change up to four fields at once, close by or after several other
// calls of their task (hundreds of lines later when tasks are many), tasks
// interleaved, and the envelopes of every --from shape (call records, MCP,
// OpenAI, Anthropic, OTLP JSON spans).
//
// Planted, and what drift should say about each:
//   - retries (same call id; MCP has none): one drift finding each;
//   - siblings that differ in a business field (an amount, a recipient, a
//     SKU, a quantity nested in an array, a date, a number inside a text,
//     a document UUID that retries keep): no finding;
//   - probes that differ only in a random-looking id but carry their own
//     call ids (two calls the model made): no finding — only where the log
//     has call ids; a log without them cannot tell these from retries, so
//     they are not planted there;
//   - writes repeated with identical arguments under another call id
//     close by, or far apart (more than MaxBetween other calls of their
//     task between): one collapse each; repeated with the same call id
//     close by: no finding.
//
// Each tool says which of the fields its retries change are request
// metadata (Truth.Metadata: the only fields drift may offer to leave out
// of the key, and what Truth.Suggest holds); the others are values of the
// effect (Truth.Values).
package opsgen

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Shapes of the log's lines.
const (
	ShapeCall      = "call"      // {"task","tool","call_id","args"}; drift --from call
	ShapeMCP       = "mcp"       // tools/call requests, task in params._meta; drift --from mcp --task-pointer /params/_meta/session
	ShapeOpenAI    = "openai"    // Chat Completions tool calls and Responses function_call items; --from openai --task-pointer /task_id
	ShapeAnthropic = "anthropic" // tool_use blocks and assistant messages; --from anthropic --task-pointer /metadata/conversation_id
	ShapeOTel      = "otel"      // one OTLP JSON export request a line; --from otel --task-attr gen_ai.conversation.id
)

// Flags returns the drift flags that read a log of the shape.
func Flags(shape string) []string {
	switch shape {
	case ShapeMCP:
		return []string{"--from", "mcp", "--task-pointer", "/params/_meta/session"}
	case ShapeOpenAI:
		return []string{"--from", "openai", "--task-pointer", "/task_id"}
	case ShapeAnthropic:
		return []string{"--from", "anthropic", "--task-pointer", "/metadata/conversation_id"}
	case ShapeOTel:
		return []string{"--from", "otel", "--task-attr", "gen_ai.conversation.id"}
	}
	return []string{"--from", "call"}
}

// Config tunes a log.
type Config struct {
	Seed   uint64
	Calls  int
	Shape  string // default ShapeCall
	Tasks  int    // tasks running at once (default 60)
	Window int    // the analysis window in lines (default 500)

	// MaxBetween is the analysis's limit on a task's other calls between
	// the attempts of one call (default 10, drift's): far retries stay
	// within it, far collapses lie beyond it.
	MaxBetween int
}

// Truth is what was planted.
type Truth struct {
	Drift    [][]int             // lines of each retried call with its retries
	Collapse [][]int             // lines of each key shared by distinct writes
	Suggest  map[string][]string // tool → its request metadata varying in at least half its drift clusters
	Metadata map[string][]string // tool → its request metadata: what its retries regenerate
	Values   map[string][]string // tool → the values of the effect its retries changed (noise, order, wording)
}

type session struct {
	id, email, name, city, zip, account string
	left                                int
	pending                             []*later // calls it makes again once it has made others
}

// later is a call a session makes again after wait more calls of its own;
// made, at the line given, it calls made.
type later struct {
	ev   *event
	wait int
	made func(line int)
}

type event struct {
	s      *session
	tool   string
	callID string
	args   map[string]any
}

type gen struct {
	r     *rand.Rand
	cfg   Config
	slots []*event
	times []time.Time
}

// stamp is a value written when its line is rendered, from the line's time.
type stamp struct {
	format string
	add    time.Duration
}

const (
	fmtRFC3339Offset = "rfc3339+02"    // 2025-06-01T10:00:00.123+02:00
	fmtRFC3339West   = "rfc3339-05"    // 2025-06-01T03:00:00-05:00
	fmtEpochMS       = "epoch-ms"      // 1748764800123
	fmtEpochMSString = "epoch-ms-str"  // "1748764800123"
	fmtEpochS        = "epoch-s"       // 1748764800
	fmtEpochSString  = "epoch-s-str"   // "1748764800"
	fmtRFC3339Nano   = "rfc3339nano-z" // 2025-06-01T08:00:00.123456789Z
)

func (g *gen) hex(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = "0123456789abcdef"[g.r.IntN(16)]
	}
	return string(b)
}

func (g *gen) uuid4() string {
	h := g.hex(32)
	return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-" + string("89ab"[g.r.IntN(4)]) + h[17:20] + "-" + h[20:]
}

func (g *gen) uuid7(at time.Time) string {
	ms := fmt.Sprintf("%012x", at.UnixMilli())
	h := g.hex(20)
	return ms[:8] + "-" + ms[8:] + "-7" + h[:3] + "-" + string("89ab"[g.r.IntN(4)]) + h[3:6] + "-" + h[6:18]
}

func (g *gen) ulid() string {
	const crock = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	b := make([]byte, 26)
	for i := range b {
		b[i] = crock[g.r.IntN(32)]
	}
	return string(b)
}

func (g *gen) traceparent() string { return "00-" + g.hex(32) + "-" + g.hex(16) + "-01" }

func (g *gen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

// free returns the first free slot at or after i, or -1.
// retriedCall is a call and the attempts made of it: their lines, and the
// pointers they changed.
type retriedCall struct {
	tool  string
	lines []int
	ptrs  map[string]bool
}

func (rc *retriedCall) add(line int, ptrs []string) {
	rc.lines = append(rc.lines, line)
	for _, p := range ptrs {
		rc.ptrs[p] = true
	}
}

// due returns the call the session makes again now, if its wait is over,
// and counts the session's call made otherwise.
func (s *session) due() *later {
	for k, l := range s.pending {
		if l.wait == 0 {
			s.pending = slices.Delete(s.pending, k, k+1)
			return l
		}
	}
	for _, l := range s.pending {
		l.wait--
	}
	return nil
}

func (g *gen) free(i int) int {
	for ; i < len(g.slots); i++ {
		if g.slots[i] == nil {
			return i
		}
	}
	return -1
}

func clone(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = clone(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for k, e := range x {
			s[k] = clone(e)
		}
		return s
	}
	return v
}

func cloneArgs(m map[string]any) map[string]any { return clone(m).(map[string]any) }

// A tool makes arguments, retries them (changing the volatile fields and
// returning their pointers), and makes a distinct sibling.
type tool struct {
	name     string
	metadata []string // the request metadata among what retry changes
	make     func(g *gen, s *session) map[string]any
	retry    func(g *gen, a map[string]any, attempt int) []string
	sibling  func(g *gen, a map[string]any)
	probe    bool // distinct calls differ only in a random-looking id (needs call ids)
	repeat   bool // no volatile fields: repeated writes
}

var words = map[string][]string{
	"damaged": {"broken", "defective"}, "refund": {"reimburse", "repay"}, "customer": {"client", "buyer"},
	"arrived": {"came", "showed up"}, "package": {"parcel", "box"}, "late": {"delayed", "overdue"},
	"shipped": {"dispatched", "sent"}, "order": {"purchase"}, "today": {"this afternoon"},
}

var reasons = [][]string{
	{"Customer", "says", "the", "package", "arrived", "damaged", "and", "wants", "a", "refund", "for", "order", "%d."},
	{"Item", "arrived", "late;", "customer", "asked", "for", "a", "partial", "refund", "on", "order", "%d."},
	{"Wrong", "size", "shipped", "for", "order", "%d,", "customer", "requests", "a", "refund."},
}

var bodies = [][]string{
	{"Hello", "%s,", "your", "order", "%d", "has", "shipped", "today", "and", "should", "arrive", "within", "three", "days."},
	{"Hi", "%s,", "we", "are", "sorry:", "order", "%d", "is", "late", "and", "will", "ship", "next", "week."},
}

// reword changes a text as a model rewording it does: a synonym, the
// punctuation, the case, the white space, or a small word inserted.
func (g *gen) reword(t string) string {
	ws := strings.Fields(t)
	switch g.r.IntN(5) {
	case 0: // a synonym
		for range 20 {
			k := g.r.IntN(len(ws))
			w := strings.ToLower(strings.Trim(ws[k], ".,;:"))
			if syn, ok := words[w]; ok {
				ws[k] = strings.Replace(ws[k], strings.Trim(ws[k], ".,;:"), syn[g.r.IntN(len(syn))], 1)
				return strings.Join(ws, " ")
			}
		}
		return strings.Join(ws, " ") + " Thanks."
	case 1: // punctuation
		s := strings.Join(ws, " ")
		if strings.HasSuffix(s, ".") {
			return strings.TrimSuffix(s, ".") + "!"
		}
		return s + "."
	case 2: // case
		return strings.ToLower(t[:1]) + t[1:]
	case 3: // white space
		k := 1 + g.r.IntN(len(ws)-1)
		return strings.Join(ws[:k], " ") + "  " + strings.Join(ws[k:], " ") + " "
	}
	k := 1 + g.r.IntN(len(ws)-1) // a word inserted
	return strings.Join(slices.Concat(ws[:k], []string{g.pick("please", "kindly", "now", "also")}, ws[k:]), " ")
}

func fill(ws []string, args ...any) string { return fmt.Sprintf(strings.Join(ws, " "), args...) }

// noisy returns x as a float computation leaves it: 0.1+0.2 style, or a
// relative 1e-15 off.
func (g *gen) noisy(x float64) float64 {
	if g.r.IntN(2) == 0 {
		a := math.Round(x*10) / 10
		return (a - 0.1) + 0.1 + (x - a) // often not x exactly
	}
	return x * (1 + 1e-15)
}

var tools = []tool{
	{
		name:     "reserve_stock",
		metadata: []string{"/meta/attempt", "/meta/request_id", "/meta/sent_at"},
		make: func(g *gen, s *session) map[string]any {
			return map[string]any{
				"sku": fmt.Sprintf("SKU-%05d", g.r.IntN(100000)), "quantity": 1 + g.r.IntN(20), "warehouse": g.pick("ZRH-2", "BSL-1", "GVA-4"),
				"meta": map[string]any{"request_id": g.uuid4(), "attempt": 1, "sent_at": stamp{format: fmtRFC3339Offset}},
			}
		},
		retry: func(g *gen, a map[string]any, attempt int) []string {
			m := a["meta"].(map[string]any)
			m["request_id"] = g.uuid4()
			m["attempt"] = attempt
			m["sent_at"] = stamp{format: fmtRFC3339Offset}
			return []string{"/meta/attempt", "/meta/request_id", "/meta/sent_at"}
		},
		sibling: func(g *gen, a map[string]any) {
			if g.r.IntN(2) == 0 {
				a["sku"] = fmt.Sprintf("SKU-%05d", g.r.IntN(100000))
			} else {
				a["quantity"] = a["quantity"].(int) + 1 + g.r.IntN(5)
			}
			a["meta"].(map[string]any)["request_id"] = g.uuid4()
			a["meta"].(map[string]any)["sent_at"] = stamp{format: fmtRFC3339Offset}
		},
	},
	{
		name:     "create_shipment",
		metadata: []string{"/requested_at_ms", "/trace/traceparent"},
		make: func(g *gen, s *session) map[string]any {
			var items []any
			for range 2 + g.r.IntN(3) {
				items = append(items, map[string]any{"sku": fmt.Sprintf("SKU-%05d", g.r.IntN(100000)), "qty": 1 + g.r.IntN(5)})
			}
			tags := []any{"fragile", "express", "gift", "signature"}[:2+g.r.IntN(3)]
			return map[string]any{
				"order_id":  fmt.Sprintf("ORD-%06d", g.r.IntN(1000000)),
				"recipient": map[string]any{"name": s.name, "email": s.email, "address": map[string]any{"city": s.city, "zip": s.zip}},
				"items":     items, "options": map[string]any{"tags": slices.Clone(tags), "insured": g.r.IntN(2) == 0},
				"trace": map[string]any{"traceparent": g.traceparent()}, "requested_at_ms": stamp{format: fmtEpochMS},
			}
		},
		retry: func(g *gen, a map[string]any, attempt int) []string {
			a["trace"].(map[string]any)["traceparent"] = g.traceparent()
			a["requested_at_ms"] = stamp{format: fmtEpochMS}
			ps := []string{"/requested_at_ms", "/trace/traceparent"}
			switch g.r.IntN(4) {
			case 0: // an array of objects in another order
				it := a["items"].([]any)
				a["items"] = append(it[1:], it[0])
				ps = append(ps, "/items")
			case 1: // an array of scalars in another order
				o := a["options"].(map[string]any)
				t := o["tags"].([]any)
				o["tags"] = append(t[1:], t[0])
				ps = append(ps, "/options/tags")
			}
			return ps
		},
		sibling: func(g *gen, a map[string]any) {
			switch g.r.IntN(3) {
			case 0: // another quantity, inside the array
				it := a["items"].([]any)[0].(map[string]any)
				it["qty"] = it["qty"].(int) + 1
			case 1: // another recipient
				a["recipient"].(map[string]any)["email"] = fmt.Sprintf("ship%d@example.net", g.r.IntN(100000))
			default:
				a["order_id"] = fmt.Sprintf("ORD-%06d", g.r.IntN(1000000))
			}
			a["trace"].(map[string]any)["traceparent"] = g.traceparent()
			a["requested_at_ms"] = stamp{format: fmtEpochMS}
		},
	},
	{
		name:     "issue_refund",
		metadata: []string{"/client/nonce", "/client/ts"},
		make: func(g *gen, s *session) map[string]any {
			return map[string]any{
				"payment": "pi_" + g.hex(24), "amount": map[string]any{"value": float64(100+g.r.IntN(20000)) / 100, "currency": g.pick("EUR", "CHF", "GBP")},
				"reason": fill(reasons[g.r.IntN(len(reasons))], 100000+g.r.IntN(900000)),
				"client": map[string]any{"ts": stamp{format: fmtEpochSString}, "nonce": g.ulid()},
			}
		},
		retry: func(g *gen, a map[string]any, attempt int) []string {
			c := a["client"].(map[string]any)
			c["ts"] = stamp{format: fmtEpochSString}
			c["nonce"] = g.ulid()
			ps := []string{"/client/nonce", "/client/ts"}
			switch g.r.IntN(3) {
			case 0:
				a["reason"] = g.reword(a["reason"].(string))
				ps = append(ps, "/reason")
			case 1:
				am := a["amount"].(map[string]any)
				if v := g.noisy(am["value"].(float64)); v != am["value"] {
					am["value"] = v
					ps = append(ps, "/amount/value")
				}
			}
			return ps
		},
		sibling: func(g *gen, a map[string]any) {
			am := a["amount"].(map[string]any)
			am["value"] = am["value"].(float64) + float64(1+g.r.IntN(500))/100
			c := a["client"].(map[string]any)
			c["ts"] = stamp{format: fmtEpochSString}
			c["nonce"] = g.ulid()
		},
	},
	{
		name:     "send_notice",
		metadata: []string{"/headers/x-b3-spanid", "/headers/x-request-id", "/retry_count", "/sent/unix"},
		make: func(g *gen, s *session) map[string]any {
			return map[string]any{
				"to": s.email, "template": g.pick("order_update", "delay_notice"),
				"body":        fill(bodies[g.r.IntN(len(bodies))], s.name, 100000+g.r.IntN(900000)),
				"headers":     map[string]any{"x-request-id": g.hex(32), "x-b3-spanid": g.hex(16)},
				"sent":        map[string]any{"unix": stamp{format: fmtEpochS}},
				"retry_count": 0, "deliver_on": "2025-06-" + strconv.Itoa(10+g.r.IntN(19)),
			}
		},
		retry: func(g *gen, a map[string]any, attempt int) []string {
			h := a["headers"].(map[string]any)
			h["x-request-id"] = g.hex(32)
			h["x-b3-spanid"] = g.hex(16)
			a["sent"].(map[string]any)["unix"] = stamp{format: fmtEpochS}
			a["retry_count"] = attempt - 1
			ps := []string{"/headers/x-b3-spanid", "/headers/x-request-id", "/retry_count", "/sent/unix"}
			if g.r.IntN(4) == 0 {
				a["body"] = g.reword(a["body"].(string))
				ps = append(ps, "/body")
			}
			return ps
		},
		sibling: func(g *gen, a map[string]any) {
			switch g.r.IntN(3) {
			case 0: // another recipient
				a["to"] = fmt.Sprintf("user%d@example.org", g.r.IntN(100000))
			case 1: // another order number in the same text
				b := a["body"].(string)
				for _, w := range strings.Fields(b) {
					if n, err := strconv.Atoi(w); err == nil && n >= 100000 {
						b = strings.Replace(b, w, strconv.Itoa(n+1+g.r.IntN(99)), 1)
						break
					}
				}
				a["body"] = b
			default: // another date
				a["deliver_on"] = "2025-07-" + strconv.Itoa(10+g.r.IntN(19))
			}
			h := a["headers"].(map[string]any)
			h["x-request-id"] = g.hex(32)
			h["x-b3-spanid"] = g.hex(16)
			a["sent"].(map[string]any)["unix"] = stamp{format: fmtEpochS}
		},
	},
	{
		name:     "record_reading",
		metadata: nil, // the reading's own time is a value: two readings at two times are two
		make: func(g *gen, s *session) map[string]any {
			return map[string]any{
				"sensor": fmt.Sprintf("s-%03d", g.r.IntN(1000)), "value": float64(g.r.IntN(40000))/1000 - 5, "unit": g.pick("C", "kPa", "%"),
				"at": map[string]any{"ms": stamp{format: fmtEpochMSString}}, "labels": []any{"site:zrh", "floor:" + strconv.Itoa(g.r.IntN(9)), "rack:" + g.hex(2)},
			}
		},
		retry: func(g *gen, a map[string]any, attempt int) []string {
			a["at"].(map[string]any)["ms"] = stamp{format: fmtEpochMSString}
			ps := []string{"/at/ms"}
			switch g.r.IntN(3) {
			case 0:
				if v := g.noisy(a["value"].(float64)); v != a["value"] {
					a["value"] = v
					ps = append(ps, "/value")
				}
			case 1:
				l := a["labels"].([]any)
				a["labels"] = []any{l[2], l[0], l[1]}
				ps = append(ps, "/labels")
			}
			return ps
		},
		sibling: func(g *gen, a map[string]any) {
			if g.r.IntN(2) == 0 {
				a["value"] = a["value"].(float64) + float64(1+g.r.IntN(900))/1000
			} else {
				a["sensor"] = fmt.Sprintf("s-%03d", g.r.IntN(1000))
			}
			a["at"].(map[string]any)["ms"] = stamp{format: fmtEpochMSString}
		},
	},
	{
		name:     "batch_upsert",
		metadata: []string{"/rows/0/ts", "/rows/1/ts"}, // the batch id is an id of the effect, regenerated or not
		make: func(g *gen, s *session) map[string]any {
			var rows []any
			for k := range 2 {
				rows = append(rows, map[string]any{"id": fmt.Sprintf("r-%d-%d", g.r.IntN(100000), k), "name": g.pick("alpha", "beta", "gamma", "delta"),
					"ts": stamp{format: fmtRFC3339Nano}})
			}
			return map[string]any{"table": g.pick("accounts", "leads"), "rows": rows, "batch_id": ""}
		},
		retry: func(g *gen, a map[string]any, attempt int) []string {
			for _, r := range a["rows"].([]any) {
				r.(map[string]any)["ts"] = stamp{format: fmtRFC3339Nano, add: time.Duration(g.r.IntN(5)) * time.Millisecond}
			}
			a["batch_id"] = "" // a UUID v7 of the line's time, when rendered
			return []string{"/batch_id", "/rows/0/ts", "/rows/1/ts"}
		},
		sibling: func(g *gen, a map[string]any) {
			r := a["rows"].([]any)[1].(map[string]any)
			r["name"] = r["name"].(string) + "-2"
			for _, r := range a["rows"].([]any) {
				r.(map[string]any)["ts"] = stamp{format: fmtRFC3339Nano}
			}
			a["batch_id"] = ""
		},
	},
	{
		name:     "attach_document",
		metadata: []string{"/request/at", "/request/id"},
		make: func(g *gen, s *session) map[string]any {
			return map[string]any{
				"ticket": fmt.Sprintf("T-%05d", g.r.IntN(100000)), "document_id": g.uuid4(),
				"request": map[string]any{"id": g.ulid(), "at": stamp{format: fmtRFC3339West}},
			}
		},
		retry: func(g *gen, a map[string]any, attempt int) []string {
			r := a["request"].(map[string]any)
			r["id"] = g.ulid()
			r["at"] = stamp{format: fmtRFC3339West}
			return []string{"/request/at", "/request/id"}
		},
		sibling: func(g *gen, a map[string]any) { // another document: a UUID that retries keep
			a["document_id"] = g.uuid4()
			r := a["request"].(map[string]any)
			r["id"] = g.ulid()
			r["at"] = stamp{format: fmtRFC3339West}
		},
	},
	{
		name:     "schedule_followup",
		metadata: []string{"/meta/request_id"},
		make: func(g *gen, s *session) map[string]any {
			return map[string]any{
				"contact": s.email, "at": fmt.Sprintf("2025-07-%02dT%02d:00:00+02:00", 1+g.r.IntN(28), 8+g.r.IntN(9)),
				"meta": map[string]any{"request_id": g.uuid4()},
			}
		},
		retry: func(g *gen, a map[string]any, attempt int) []string {
			a["meta"].(map[string]any)["request_id"] = g.uuid4()
			return []string{"/meta/request_id"}
		},
		sibling: func(g *gen, a map[string]any) { // another time: a business timestamp, hours or days later
			t, _ := time.Parse(time.RFC3339, a["at"].(string))
			a["at"] = t.Add(time.Duration(1+g.r.IntN(72)) * 30 * time.Minute).Format(time.RFC3339)
			a["meta"].(map[string]any)["request_id"] = g.uuid4()
		},
	},
	{
		name:     "ping_service",
		metadata: nil, // a probe id tells distinct probes apart
		probe:    true,
		make: func(g *gen, s *session) map[string]any {
			return map[string]any{"service": g.pick("billing", "search", "auth"), "probe_id": g.uuid4()}
		},
		retry: func(g *gen, a map[string]any, attempt int) []string {
			a["probe_id"] = g.uuid4()
			return []string{"/probe_id"}
		},
	},
	{
		name:   "post_message",
		repeat: true,
		make: func(g *gen, s *session) map[string]any {
			return map[string]any{"channel": g.pick("#ops", "#support", "#billing"),
				"text": fmt.Sprintf("Ticket %d escalated to %s.", g.r.IntN(1000000), g.pick("tier 2", "on-call", "finance"))}
		},
	},
}

// Generate writes a log to w and returns what it planted. It is long on
// purpose: one pass in log order that plants each kind of call where it
// stands, read top to bottom beside the Truth it returns.
func Generate(cfg Config, w io.Writer) (Truth, error) {
	if cfg.Shape == "" {
		cfg.Shape = ShapeCall
	}
	if cfg.Tasks == 0 {
		cfg.Tasks = 60
	}
	if cfg.Window == 0 {
		cfg.Window = 500
	}
	if cfg.MaxBetween == 0 {
		cfg.MaxBetween = 10
	}
	hasIDs := cfg.Shape != ShapeMCP
	g := &gen{r: rand.New(rand.NewPCG(cfg.Seed, 0x0b5)), cfg: cfg, slots: make([]*event, cfg.Calls), times: make([]time.Time, cfg.Calls)}
	t := time.Date(2025, 6, 1, 6, 0, 0, 0, time.UTC)
	for i := range g.times {
		t = t.Add(time.Duration(150+g.r.IntN(700)) * time.Millisecond)
		g.times[i] = t
	}
	n := 0
	newSession := func() *session {
		n++
		first := g.pick("Mia", "Noah", "Lina", "Elias", "Sofia", "Luca", "Emma", "Levin")
		return &session{id: fmt.Sprintf("conv_%s_%d", g.hex(6), n), name: first + " " + g.pick("Keller", "Meier", "Rossi", "Dubois"),
			email: fmt.Sprintf("%s.%d@example.com", strings.ToLower(first), g.r.IntN(100000)), city: g.pick("Zürich", "Bern", "Basel"),
			zip: strconv.Itoa(1000 + g.r.IntN(9000)), left: 20 + g.r.IntN(200)}
	}
	sessions := make([]*session, cfg.Tasks)
	for k := range sessions {
		sessions[k] = newSession()
	}
	truth := Truth{Suggest: map[string][]string{}, Metadata: map[string][]string{}, Values: map[string][]string{}}
	varied := map[string]map[string]int{}
	clusters := map[string]int{}
	var retried []*retriedCall
	newID := func() string { return "call_" + g.hex(20) }
	for i := 0; i < cfg.Calls; i++ {
		if g.slots[i] != nil {
			continue
		}
		k := g.r.IntN(len(sessions))
		s := sessions[k]
		if made := s.due(); made != nil {
			g.slots[i] = made.ev
			made.made(i + 1)
			continue
		}
		if s.left--; s.left == 0 {
			sessions[k] = newSession()
		}
		tl := &tools[g.r.IntN(len(tools))]
		if tl.probe && !hasIDs {
			tl = &tools[0]
		}
		ev := &event{s: s, tool: tl.name, callID: newID(), args: tl.make(g, s)}
		g.slots[i] = ev
		x := g.r.Float64()
		switch {
		case tl.repeat && x < 0.45:
			cp := &event{s: s, tool: ev.tool, callID: ev.callID, args: cloneArgs(ev.args)}
			y := g.r.IntN(3)
			if !hasIDs && y == 0 {
				y = 1
			}
			switch y {
			case 0: // another call id close by
				cp.callID = newID()
				if j := g.free(i + 1 + g.r.IntN(40)); j >= 0 {
					g.slots[j] = cp
					truth.Collapse = append(truth.Collapse, []int{i + 1, j + 1})
				}
			case 1: // far apart: more than MaxBetween other calls of its task between
				first := i + 1
				s.pending = append(s.pending, &later{ev: cp, wait: cfg.MaxBetween + 1 + g.r.IntN(6), made: func(line int) {
					truth.Collapse = append(truth.Collapse, []int{first, line})
				}})
			default: // the same call id close by: a retry that kept its key
				if j := g.free(i + 1 + g.r.IntN(12)); j >= 0 {
					g.slots[j] = cp
				}
			}
		case tl.probe && x < 0.3: // distinct probes, their own call ids
			cp := &event{s: s, tool: ev.tool, callID: newID(), args: cloneArgs(ev.args)}
			cp.args["probe_id"] = g.uuid4()
			if j := g.free(i + 1 + g.r.IntN(15)); j >= 0 {
				g.slots[j] = cp
			}
		case tl.retry != nil && x < 0.55:
			rc := &retriedCall{tool: tl.name, lines: []int{i + 1}, ptrs: map[string]bool{}}
			retried = append(retried, rc)
			at, prev := i, ev
			for a := range 1 + g.r.IntN(3) {
				re := &event{s: s, tool: ev.tool, callID: ev.callID, args: cloneArgs(prev.args)}
				ps := tl.retry(g, re.args, a+2)
				if g.r.IntN(5) == 0 {
					// Far apart, still close in the task's own sequence: a
					// few other calls of the task first (hundreds of lines
					// when tasks are many), each of which may bring its own
					// retries and siblings between. The last attempt.
					s.pending = append(s.pending, &later{ev: re, wait: 1 + g.r.IntN(max(cfg.MaxBetween/3, 1)), made: func(line int) { rc.add(line, ps) }})
					break
				}
				j := g.free(at + 1 + g.r.IntN(12))
				if j < 0 {
					break
				}
				g.slots[j] = re
				rc.add(j+1, ps)
				at, prev = j, re
			}
		case tl.sibling != nil && x < 0.75:
			sib := &event{s: s, tool: ev.tool, callID: newID(), args: cloneArgs(ev.args)}
			tl.sibling(g, sib.args)
			if j := g.free(i + 1 + g.r.IntN(30)); j >= 0 {
				g.slots[j] = sib
			}
		}
	}
	for _, rc := range retried {
		if len(rc.lines) < 2 {
			continue // its attempt was never made: the task ended first
		}
		slices.Sort(rc.lines) // a far attempt may come after a close one
		truth.Drift = append(truth.Drift, rc.lines)
		clusters[rc.tool]++
		if varied[rc.tool] == nil {
			varied[rc.tool] = map[string]int{}
		}
		for p := range rc.ptrs {
			varied[rc.tool][p]++
		}
	}
	for _, tl := range tools {
		truth.Metadata[tl.name] = tl.metadata
	}
	for tool, ps := range varied {
		for p, c := range ps {
			switch {
			case !slices.Contains(truth.Metadata[tool], p):
				truth.Values[tool] = append(truth.Values[tool], p)
			case 2*c >= clusters[tool]:
				truth.Suggest[tool] = append(truth.Suggest[tool], p)
			}
		}
		slices.Sort(truth.Suggest[tool])
		slices.Sort(truth.Values[tool])
	}
	for i, ev := range g.slots {
		args := render(g, ev.args, g.times[i]).(map[string]any)
		if ev.tool == "batch_upsert" && args["batch_id"] == "" {
			args["batch_id"] = g.uuid7(g.times[i])
		}
		line, err := g.line(ev, args, i)
		if err != nil {
			return truth, err
		}
		if _, err := w.Write(append(line, '\n')); err != nil {
			return truth, err
		}
	}
	return truth, nil
}

// render replaces the stamps by the line's time.
func render(g *gen, v any, at time.Time) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = render(g, e, at)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for k, e := range x {
			s[k] = render(g, e, at)
		}
		return s
	case stamp:
		t := at.Add(x.add)
		switch x.format {
		case fmtRFC3339Offset:
			return t.In(time.FixedZone("", 2*3600)).Format("2006-01-02T15:04:05.000Z07:00")
		case fmtRFC3339West:
			return t.In(time.FixedZone("", -5*3600)).Format(time.RFC3339)
		case fmtEpochMS:
			return t.UnixMilli()
		case fmtEpochMSString:
			return strconv.FormatInt(t.UnixMilli(), 10)
		case fmtEpochS:
			return t.Unix()
		case fmtEpochSString:
			return strconv.FormatInt(t.Unix(), 10)
		case fmtRFC3339Nano:
			return t.Format(time.RFC3339Nano)
		}
	}
	return v
}

// line writes one call in the log's shape.
func (g *gen) line(ev *event, args map[string]any, i int) ([]byte, error) {
	argText, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	var v any
	switch g.cfg.Shape {
	case ShapeMCP:
		v = map[string]any{"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
			"params": map[string]any{"name": ev.tool, "arguments": json.RawMessage(argText), "_meta": map[string]any{"session": ev.s.id}}}
	case ShapeOpenAI:
		if i%2 == 0 { // Chat Completions tool call
			v = map[string]any{"task_id": ev.s.id, "id": ev.callID, "type": "function",
				"function": map[string]any{"name": ev.tool, "arguments": string(argText)}}
		} else { // Responses function_call item
			v = map[string]any{"task_id": ev.s.id, "type": "function_call", "id": "fc_" + g.hex(16), "call_id": ev.callID,
				"name": ev.tool, "arguments": string(argText)}
		}
	case ShapeAnthropic:
		block := map[string]any{"type": "tool_use", "id": "toolu_" + ev.callID[5:], "name": ev.tool, "input": json.RawMessage(argText)}
		if i%2 == 0 {
			block["metadata"] = map[string]any{"conversation_id": ev.s.id}
			v = block
		} else { // an assistant message: its own id is per response, the block's id is the call's
			v = map[string]any{"id": "msg_" + g.hex(24), "role": "assistant", "metadata": map[string]any{"conversation_id": ev.s.id},
				"content": []any{map[string]any{"type": "text", "text": "Let me do that."}, block}}
		}
	case ShapeOTel:
		start := g.times[i].UnixNano()
		attr := func(k, s string) any { return map[string]any{"key": k, "value": map[string]any{"stringValue": s}} }
		v = map[string]any{"resourceSpans": []any{map[string]any{
			"resource": map[string]any{"attributes": []any{attr("service.name", "ops-agent"), attr("gen_ai.conversation.id", ev.s.id)}},
			"scopeSpans": []any{map[string]any{"scope": map[string]any{"name": "ops-agent.tools", "version": "0.9.0"},
				"spans": []any{map[string]any{
					"traceId": g.hex(32), "spanId": g.hex(16), "name": "execute_tool " + ev.tool, "kind": 1,
					"startTimeUnixNano": strconv.FormatInt(start, 10), "endTimeUnixNano": strconv.FormatInt(start+int64(40*time.Millisecond), 10),
					"attributes": []any{attr("gen_ai.operation.name", "execute_tool"), attr("gen_ai.tool.name", ev.tool),
						attr("gen_ai.tool.call.id", ev.callID), attr("gen_ai.tool.call.arguments", string(argText))},
					"status": map[string]any{},
				}},
			}},
		}}}
	default:
		v = map[string]any{"task": ev.s.id, "tool": ev.tool, "call_id": ev.callID, "args": json.RawMessage(argText)}
	}
	return json.Marshal(v)
}
