// Package conform is idemkey's conformance suite for other implementations
// of the key derivation: the cases (every rule of the js and jcs schemes),
// the expected canonical text and key of each, and the report and diagnosis
// of another implementation's answers. It runs no process: cmd/ starts the
// implementation and hands its answers to Evaluate.
package conform

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/derive"
)

// Case is one conformance case: a tool call, and the rule it exercises.
type Case struct {
	ID   int
	Rule string
	Note string // what the case checks, in a few words
	Task string // UTF-8, or WTF-8 for a lone surrogate
	Tool string
	Args string // the arguments as JSON text, exactly as sent
}

// Rule is one rule of the schemes the suite checks.
type Rule struct {
	Name  string
	Title string // the rule, in a few words
}

// Rules lists the rules in the order of the suite.
var Rules = []Rule{
	{"structure", "every kind of value, empty containers, scalars as the arguments"},
	{"whitespace", "insignificant white space is dropped"},
	{"order-ascii", "names sorted, ASCII names"},
	{"order-utf16", "names sorted by UTF-16 code units"},
	{"order-index", "array-index names first, in numeric order, under js; plain UTF-16 order under jcs"},
	{"names-special", "__proto__, toJSON and other names JavaScript treats specially"},
	{"duplicate-names", "a repeated name: the last wins under js, an error under jcs"},
	{"number-integer", "integral numbers written without a fraction"},
	{"number-negative-zero", "-0 written as 0"},
	{"number-exponent", "large numbers: plain below 1e21, then 1e+21"},
	{"number-fraction", "small numbers: plain down to 0.000001, then 1e-7"},
	{"number-precision", "the shortest digits that round-trip a double"},
	{"number-big-integer", "integers past 2^53 rounded to the nearest double"},
	{"number-overflow", "a number beyond the double range: null under js, an error under jcs"},
	{"number-underflow", "a number below the smallest double: 0"},
	{"string-escape", "escapes decoded, and written only where required"},
	{"string-control", "U+0000 to U+001F escaped: short forms, else \\u00xx in lower case"},
	{"string-html", "<, > and & not escaped"},
	{"string-line-separator", "U+2028 and U+2029 not escaped"},
	{"string-non-ascii", "non-ASCII characters written as UTF-8, not normalized"},
	{"string-lone-surrogate", "a lone surrogate: written as \\udxxx under js, an error under jcs"},
	{"task-tool", "non-ASCII and escaped task ids and tool names"},
	{"nesting", "nesting up to 1000 levels"},
	{"large", "many members, long strings, long arrays"},
	{"invalid-json", "text that is not JSON is rejected"},
}

// RuleTitle returns the title of the named rule.
func RuleTitle(name string) string {
	for _, r := range Rules {
		if r.Name == name {
			return r.Title
		}
	}
	return ""
}

var (
	casesOnce sync.Once
	cases     []Case
)

// Cases returns the suite, in id order. The caller must not modify it.
func Cases() []Case {
	casesOnce.Do(func() { cases = build() })
	return cases
}

// Expect is what a conforming implementation answers for a case: the key
// and the canonical text of [task, tool, args], or a rejection.
type Expect struct {
	Rejected  bool
	Canonical string
	Key       string // lower-case hex
}

// Expected computes the answer for c under scheme s with idemkey's own
// canonicalization (which the tests check against the reference harness).
func Expected(c Case, s canon.Scheme) Expect {
	doc, err := canon.Parse([]byte(c.Args), s)
	if err != nil {
		return Expect{Rejected: true}
	}
	call := derive.Call{Task: c.Task, Tool: c.Tool, Args: doc.Root()}
	if call.Validate() != nil {
		return Expect{Rejected: true}
	}
	k := call.Key()
	return Expect{Canonical: string(call.AppendText(nil)), Key: hex.EncodeToString(k[:])}
}

// KeyOf returns the key of a canonical text: its SHA-256 in lower-case hex.
func KeyOf(text string) string {
	k := sha256.Sum256([]byte(text))
	return hex.EncodeToString(k[:])
}

