package drift

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"

	"github.com/idemkey/idemkey/canon"
)

// Span is a tool call read from an OpenTelemetry GenAI execute_tool span.
type Span struct {
	Line   int // the line where the span starts
	Task   string
	Tool   string
	CallID string
	Time   int64  // start, Unix nanoseconds
	Args   []byte // the arguments as JSON text
}

// SpanError is a line or span that could not be read.
type SpanError struct {
	Line int
	Err  error
}

func (e *SpanError) Error() string { return e.Err.Error() }

// OTLPSpans reads OTLP JSON traces (ExportTraceServiceRequest objects: one
// document, or one a line as the OpenTelemetry file exporter writes them)
// and returns their execute_tool spans, following the GenAI semantic
// conventions (v1.41.0): a span whose gen_ai.operation.name is
// "execute_tool" (or, without it, whose name starts with "execute_tool "
// and that has gen_ai.tool.name). The tool is gen_ai.tool.name, the
// arguments gen_ai.tool.call.arguments (a JSON string, or a structured
// value converted to JSON), the call id gen_ai.tool.call.id; the task is
// the attribute taskAttr (of the span, else of its resource) or, when
// taskAttr is "", the trace id. Field names are accepted in lowerCamelCase
// and snake_case, as protobuf JSON parsers do; integers as strings or
// numbers.
func OTLPSpans(data []byte, taskAttr string) ([]Span, []*SpanError) {
	if doc, err := canon.Parse(data, canon.JS); err == nil {
		lines := lineStarts(data)
		var spans []Span
		errs := requestSpans(doc.Root(), taskAttr, func(off int) int { n, _ := slices.BinarySearch(lines, off+1); return n }, &spans)
		return spans, errs
	}
	var spans []Span
	var errs []*SpanError
	line := 0
	for len(data) > 0 {
		line++
		l := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			l, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		doc, err := canon.Parse(l, canon.JS)
		if err != nil {
			errs = append(errs, &SpanError{Line: line, Err: err})
			continue
		}
		n := line
		errs = append(errs, requestSpans(doc.Root(), taskAttr, func(int) int { return n }, &spans)...)
	}
	return spans, errs
}

