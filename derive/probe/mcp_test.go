package probe

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/derive/mcp"
)

// TestMetaKeyIsMCPs: the probe sends its key where idemkey mcp sends it.
func TestMetaKeyIsMCPs(t *testing.T) {
	if MetaKey != mcp.MetaKey {
		t.Errorf("probe.MetaKey %q, idemkey mcp sends %q", MetaKey, mcp.MetaKey)
	}
}

func TestCountAt(t *testing.T) {
	for _, c := range []struct {
		res, ptr string
		want     int64
		err      string
	}{
		{`{"content":[],"structuredContent":{"count":3}}`, "/count", 3, ""},
		{`{"content":[],"structuredContent":{"items":[1,2]}}`, "/items", 2, ""},
		{`{"content":[{"type":"text","text":"{\"n\":{\"total\":5}}"}]}`, "/n/total", 5, ""},
		{`{"content":[{"type":"text","text":"[[1],[2,3]]"}]}`, "/1", 2, ""},
		{`{"content":[{"type":"text","text":"{\"a/b\":4}"}]}`, "/a~1b", 4, ""},
		{`{"content":[],"structuredContent":{"count":-1}}`, "/count", 0, "not a whole number"},
		{`{"content":[],"structuredContent":{"count":"3"}}`, "/count", 0, "neither a number nor an array"},
		{`{"content":[{"type":"text","text":"not json"}]}`, "/count", 0, "has nothing at /count"},
		{`{"content":[],"isError":true}`, "/count", 0, "an error result"},
	} {
		n, err := countAt(json.RawMessage(c.res), c.ptr)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("countAt(%s, %s) = %d, %v; want an error with %q", c.res, c.ptr, n, err, c.err)
			}
			continue
		}
		if err != nil || n != c.want {
			t.Errorf("countAt(%s, %s) = %d, %v; want %d", c.res, c.ptr, n, err, c.want)
		}
	}
}

func TestWithMember(t *testing.T) {
	for _, c := range []struct{ obj, name, v, want string }{
		{`{"amount":1,"key":"a","b":2}`, "key", `"k"`, `{"amount":1,"b":2,"key":"k"}`},
		{`{}`, "key", `"k"`, `{"key":"k"}`},
		{`{"key":"a"}`, "key", ``, `{}`},
		{`{"a":{"key":1}}`, "key", `"k"`, `{"a":{"key":1},"key":"k"}`},
	} {
		var v json.RawMessage
		if c.v != "" {
			v = json.RawMessage(c.v)
		}
		if got := string(withMember(json.RawMessage(c.obj), c.name, v)); got != c.want {
			t.Errorf("withMember(%s, %s, %s) = %s; want %s", c.obj, c.name, c.v, got, c.want)
		}
	}
	// The mismatch rule never changes the key argument itself.
	changed, what, ok := changedArgs(json.RawMessage(`{"idempotency_key":"x","note":"hi"}`), "arg:idempotency_key")
	if !ok || string(changed) != `{"note":"hi-probe"}` || !strings.Contains(what, `"note"`) {
		t.Errorf("changedArgs = %s, %q, %v", changed, what, ok)
	}
	if _, _, ok := changedArgs(json.RawMessage(`{"flag":true}`), "meta"); ok {
		t.Error("changedArgs made up a member for arguments with no number or string")
	}
}

func TestDescribe(t *testing.T) {
	tool := func(desc, params string) *mcpTool {
		return &mcpTool{Name: "t", Description: desc, InputSchema: json.RawMessage(`{"type":"object","properties":` + params + `}`)}
	}
	for _, c := range []struct {
		t       *mcpTool
		verdict string
		quote   string
	}{
		{tool("Create a payment. Always generate a new idempotency key for every call.", `{}`), Fail, "generate a new idempotency key"},
		{tool("Create a payment.", `{"idempotencyKey":{"type":"string","description":"A random UUID for each request"}}`), Fail, "A random UUID for each request"},
		{tool("Send a message.", `{"nonce":{"type":"string","description":"Use a unique nonce per message"}}`), Fail, "unique nonce per message"},
		{tool("Create a payment.", `{"idempotency_key":{"type":"string","description":"Reuse the same key when you retry."}}`), Pass, "Reuse the same key when you retry"},
		{tool("Create an order. Use a unique idempotency key per order and send the same key again on a retry.", `{}`), Pass, "Use a unique idempotency key per order"},
		{tool("Create a payment.", `{"idempotency_key":{"type":"string"}}`), Info, "idempotency_key"},
		{tool("Create a user with a unique email.", `{"email":{"type":"string","description":"A unique email address"}}`), Info, "no key parameter"},
	} {
		r := describe(c.t)
		if r.Verdict != c.verdict || !strings.Contains(r.Evidence, c.quote) {
			t.Errorf("describe(%q, %s) = %s %q; want %s with %q", c.t.Description, c.t.InputSchema, r.Verdict, r.Evidence, c.verdict, c.quote)
		}
	}
}
