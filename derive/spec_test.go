package derive

import (
	"strconv"
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
		{`{"id":"resp_1","object":"response","output":[{"type":"reasoning","summary":[]},{"type":"function_call","call_id":"c","name":"x","arguments":"{}"}]}`, FromOpenAI, "an OpenAI response with a function_call item"},
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

// TestOpenAIResponse: --from openai reads a whole Responses API response
// (an "output" array of reasoning, messages and function_call items) as it
// reads the function_call item alone; --tool picks among several calls,
// and a response without one, or with several and no --tool, is an error
// that says what it holds.
func TestOpenAIResponse(t *testing.T) {
	item := func(id, name, args string) string {
		return `{"type":"function_call","id":"fc_` + id + `","call_id":"call_` + id + `","name":"` + name + `","arguments":` + strconv.Quote(args) + `,"status":"completed"}`
	}
	response := func(items ...string) []byte {
		return []byte(`{"id":"resp_67ccd2bed1ec8190","object":"response","created_at":1741476542,"status":"completed","model":"gpt-4.1",` +
			`"output":[{"type":"reasoning","id":"rs_1","summary":[]},` + strings.Join(items, ",") + `,{"type":"message","role":"assistant","content":[]}],"usage":{"total_tokens":93}}`)
	}
	pay := item("1", "pay", `{"amount":5,"to":"acct_1"}`)
	refund := item("2", "refund", `{"charge":"ch_1"}`)
	want, err := (&Spec{From: FromOpenAI, Task: "t"}).Load([]byte(pay))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		doc  []byte
		tool string
	}{{response(pay), ""}, {response(pay), "pay"}, {response(refund, pay), "pay"}} {
		for _, from := range []string{FromOpenAI, FromAuto} {
			lc, err := (&Spec{From: from, FromSet: true, Task: "t", Tool: c.tool}).Load(c.doc)
			if err != nil {
				t.Errorf("--from %s --tool %q: %v", from, c.tool, err)
			} else if lc.Call.Tool != "pay" || lc.Call.Key() != want.Call.Key() {
				t.Errorf("--from %s --tool %q: tool %q, key %x; want pay, %x", from, c.tool, lc.Call.Tool, lc.Call.Key(), want.Call.Key())
			}
		}
	}
	for _, c := range []struct {
		doc       []byte
		tool, msg string
	}{
		{response(refund, pay), "", "the OpenAI response holds 2 tool calls: refund (call_2), pay (call_1)"},
		{response(refund, pay), "charge", "--tool charge names none of the 2 tool calls of the OpenAI response: refund (call_2), pay (call_1)"},
		{[]byte(`{"object":"response","output":[{"type":"message","role":"assistant","content":[]}]}`), "", "the OpenAI response holds no tool call"},
		{[]byte(`{"object":"response","output":{}}`), "", `the OpenAI response's "output" must be an array, not object`},
	} {
		_, err := (&Spec{From: FromOpenAI, Task: "t", Tool: c.tool}).Load(c.doc)
		if err == nil || err.Error() != c.msg {
			t.Errorf("--tool %q: error %v, want %q", c.tool, err, c.msg)
		}
	}
}

// TestCallRecordArgsText: a call record without "args" is read from its
// "args_text" (conform's requests carry deep or non-I-JSON arguments only
// so), escaped lone surrogates included; "args" wins when both are there.
func TestCallRecordArgsText(t *testing.T) {
	key := func(rec string) ([32]byte, error) {
		lc, err := (&Spec{From: FromCall}).Load([]byte(rec))
		if err != nil {
			return [32]byte{}, err
		}
		return lc.Call.Key(), nil
	}
	for _, c := range []struct{ inline, text string }{
		{`{"b":1,"a":[2]}`, `"{\"b\":1,\"a\":[2]}"`},
		{`{"a":"\ud800"}`, `"{\"a\":\"\\ud800\"}"`},
		{`{"a":1,"a":2}`, `"{\"a\":1,\"a\":2}"`},
	} {
		want, err1 := key(`{"task":"t","tool":"x","args":` + c.inline + `}`)
		got, err2 := key(`{"task":"t","tool":"x","args_text":` + c.text + `}`)
		both, err3 := key(`{"task":"t","tool":"x","args":` + c.inline + `,"args_text":"[]"}`)
		if err1 != nil || err2 != nil || err3 != nil || got != want || both != want {
			t.Errorf("%s: args_text key %x (%v), both %x (%v), want %x (%v)", c.inline, got, err2, both, err3, want, err1)
		}
	}
	for rec, msg := range map[string]string{
		`{"task":"t","tool":"x"}`:                  `call record has no "args" member`,
		`{"task":"t","tool":"x","args_text":{}}`:   `call record "args_text" must be a JSON string, not object`,
		`{"task":"t","tool":"x","args_text":"{,"}`: `"args_text" string is not valid JSON`,
	} {
		if _, err := key(rec); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: error %v, want %q", rec, err, msg)
		}
	}
}