// AppendRequest appends the line sent to an implementation for c, without
// its newline: {"id":…,"task":…,"tool":…,"args":…,"args_text":"…"}.
// args_text is the arguments' exact text as a JSON string, in every case:
// number text, repeated names, deep nesting and text that is not JSON
// reach the implementation as written. args is the same text inline
// exactly where a vector has it (portableArgs: I-JSON, nested at most 200
// levels), as a call record holds it, so that the request line itself
// parses alike in every common JSON reader (Python's json.loads stops near
// 1,000 levels); a reader of call records reads args_text where args is
// absent (idemkey key --batch --from call).
func AppendRequest(dst []byte, c Case) []byte {
	dst = appendMember(dst, '{', "id", strconv.Itoa(c.ID))
	dst = appendMember(dst, ',', "task", quote(c.Task))
	dst = appendMember(dst, ',', "tool", quote(c.Tool))
	if portableArgs(c.Args) {
		dst = appendMember(dst, ',', "args", c.Args)
	}
	dst = appendMember(dst, ',', "args_text", quote(c.Args))
	return append(dst, '}')
}

// AppendVector appends c's line of the published suite under scheme s,
// without its newline: id, rule, note, task, tool, args (where it can be
// inline, see portableArgs), args_text, then canonical and key, or
// "error":true for a case the scheme rejects. Every line is JSON (RFC
// 8259) that common parsers read alike (JSON.parse, Python's json.loads,
// Go's encoding/json, jq 1.6): what cannot be written so is carried only
// as text — the arguments always in args_text, a task id or tool name
// holding a lone surrogate in task_text or tool_text (its JSON string, as
// text) instead of task or tool.
func AppendVector(dst []byte, c Case, s canon.Scheme) []byte {
	e := Expected(c, s)
	dst = appendMember(dst, '{', "id", strconv.Itoa(c.ID))
	dst = appendMember(dst, ',', "rule", quote(c.Rule))
	dst = appendMember(dst, ',', "note", quote(c.Note))
	dst = appendName(dst, "task", c.Task)
	dst = appendName(dst, "tool", c.Tool)
	if portableArgs(c.Args) {
		dst = appendMember(dst, ',', "args", c.Args)
	}
	dst = appendMember(dst, ',', "args_text", quote(c.Args))
	if e.Rejected {
		return append(dst, `,"error":true}`...)
	}
	dst = appendMember(dst, ',', "canonical", quote(e.Canonical))
	dst = appendMember(dst, ',', "key", quote(e.Key))
	return append(dst, '}')
}

// appendName appends a task id or tool name as member name, or, when it
// holds a lone surrogate (WTF-8: not UTF-8), its JSON string as text in
// name_text: jq 1.6 stops at a lone surrogate's escape.
func appendName(dst []byte, name, v string) []byte {
	if utf8.ValidString(v) {
		return appendMember(dst, ',', name, quote(v))
	}
	return appendMember(dst, ',', name+"_text", quote(quote(v)))
}

// portableDepth is the deepest nesting of arguments written inline in a
// vector: jq 1.6 stops at 256 levels in a line, Python's json.loads near
// 1,000.
const portableDepth = 200

// portableArgs reports whether arguments text can be written inline in a
// vector: I-JSON (RFC 7493: UTF-8, no lone surrogates, unique names,
// numbers within the double range), which every parser reads alike,
// nested at most portableDepth levels.
func portableArgs(text string) bool {
	p := canon.Parser{MaxDepth: portableDepth}
	_, err := p.Parse([]byte(text), canon.JCS)
	return err == nil
}

func appendMember(dst []byte, sep byte, name, value string) []byte {
	dst = append(dst, sep, '"')
	dst = append(dst, name...)
	dst = append(dst, '"', ':')
	return append(dst, value...)
}

func quote(s string) string { return string(canon.AppendQuoted(nil, s)) }
