package mcp

import (
	"encoding/base64"
	"math"
	"net/http"
	"strconv"
	"strings"
)

// httpheaders.go is about the headers of a POST that mirror its message
// (MCP 2026-07-28 basic/transports/streamable-http, "Request Metadata"):
// a request that carries its protocol revision in
// params._meta["io.modelcontextprotocol/protocolVersion"] (the revisions
// without initialize) is POSTed with that revision in
// MCP-Protocol-Version, its method in Mcp-Method, the name or URI of a
// tools/call, prompts/get or resources/read in Mcp-Name, and each argument
// the tool's inputSchema marks with x-mcp-header in Mcp-Param-{Name}. A
// keyed tools/call (any revision) carries its key in an Idempotency-Key
// header too, for a gateway or server that dedupes on it.

// metaProtocolVersion is the _meta member of a request's revision.
const metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"

// firstStatelessRevision is the first revision without initialize and
// sessions, whose POSTs carry the mirrored headers.
const firstStatelessRevision = "2026-07-28"

// idempotencyHeader is the Idempotency-Key header's name as idemkey
// writes it (see setMessageHeaders).
const idempotencyHeader = "idempotency-key"

// maxSchemaDepth bounds the walk of an inputSchema's nested properties.
const maxSchemaDepth = 32

// paramHeader is an argument a tool mirrors into a header: the chain of
// properties that leads to it, and the header's name part.
type paramHeader struct {
	path   []string
	header string
}

// postHeaders is what one POST's headers say of its message.
type postHeaders struct {
	request  bool   // a request (not a notification or a response)
	method   string // its method
	id       string // its id's identity (idKey)
	revision string // the revision in its _meta ("" for none)
}

// setMessageHeaders sets on hd the headers that mirror msg, and returns
// what they say.
func (h *HTTP) setMessageHeaders(hd http.Header, msg []byte) postHeaders {
	var ph postHeaders
	i := skipSpace(msg, 0)
	if i >= len(msg) || msg[i] != '{' {
		return ph
	}
	m := readMessage(msg)
	if m.kind != kindRequest {
		if v := h.statelessRevision(); v != "" && m.kind == kindNotification {
			hd.Set("MCP-Protocol-Version", v)
		}
		return ph
	}
	ph.request, ph.method, ph.id = true, m.method, m.idKey()
	if m.method == "initialize" {
		// The client fell back to a revision with sessions.
		h.mu.Lock()
		h.stateless = ""
		h.mu.Unlock()
	}
	params := m.value(m.params)
	meta := objectMember(params, "_meta")
	if m.method == "tools/call" {
		if key, ok := stringValue(objectMember(meta, MetaKey)); ok && key != "" && plainHeaderValue(key) {
			// Written in lower case (header names are case-insensitive):
			// net/http takes a request with the canonical Idempotency-Key
			// for replayable and sends it again by itself when a reused
			// connection breaks before the answer, and a write must never
			// be sent twice behind the ledger's back.
			hd[idempotencyHeader] = []string{key}
		}
	}
	v, ok := stringValue(objectMember(meta, metaProtocolVersion))
	if !ok || v == "" || !plainHeaderValue(v) {
		return ph
	}
	ph.revision = v
	hd.Set("MCP-Protocol-Version", v)
	if v < firstStatelessRevision {
		return ph
	}
	h.mu.Lock()
	h.stateless = v
	h.mu.Unlock()
	if plainHeaderValue(m.method) {
		hd.Set("Mcp-Method", m.method)
	}
	nameMember := "name"
	switch m.method {
	case "tools/call", "prompts/get":
	case "resources/read":
		nameMember = "uri"
	default:
		return ph
	}
	name, ok := stringValue(objectMember(params, nameMember))
	if !ok {
		return ph
	}
	hd.Set("Mcp-Name", headerValue(name))
	if m.method != "tools/call" {
		return ph
	}
	args := objectMember(params, "arguments")
	for _, b := range h.paramHeaders(name) {
		v := args
		for _, p := range b.path {
			v = objectMember(v, p)
		}
		if s, ok := primitiveText(v); ok {
			hd.Set("Mcp-Param-"+b.header, headerValue(s))
		}
	}
	return ph
}

// statelessRevision is the revision of the client's requests when it is
// one without sessions ("" otherwise).
func (h *HTTP) statelessRevision() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.version != "" {
		return "" // an initialize was answered: a session's revision
	}
	return h.stateless
}

// paramHeaders are the tool's mirrored arguments, as its last listing
// said.
func (h *HTTP) paramHeaders(tool string) []paramHeader {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.toolHeaders[tool]
}

// readToolList reads the x-mcp-header marks of the tools in a tools/list
// result that passes.
func (h *HTTP) readToolList(result []byte) {
	tools := objectMember(result, "tools")
	if len(tools) == 0 || tools[0] != '[' {
		return
	}
	found := map[string][]paramHeader{}
	for _, e := range elements(tools, 0) {
		t := tools[e[0]:e[1]]
		name, ok := stringValue(objectMember(t, "name"))
		if !ok {
			continue
		}
		found[name] = collectParamHeaders(objectMember(objectMember(t, "inputSchema"), "properties"), nil, nil, 0)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.toolHeaders == nil {
		h.toolHeaders = map[string][]paramHeader{}
	}
	for name, hs := range found {
		h.toolHeaders[name] = hs
	}
}

// collectParamHeaders walks a schema's properties (only through
// "properties": the spec's statically reachable ones) for x-mcp-header
// marks.
func collectParamHeaders(props []byte, prefix []string, out []paramHeader, depth int) []paramHeader {
	i := skipSpace(props, 0)
	if depth > maxSchemaDepth || i >= len(props) || props[i] != '{' {
		return out
	}
	for _, mem := range members(props, i) {
		prop := props[mem.val:mem.end]
		path := append(append([]string(nil), prefix...), mem.name())
		if name, ok := stringValue(objectMember(prop, "x-mcp-header")); ok && validHeaderToken(name) {
			out = append(out, paramHeader{path: path, header: name})
		}
		out = collectParamHeaders(objectMember(prop, "properties"), path, out, depth+1)
	}
	return out
}

// primitiveText is an argument's header text: a string as it is, a
// boolean, an integer in JavaScript's safe range in decimal; nothing for
// null, a fraction, an object or an array.
func primitiveText(v []byte) (string, bool) {
	switch {
	case len(v) == 0:
		return "", false
	case v[0] == '"':
		return stringValue(v)
	case string(v) == "true" || string(v) == "false":
		return string(v), true
	case v[0] == '-' || v[0] >= '0' && v[0] <= '9':
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53-1 {
			return "", false
		}
		return strconv.FormatInt(int64(f), 10), true
	}
	return "", false
}

// headerValue is s as a header value: as it is when it is plain ASCII,
// else the spec's Base64 sentinel form (as is a plain value that looks
// like one).
func headerValue(s string) string {
	if plainHeaderValue(s) && !(strings.HasPrefix(s, "=?base64?") && strings.HasSuffix(s, "?=")) {
		return s
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?="
}

// plainHeaderValue reports whether s is a header value as it is: visible
// ASCII, spaces and tabs, none at either end.
func plainHeaderValue(s string) bool {
	if s == "" {
		return true
	}
	if s[0] == ' ' || s[0] == '\t' || s[len(s)-1] == ' ' || s[len(s)-1] == '\t' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 || c > 0x7e) && c != '\t' {
			return false
		}
	}
	return true
}

// validHeaderToken reports whether s is an HTTP field-name token (RFC
// 9110 §5.1: 1*tchar).
func validHeaderToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}
