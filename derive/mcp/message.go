package mcp

import (
	"strconv"
	"unicode/utf8"
)

// kind is what a JSON-RPC 2.0 message is (JSON-RPC 2.0 §4, §5; MCP
// basic/index: requests, notifications, responses).
type kind int

const (
	kindOther        kind = iota // valid JSON, but not a message this proxy reads
	kindRequest                  // method and id
	kindNotification             // method, no id
	kindResponse                 // id, and result or error, no method
)

// message is one JSON-RPC message read as spans of its bytes.
type message struct {
	raw    []byte
	kind   kind
	ms     []member // the top-level members, in source order
	method string
	id     *member // nil for a notification
	params *member
	result *member
	err    *member
}

// readMessage reads the valid JSON object b as a JSON-RPC message.
func readMessage(b []byte) *message {
	m := &message{raw: b}
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return m
	}
	m.ms = members(b, i)
	m.id = last(m.ms, "id")
	m.params = last(m.ms, "params")
	meth := last(m.ms, "method")
	m.result = last(m.ms, "result")
	m.err = last(m.ms, "error")
	switch {
	case meth != nil && b[meth.val] == '"':
		m.method = decodeString(b[meth.val:meth.end])
		if m.id != nil {
			m.kind = kindRequest
		} else {
			m.kind = kindNotification
		}
	case meth == nil && m.id != nil && (m.result != nil || m.err != nil):
		m.kind = kindResponse
	}
	return m
}

// value returns the bytes of a member's value.
func (m *message) value(mem *member) []byte {
	if mem == nil {
		return nil
	}
	return m.raw[mem.val:mem.end]
}

// idRaw is the message's id as written, or nil.
func (m *message) idRaw() []byte { return m.value(m.id) }

// idKey is the message's id's identity (see idKey), or "".
func (m *message) idKey() string {
	k, _ := idKey(m.idRaw())
	return k
}

// objectMember returns the last member named name of the object obj (its
// bytes; nil if obj is not an object or has no such member).
func objectMember(obj []byte, name string) []byte {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil
	}
	ms := members(obj, i)
	if mem := last(ms, name); mem != nil {
		return obj[mem.val:mem.end]
	}
	return nil
}

// stringValue returns the text of a JSON string value, and whether v is
// one.
func stringValue(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	return decodeString(v), true
}

// isTrue reports whether v is the literal true.
func isTrue(v []byte) bool { return string(v) == "true" }

// kv is a member to set in an object: its name and its value's JSON text.
type kv struct {
	name string
	raw  []byte
}

// setMembers returns the valid object obj with the members of set in it:
// a member of the same name keeps its place and takes the new value, the
// earlier ones of a repeated name are dropped (so that a parser that keeps
// the first and one that keeps the last read the same value), and new
// names are added at the end. The other members are kept as written, in
// order. A value of nil removes the name.
func setMembers(obj []byte, set ...kv) []byte {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		obj, i = []byte("{}"), 0
	}
	ms := members(obj, i)
	// The last member of each name set, found in one pass (the earlier
	// ones are dropped), so that an object with many repeated names costs
	// time linear in its size.
	lastOf := make([]int, len(set))
	for j := range lastOf {
		lastOf[j] = -1
	}
	for k := range ms {
		for j := range set {
			if ms[k].is(set[j].name) {
				lastOf[j] = k
				break
			}
		}
	}
	out := make([]byte, 0, len(obj)+64)
	out = append(out, '{')
	done := make([]bool, len(set))
	first := true
	put := func(b ...[]byte) {
		if !first {
			out = append(out, ',')
		}
		first = false
		for _, p := range b {
			out = append(out, p...)
		}
	}
	for k := range ms {
		mem := &ms[k]
		s := -1
		for j := range set {
			if mem.is(set[j].name) {
				s = j
				break
			}
		}
		switch {
		case s < 0:
			put(obj[mem.start:mem.end])
		case k != lastOf[s]:
			// An earlier one of a repeated name: dropped.
		case set[s].raw != nil:
			put(mem.nameBytes, []byte{':'}, set[s].raw)
			done[s] = true
		default:
			done[s] = true
		}
	}
	for j, m := range set {
		if !done[j] && m.raw != nil {
			put(appendQuoted(nil, m.name), []byte{':'}, m.raw)
		}
	}
	return append(out, '}')
}

// appendQuoted appends s as a JSON string; a byte that is not UTF-8
// becomes U+FFFD, so that what idemkey writes is always valid JSON.
func appendQuoted(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, "\ufffd"...)
			} else {
				dst = append(dst, s[i:i+size]...)
			}
			i += size - 1
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c < 0x20 || c == 0x7f:
			dst = append(dst, `\u00`...)
			dst = append(dst, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

func quoted(s string) []byte { return appendQuoted(nil, s) }

func number(n int64) []byte { return strconv.AppendInt(nil, n, 10) }

// response is a JSON-RPC response with the given id and result.
func response(id, result []byte) []byte {
	out := make([]byte, 0, len(result)+len(id)+32)
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, id...)
	out = append(out, `,"result":`...)
	out = append(out, result...)
	return append(out, '}')
}

// JSON-RPC 2.0 error codes (§5.1).
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeInvalidParams  = -32602
	codeInternalError  = -32603
)

// errorResponse is a JSON-RPC error response; id nil means null (the
// request's id could not be read).
func errorResponse(id []byte, code int, msg string) []byte {
	if id == nil {
		id = []byte("null")
	}
	out := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	out = append(out, `,"error":{"code":`...)
	out = strconv.AppendInt(out, int64(code), 10)
	out = append(out, `,"message":`...)
	out = appendQuoted(out, msg)
	return append(out, `}}`...)
}

// toolError is a tools/call result the model can read (isError: true,
// MCP server/tools "Tool Execution Errors"), with _meta members.
func toolError(text string, meta ...kv) []byte {
	out := []byte(`{"content":[{"type":"text","text":`)
	out = appendQuoted(out, text)
	out = append(out, `}],"isError":true`...)
	if len(meta) > 0 {
		out = append(out, `,"_meta":`...)
		out = append(out, setMembers([]byte("{}"), meta...)...)
	}
	return append(out, '}')
}
