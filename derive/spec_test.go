package derive

import (
	"testing"

	"github.com/idemkey/idemkey/canon"
)

// TestEnvelopeShapes: each envelope shape is named, with the --from that
// reads it, and passes the quick test key's one-pass path makes before it
// parses; plain arguments are not taken for one; --from auto reads each
// as the shape it is named.
func TestEnvelopeShapes(t *testing.T) {
	for _, c := range []struct{ doc, from, what string }{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}`, FromMCP, "an MCP tools/call request"},
		{`{"id":"c","type":"function","function":{"name":"x","arguments":"{}"}}`, FromOpenAI, "an OpenAI tool call"},
		{`{"type":"function_call","call_id":"c","name":"x","arguments":"{}"}`, FromOpenAI, "an OpenAI function_call item"},
		{`{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"x","arguments":"{}"}}]}`, FromOpenAI, "an OpenAI assistant message with tool_calls"},
		{`{"type":"tool_use","id":"t","name":"x","input":{}}`, FromAnthropic, "an Anthropic tool_use block"},
		{`{"role":"assistant","content":[{"type":"text","text":"."},{"type":"tool_use","id":"t","name":"x","input":{}}]}`, FromAnthropic, "an Anthropic message with a tool_use block"},
		{`{"method":"tools/call","params":{}}`, FromArgs, ""},
		{`{"function":"pay","arguments":{}}`, FromArgs, ""},
		{`{"tool_calls":[],"content":[{"type":"text"}]}`, FromArgs, ""},
		{`{"type":"tool_use","input":{}}`, FromArgs, ""},
		{`[{"jsonrpc":"2.0","method":"tools/call"}]`, FromArgs, ""},
	} {
		d, err := canon.Parse([]byte(c.doc), canon.JS)
		if err != nil {
			t.Fatal(err)
		}
		from, what := EnvelopeShape(d.Root())
		if from != c.from || what != c.what {
			t.Errorf("%s: %s %q, want %s %q", c.doc, from, what, c.from, c.what)
		}
		if from != FromArgs && !MayHaveShape([]byte(c.doc)) {
			t.Errorf("%s: MayHaveShape says no", c.doc)
		}
		lc, err := (&Spec{From: FromAuto, Task: "t", Tool: "x"}).Load([]byte(c.doc))
		if err != nil || lc.From != c.from {
			t.Errorf("%s: --from auto reads it as %s (%v)", c.doc, lc.From, err)
		}
	}
}