func lineStarts(src []byte) []int {
	starts := []int{0}
	for i, c := range src {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// An absent member is the zero canon.Node, whose methods panic: every
// lookup below goes through get, field and elements, which take it for
// an empty value, so a span or document that leaves a member out (or
// holds null) is read, or reported, never a crash.

// get returns the member name of n, if n is an object that has it.
func get(n canon.Node, name string) (canon.Node, bool) {
	if n.Document() == nil {
		return canon.Node{}, false
	}
	return n.Get(name)
}

// elements returns n's elements, none if n is absent or not an array.
func elements(n canon.Node) []canon.Node {
	if n.Document() == nil {
		return nil
	}
	return n.Elements()
}

// text returns n's text ("" if absent, see canon.Node.Text).
func text(n canon.Node) string {
	if n.Document() == nil {
		return ""
	}
	return n.Text()
}

// field returns the member of an OTLP JSON object under its lowerCamelCase
// or snake_case name.
func field(n canon.Node, camel, snake string) (canon.Node, bool) {
	if n.Document() == nil {
		return canon.Node{}, false
	}
	if v, ok := n.Get(camel); ok {
		return v, true
	}
	return n.Get(snake)
}

func requestSpans(root canon.Node, taskAttr string, lineOf func(int) int, out *[]Span) []*SpanError {
	var errs []*SpanError
	bad := func(off int, format string, args ...any) {
		errs = append(errs, &SpanError{Line: lineOf(off), Err: fmt.Errorf(format, args...)})
	}
	rss, ok := field(root, "resourceSpans", "resource_spans")
	if !ok || rss.Kind() != canon.Array {
		bad(root.Offset(), "not an OTLP JSON trace export: no resourceSpans array")
		return errs
	}
	for _, rs := range rss.Elements() {
		res, _ := get(rs, "resource")
		resAttrs, _ := get(res, "attributes")
		for _, name := range [][2]string{{"scopeSpans", "scope_spans"}, {"instrumentationLibrarySpans", "instrumentation_library_spans"}} {
			sss, ok := field(rs, name[0], name[1])
			if !ok {
				continue
			}
			for _, ss := range elements(sss) {
				spans, _ := get(ss, "spans")
				for _, sp := range elements(spans) {
					s, isTool, err := toolSpan(sp, resAttrs, taskAttr)
					if err != nil {
						bad(sp.Offset(), "%s", err)
						continue
					}
					if isTool {
						s.Line = lineOf(sp.Offset())
						*out = append(*out, s)
					}
				}
			}
		}
	}
	return errs
}

// attr returns the value (an OTLP AnyValue) of the attribute key.
func attr(attrs canon.Node, key string) (canon.Node, bool) {
	for _, kv := range elements(attrs) {
		if k, ok := kv.Get("key"); ok && k.Kind() == canon.String && k.Text() == key {
			v, ok := kv.Get("value")
			return v, ok
		}
	}
	return canon.Node{}, false
}

// attrString returns a string (or integer) attribute as text.
func attrString(attrs canon.Node, key string) string {
	v, ok := attr(attrs, key)
	if !ok {
		return ""
	}
	if s, ok := field(v, "stringValue", "string_value"); ok && s.Kind() == canon.String {
		return s.Text()
	}
	if s, ok := field(v, "intValue", "int_value"); ok {
		if s.Kind() == canon.String {
			return s.Text()
		}
		return string(s.Raw())
	}
	return ""
}

func toolSpan(sp, resAttrs canon.Node, taskAttr string) (Span, bool, error) {
	attrs, _ := get(sp, "attributes")
	op := attrString(attrs, "gen_ai.operation.name")
	tool := attrString(attrs, "gen_ai.tool.name")
	name := ""
	if n, ok := sp.Get("name"); ok && n.Kind() == canon.String {
		name = n.Text()
	}
	if op != "execute_tool" && !(op == "" && tool != "" && len(name) > 13 && name[:13] == "execute_tool ") {
		return Span{}, false, nil
	}
	if tool == "" {
		return Span{}, false, fmt.Errorf("execute_tool span without gen_ai.tool.name")
	}
	s := Span{Tool: tool, CallID: attrString(attrs, "gen_ai.tool.call.id")}
	if taskAttr != "" {
		if s.Task = attrString(attrs, taskAttr); s.Task == "" {
			s.Task = attrString(resAttrs, taskAttr)
		}
		if s.Task == "" {
			return s, false, fmt.Errorf("execute_tool span %s without the task attribute %s", tool, taskAttr)
		}
	} else {
		t, ok := field(sp, "traceId", "trace_id")
		if !ok || t.Kind() != canon.String || t.Text() == "" {
			return s, false, fmt.Errorf("execute_tool span %s without a trace id", tool)
		}
		s.Task = t.Text()
	}
	if t, ok := field(sp, "startTimeUnixNano", "start_time_unix_nano"); ok {
		txt := t.Text()
		if t.Kind() != canon.String {
			txt = string(t.Raw())
		}
		if n, err := strconv.ParseInt(txt, 10, 64); err == nil {
			s.Time = n
		}
	}
	v, ok := attr(attrs, "gen_ai.tool.call.arguments")
	if !ok {
		return s, false, fmt.Errorf("execute_tool span %s without gen_ai.tool.call.arguments (an opt-in attribute: enable content capture)", tool)
	}
	if str, ok := field(v, "stringValue", "string_value"); ok && str.Kind() == canon.String {
		s.Args = []byte(str.Text())
	} else {
		var err error
		if s.Args, err = anyJSON(nil, v); err != nil {
			return s, false, fmt.Errorf("execute_tool span %s: gen_ai.tool.call.arguments: %v", tool, err)
		}
	}
	return s, true, nil
}

// anyJSON converts an OTLP AnyValue to JSON text.
func anyJSON(dst []byte, v canon.Node) ([]byte, error) {
	if x, ok := field(v, "stringValue", "string_value"); ok {
		return canon.AppendQuoted(dst, x.Text()), nil
	}
	if x, ok := field(v, "boolValue", "bool_value"); ok {
		return append(dst, x.Raw()...), nil
	}
	for _, n := range [][2]string{{"intValue", "int_value"}, {"doubleValue", "double_value"}} {
		if x, ok := field(v, n[0], n[1]); ok {
			if x.Kind() == canon.String {
				if _, err := strconv.ParseFloat(x.Text(), 64); err != nil {
					return nil, fmt.Errorf("bad number %q", x.Text())
				}
				return append(dst, x.Text()...), nil
			}
			return append(dst, x.Raw()...), nil
		}
	}
	if x, ok := field(v, "bytesValue", "bytes_value"); ok {
		return canon.AppendQuoted(dst, x.Text()), nil
	}
	if x, ok := field(v, "arrayValue", "array_value"); ok {
		vals, _ := get(x, "values")
		dst = append(dst, '[')
		for k, e := range elements(vals) {
			if k > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = anyJSON(dst, e); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	}
	if x, ok := field(v, "kvlistValue", "kvlist_value"); ok {
		vals, _ := get(x, "values")
		dst = append(dst, '{')
		for k, kv := range elements(vals) {
			if k > 0 {
				dst = append(dst, ',')
			}
			key, _ := kv.Get("key")
			dst = canon.AppendQuoted(dst, text(key))
			dst = append(dst, ':')
			val, ok := kv.Get("value")
			if !ok {
				dst = append(dst, "null"...)
				continue
			}
			var err error
			if dst, err = anyJSON(dst, val); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	}
	return append(dst, "null"...), nil // an empty AnyValue
}
