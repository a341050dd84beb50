package drift

import (
	"strings"
	"testing"
)

// TestOTLPSpansMissingMembers: members that OTLP JSON leaves out (or an exporter writes as null) are
// read as empty, never a panic: each document below but "spans null"
// crashed the walker (a nil pointer in canon.Node).
func TestOTLPSpansMissingMembers(t *testing.T) {
	const tool = `{"key":"gen_ai.operation.name","value":{"stringValue":"execute_tool"}},{"key":"gen_ai.tool.name","value":{"stringValue":"x"}}`
	span := func(attrs string) string {
		return `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"t1","attributes":[` + tool + attrs + `]}]}]}]}`
	}
	for _, tc := range []struct {
		name, doc, taskAttr string
		args, err           string // the one span's arguments, or the one error
	}{
		{name: "span without attributes", doc: `{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"execute_tool x","traceId":"t1"}]}]}]}`},
		{name: "scope without spans", doc: `{"resourceSpans":[{"scopeSpans":[{}]}]}`},
		{name: "spans null", doc: `{"resourceSpans":[{"scopeSpans":[{"spans":null}]}]}`},
		{name: "task attribute, no resource", doc: span(`,{"key":"gen_ai.tool.call.arguments","value":{"stringValue":"{}"}}`), taskAttr: "gen_ai.conversation.id",
			err: "execute_tool span x without the task attribute gen_ai.conversation.id"},
		{name: "array without values", doc: span(`,{"key":"gen_ai.tool.call.arguments","value":{"arrayValue":{}}}`), args: `[]`},
		{name: "kvlist without values", doc: span(`,{"key":"gen_ai.tool.call.arguments","value":{"kvlistValue":{}}}`), args: `{}`},
		{name: "kvlist entry without key", doc: span(`,{"key":"gen_ai.tool.call.arguments","value":{"kvlistValue":{"values":[{"value":{"intValue":"1"}}]}}}`), args: `{"":1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spans, errs := OTLPSpans([]byte(tc.doc), tc.taskAttr)
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if strings.Join(got, "; ") != tc.err {
				t.Fatalf("errors %q, want %q", got, tc.err)
			}
			switch {
			case tc.args == "" && len(spans) != 0:
				t.Fatalf("spans %+v, want none", spans)
			case tc.args != "" && (len(spans) != 1 || string(spans[0].Args) != tc.args || spans[0].Line != 1):
				t.Fatalf("spans %+v, want one on line 1 with args %s", spans, tc.args)
			}
		})
	}
}
