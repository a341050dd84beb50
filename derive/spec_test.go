package derive

import (
	"strings"
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

// TestAutoReadsCallRecord: --from auto reads a call record as --from call
// does (it hashed the whole record, without a word), its
// task checked against Task; the default --from args warns about it.
func TestAutoReadsCallRecord(t *testing.T) {
	rec := []byte(`{"task":"t-1","tool":"charge","args":{"b":1,"a":2}}`)
	want, err := (&Spec{From: FromCall}).Load(rec)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range []string{"", "t-1"} {
		lc, err := (&Spec{From: FromAuto, FromSet: true, Task: task}).Load(rec)
		if err != nil || lc.From != FromCall || lc.Call.Key() != want.Call.Key() || lc.Shape != "" {
			t.Errorf("--task %q: from %s, key %x, shape %q (%v); want the record's key %x", task, lc.From, lc.Call.Key(), lc.Shape, err, want.Call.Key())
		}
	}
	if _, err := (&Spec{From: FromAuto, Task: "t-2"}).Load(rec); err == nil || !strings.Contains(err.Error(), "contradicts the call record's task") {
		t.Errorf("a record of another task: %v", err)
	}
	var warned []Warning
	lc, err := (&Spec{From: FromArgs, Task: "t-1", Tool: "charge", Warn: func(w Warning) { warned = append(warned, w) }}).Load(rec)
	if err != nil || lc.Shape != FromCall || len(warned) != 1 || !strings.Contains(warned[0].Msg, "a call record") {
		t.Errorf("default --from args: shape %q, warnings %v (%v)", lc.Shape, warned, err)
	}
}
