package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/derive"
	"github.com/spf13/pflag"
)

// The formats a tool call can arrive in (--from).
const (
	fromArgs      = "args"      // the bare arguments value
	fromCall      = "call"      // {"task":…,"tool":…,"args":…}
	fromMCP       = "mcp"       // a JSON-RPC tools/call request
	fromOpenAI    = "openai"    // a Chat Completions tool call or a Responses function_call item
	fromAnthropic = "anthropic" // a tool_use content block
	fromAuto      = "auto"      // detect mcp, openai or anthropic; otherwise args
)

var fromNames = []string{fromArgs, fromCall, fromMCP, fromOpenAI, fromAnthropic, fromAuto}

// callSpec says how to turn input bytes into a call: the envelope format,
// the task and tool from the command line, and the parts of the arguments
// that make up the key.
type callSpec struct {
	From         string
	Task, Tool   string // from flags, environment or config; may be empty
	Scheme       canon.Scheme
	Only, Omit   []string // RFC 6901 pointers into the arguments
	AllowMissing bool

	// Parsers reused across the lines of a batch: a loaded call is valid
	// until the next call to load.
	outer, inner canon.Parser
}

// addCallFlags registers the flags that build a callSpec.
func addCallFlags(fl *pflag.FlagSet) {
	fl.String("task", "", "task id that scopes the key (IDEMKEY_TASK)")
	fl.String("tool", "", "tool name (IDEMKEY_TOOL); must match the envelope's name if it has one")
	fl.String("scheme", "js", "canonical form: js (the reference harness) or jcs (RFC 8785)")
	fl.String("from", fromArgs, "input format: "+strings.Join(fromNames, ", "))
	fl.StringArray("only", nil, "derive the key from just this part of the args (RFC 6901 pointer; repeatable)")
	fl.StringArray("omit", nil, "drop this part of the args before deriving (RFC 6901 pointer; repeatable)")
	fl.Bool("allow-missing", false, "let --only pointers that match nothing be ignored")
}

// callSpec reads the flags registered by addCallFlags.
func (f *Factory) callSpec() (*callSpec, error) {
	v := f.Config
	s := &callSpec{
		From:         v.GetString("from"),
		Task:         v.GetString("task"),
		Tool:         v.GetString("tool"),
		Only:         v.GetStringSlice("only"),
		Omit:         v.GetStringSlice("omit"),
		AllowMissing: v.GetBool("allow-missing"),
	}
	var err error
	if s.Scheme, err = f.scheme(); err != nil {
		return nil, err
	}
	if !validFrom(s.From) {
		return nil, usageErrorf("invalid --from %q (want one of %s)", s.From, strings.Join(fromNames, ", "))
	}
	for _, p := range append(append([]string{}, s.Only...), s.Omit...) {
		if p != "" && p[0] != '/' {
			return nil, &UsageError{Err: fmt.Errorf("invalid JSON pointer %q", p), hint: "an RFC 6901 pointer is empty or starts with '/', e.g. /trace_id"}
		}
	}
	for _, p := range s.Omit {
		if p == "" {
			return nil, usageErrorf("--omit '' would drop the whole arguments value")
		}
	}
	if s.From != fromCall && s.Task == "" {
		_, _, err := f.taskTool() // the usage error for a missing task
		return nil, err
	}
	if err := (derive.Call{Task: orX(s.Task), Tool: orX(s.Tool)}).Validate(); err != nil {
		return nil, &UsageError{Err: err}
	}
	return s, nil
}

func orX(s string) string {
	if s == "" {
		return "x"
	}
	return s
}

func validFrom(s string) bool {
	for _, n := range fromNames {
		if s == n {
			return true
		}
	}
	return false
}

// loadedCall is a call read from input.
type loadedCall struct {
	Call     derive.Call
	Args     canon.Node // the whole arguments value, before --only and --omit
	From     string     // the format the input was read as (auto resolved)
	Selected bool       // --only or --omit chose part of the arguments
}

// envelopeError is input that parsed as JSON but is not the expected
// envelope.
type envelopeError struct{ msg, hint string }

func (e *envelopeError) Error() string { return e.msg }
func (e *envelopeError) Hint() string  { return e.hint }

func envErr(format string, args ...any) error {
	return &envelopeError{msg: fmt.Sprintf(format, args...)}
}

