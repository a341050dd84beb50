package cmd

import (
	"testing"

	"github.com/idemkey/idemkey/canon"
)

// TestEnvelopeShapes: each envelope shape is named, with the --from that
// reads it, and passes the quick test key's one-pass path makes before it
// parses; plain arguments are not taken for one.
func TestEnvelopeShapes(t *testing.T) {
	for _, c := range []struct{ doc, from, what string }{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}`, fromMCP, "an MCP tools/call request"},
		{`{"id":"c","type":"function","function":{"name":"x","arguments":"{}"}}`, fromOpenAI, "an OpenAI tool call"},
		{`{"type":"function_call","call_id":"c","name":"x","arguments":"{}"}`, fromOpenAI, "an OpenAI function_call item"},
		{`{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"x","arguments":"{}"}}]}`, fromOpenAI, "an OpenAI assistant message with tool_calls"},
		{`{"type":"tool_use","id":"t","name":"x","input":{}}`, fromAnthropic, "an Anthropic tool_use block"},
		{`{"role":"assistant","content":[{"type":"text","text":"."},{"type":"tool_use","id":"t","name":"x","input":{}}]}`, fromAnthropic, "an Anthropic message with a tool_use block"},
		{`{"method":"tools/call","params":{}}`, fromArgs, ""},
		{`{"function":"pay","arguments":{}}`, fromArgs, ""},
		{`{"tool_calls":[],"content":[{"type":"text"}]}`, fromArgs, ""},
		{`{"type":"tool_use","input":{}}`, fromArgs, ""},
		{`[{"jsonrpc":"2.0","method":"tools/call"}]`, fromArgs, ""},
	} {
		d, err := canon.Parse([]byte(c.doc), canon.JS)
		if err != nil {
			t.Fatal(err)
		}
		from, what := envelopeShape(d.Root())
		if from != c.from || what != c.what {
			t.Errorf("%s: %s %q, want %s %q", c.doc, from, what, c.from, c.what)
		}
		if from != fromArgs && !mayBeEnvelope([]byte(c.doc)) {
			t.Errorf("%s: mayBeEnvelope says no", c.doc)
		}
		if detect(d.Root()) != c.from {
			t.Errorf("%s: --from auto reads it as %s", c.doc, detect(d.Root()))
		}
	}
}