// load parses one input (a file, or one line of a batch) into a call.
func (s *callSpec) load(data []byte) (loadedCall, error) {
	doc, err := s.outer.Parse(data, s.Scheme)
	if err != nil {
		return loadedCall{}, err
	}
	root := doc.Root()
	lc := loadedCall{From: s.From}
	if lc.From == fromAuto {
		lc.From = detect(root)
	}
	task, tool := s.Task, ""
	var args canon.Node
	switch lc.From {
	case fromArgs:
		args = root
	case fromCall:
		if root.Kind() != canon.Object {
			return lc, envErr("a call record must be an object {\"task\",\"tool\",\"args\"}, not %s", root.Kind())
		}
		t, err := stringMember(root, "task", "call record")
		if err != nil {
			return lc, err
		}
		if task != "" && task != t {
			return lc, &envelopeError{msg: fmt.Sprintf("--task %q contradicts the call record's task %q", task, t)}
		}
		task = t
		if tool, err = stringMember(root, "tool", "call record"); err != nil {
			return lc, err
		}
		var ok bool
		if args, ok = root.Get("args"); !ok {
			return lc, envErr("call record has no \"args\" member")
		}
	case fromMCP:
		params, ok := root.Get("params")
		if !ok || params.Kind() != canon.Object {
			return lc, envErr("not an MCP tools/call request: no \"params\" object")
		}
		if m, ok := root.Get("method"); ok && (m.Kind() != canon.String || m.Text() != "tools/call") {
			return lc, envErr("MCP request method is %s, not \"tools/call\"", m.Raw())
		}
		if tool, err = stringMember(params, "name", "MCP params"); err != nil {
			return lc, err
		}
		if args, ok = params.Get("arguments"); !ok {
			// An absent arguments member means no arguments: {}.
			empty, _ := canon.Parse([]byte("{}"), s.Scheme)
			args = empty.Root()
		}
	case fromOpenAI:
		fn := root
		if f, ok := root.Get("function"); ok && f.Kind() == canon.Object {
			fn = f // Chat Completions: {"id","type":"function","function":{"name","arguments"}}
		}
		if tool, err = stringMember(fn, "name", "OpenAI tool call"); err != nil {
			return lc, err
		}
		a, ok := fn.Get("arguments")
		if !ok {
			return lc, envErr("OpenAI tool call has no \"arguments\" member")
		}
		if a.Kind() != canon.String {
			return lc, envErr("OpenAI tool call \"arguments\" must be a JSON string, not %s", a.Kind())
		}
		// The arguments are JSON text inside a string: parse that text,
		// as JSON.parse parses the string the first JSON.parse gave: an
		// escaped lone surrogate in the string is a character of the text.
		text, escaped := canon.EscapeSurrogates([]byte(a.Text()))
		inner, err := s.inner.Parse(text, s.Scheme)
		if err != nil {
			var ce *canon.Error
			if errors.As(err, &ce) {
				// Report the position of the string in the input, and the
				// position inside the string in the message: in the
				// string's own text, where each escaped surrogate was one
				// character, not six.
				col := ce.Column
				for _, at := range escaped {
					if at < ce.Offset && !bytes.Contains(text[at:ce.Offset], []byte{'\n'}) {
						col -= 5
					}
				}
				line, c := canon.Position(data, a.Offset())
				return lc, &canon.Error{
					Offset: a.Offset(), Line: line, Column: c, Pointer: "",
					Msg:  fmt.Sprintf("\"arguments\" string is not valid JSON: %s (at %d:%d of the string)", ce.Msg, ce.Line, col),
					Hint: ce.Hint,
				}
			}
			return lc, err
		}
		args = inner.Root()
	case fromAnthropic:
		if tool, err = stringMember(root, "name", "Anthropic tool_use block"); err != nil {
			return lc, err
		}
		var ok bool
		if args, ok = root.Get("input"); !ok {
			return lc, envErr("Anthropic tool_use block has no \"input\" member")
		}
	}
	switch {
	case tool == "":
		tool = s.Tool
	case s.Tool != "" && s.Tool != tool:
		return lc, &envelopeError{
			msg:  fmt.Sprintf("--tool %q contradicts the tool name %q in the %s input", s.Tool, tool, lc.From),
			hint: "drop --tool, or check that the right call was logged",
		}
	}
	lc.Call = derive.Call{Task: task, Tool: tool, Args: args}
	lc.Args = args
	if err := lc.Call.Validate(); err != nil {
		switch err {
		case derive.ErrEmptyTask:
			return lc, &UsageError{Err: errors.New("missing task id: give --task or set IDEMKEY_TASK"), hint: "the task id scopes the key; it never comes from a model's envelope"}
		case derive.ErrEmptyTool:
			return lc, &UsageError{Err: errors.New("missing tool name: give --tool or set IDEMKEY_TOOL")}
		}
		return lc, err
	}
	if len(s.Only) > 0 || len(s.Omit) > 0 {
		sel, err := s.selectArgs(args)
		if err != nil {
			return lc, err
		}
		lc.Call.Args, lc.Selected = sel, true
	}
	return lc, nil
}

// detect names the envelope format of an input for --from auto. A call
// record is never detected: it carries a task id, and the task id must not
// come from input unless asked for with --from call.
func detect(root canon.Node) string {
	if root.Kind() != canon.Object {
		return fromArgs
	}
	str := func(n canon.Node, name string) string {
		if v, ok := n.Get(name); ok && v.Kind() == canon.String {
			return v.Text()
		}
		return ""
	}
	if _, ok := root.Get("jsonrpc"); ok && str(root, "method") == "tools/call" {
		return fromMCP
	}
	if fn, ok := root.Get("function"); ok && fn.Kind() == canon.Object {
		if _, ok := fn.Get("arguments"); ok && str(fn, "name") != "" {
			return fromOpenAI
		}
	}
	if str(root, "type") == "function_call" && str(root, "name") != "" {
		if a, ok := root.Get("arguments"); ok && a.Kind() == canon.String {
			return fromOpenAI
		}
	}
	if str(root, "type") == "tool_use" && str(root, "name") != "" {
		if _, ok := root.Get("input"); ok {
			return fromAnthropic
		}
	}
	return fromArgs
}

func stringMember(n canon.Node, name, what string) (string, error) {
	if n.Kind() != canon.Object {
		return "", envErr("%s must be an object, not %s", what, n.Kind())
	}
	v, ok := n.Get(name)
	if !ok {
		return "", envErr("%s has no %q member", what, name)
	}
	if v.Kind() != canon.String {
		return "", envErr("%s %q must be a string, not %s", what, name, v.Kind())
	}
	return v.Text(), nil
}

// selection is a tree of pointer tokens; all marks a selected subtree.
type selection struct {
	all  bool
	kids map[string]*selection
}

func (s *selection) add(pointer string) {
	if pointer == "" {
		s.all = true
		return
	}
	n := s
	for _, tok := range strings.Split(pointer[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		if n.kids == nil {
			n.kids = map[string]*selection{}
		}
		k := n.kids[tok]
		if k == nil {
			k = &selection{}
			n.kids[tok] = k
		}
		n = k
	}
	n.all = true
}

// selectArgs applies --only, then --omit, to the arguments and returns the
// selected document: that, not the original, is what is hashed.
func (s *callSpec) selectArgs(args canon.Node) (canon.Node, error) {
	text := args.Append(nil)
	if len(s.Only) > 0 {
		only := &selection{}
		for _, p := range s.Only {
			if _, ok := args.At(p); !ok {
				if s.AllowMissing {
					continue
				}
				return canon.Node{}, &envelopeError{
					msg:  fmt.Sprintf("--only %s matches nothing in the arguments", p),
					hint: "check the pointer, or add --allow-missing",
				}
			}
			only.add(p)
		}
		text = appendSelected(nil, args, only, true)
	}
	doc, err := canon.Parse(text, s.Scheme)
	if err != nil {
		return canon.Node{}, err
	}
	if len(s.Omit) > 0 {
		omit := &selection{}
		for _, p := range s.Omit {
			omit.add(p)
		}
		if doc, err = canon.Parse(appendSelected(nil, doc.Root(), omit, false), s.Scheme); err != nil {
			return canon.Node{}, err
		}
	}
	return doc.Root(), nil
}

// appendSelected writes n, keeping only what sel selects (only) or
// everything but what it selects (!only). Kept members stay in their
// objects and kept elements in their arrays, in order. Pointers that match
// nothing are ignored: an --omit target may be absent, and missing --only
// targets were dealt with before.
func appendSelected(dst []byte, n canon.Node, sel *selection, only bool) []byte {
	if sel == nil || (sel.all && only) || (sel.kids == nil && !only) {
		return n.Append(dst)
	}
	keep := func(k *selection) bool {
		if only {
			return k != nil
		}
		return k == nil || !k.all
	}
	first := true
	sep := func() {
		if !first {
			dst = append(dst, ',')
		}
		first = false
	}
	switch n.Kind() {
	case canon.Object:
		dst = append(dst, '{')
		for _, m := range n.Members() {
			if k := sel.kids[m.Name]; keep(k) {
				sep()
				dst = canon.AppendQuoted(dst, m.Name)
				dst = append(dst, ':')
				dst = appendSelected(dst, m.Value, k, only)
			}
		}
		return append(dst, '}')
	case canon.Array:
		dst = append(dst, '[')
		for i, e := range n.Elements() {
			if k := sel.kids[strconv.Itoa(i)]; keep(k) {
				sep()
				dst = appendSelected(dst, e, k, only)
			}
		}
		return append(dst, ']')
	}
	return n.Append(dst)
}
