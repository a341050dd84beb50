package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

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
	FromSet      bool   // --from was given (flag, IDEMKEY_FROM or config), not defaulted
	Task, Tool   string // from flags, environment or config; may be empty
	Scheme       canon.Scheme
	Only, Omit   []string // RFC 6901 pointers into the arguments
	AllowMissing bool

	// Parsers reused across the lines of a batch: a loaded call is valid
	// until the next call to load.
	outer, inner canon.Parser
	pass         canon.Pass // for quickKey

	// warn, if set, is given the warnings about each call load returns
	// (see loadedCall.warnings); a batch leaves it nil and sums them up.
	warn func(warning)

	// Where Task and Tool came from (--task, IDEMKEY_TASK, …) for
	// messages; empty means the flag.
	taskSrc, toolSrc string

	// tools holds the --only and --omit of each tool whose section in the
	// config file sets only or omit (see toolSelections); any other tool
	// gets Only and Omit. Shared, read only, by the copies of a batch.
	tools map[string]argSelection

	// The names --only and --omit go by in messages: the flag, or the
	// place in the config file's tools section ("" means the flag).
	onlyName, omitName string
}

// argSelection is the --only and --omit that apply to one tool's calls.
type argSelection struct {
	Only, Omit         []string
	onlyName, omitName string
}

// perToolSettings are the settings a config file's tools section may
// hold: the ones a command reads for the tool of each call (anything
// else there is warned about when the file is vetted).
var perToolSettings = map[string]bool{"recover": true, "only": true, "omit": true, "mcp": true, "key-arg": true}

// toolSelections resolves --only and --omit for each tool whose section
// in the config file sets them, as the loader orders them (ForTool): the
// flag, then IDEMKEY_ONLY / IDEMKEY_OMIT, then the tool's section, then
// the file's top level. Each pointer is checked as --only and --omit are,
// the error naming the file and the setting.
func (f *Factory) toolSelections() (map[string]argSelection, error) {
	v := f.Config
	if v == nil || v.file == nil || v.lookup("omit") == nil {
		return nil, nil
	}
	var m map[string]argSelection
	for _, tool := range v.file.toolNames() {
		sec := v.file.tools[tool]
		_, only := sec["only"]
		_, omit := sec["omit"]
		if !only && !omit {
			continue
		}
		t, err := v.ForTool(tool)
		if err != nil {
			return nil, err
		}
		sel := argSelection{Only: t.GetStringSlice("only"), Omit: t.GetStringSlice("omit")}
		if err := checkPointers(t.Source("only"), t.Source("omit"), sel.Only, sel.Omit); err != nil {
			return nil, err
		}
		sel.onlyName, sel.omitName = sectionName(v, t, "only"), sectionName(v, t, "omit")
		if m == nil {
			m = map[string]argSelection{}
		}
		m[tool] = sel
	}
	return m, nil
}

// sectionName is how a per-tool setting is named in messages: its place
// in the tools section, or "" (the flag's name) when it came from
// elsewhere.
func sectionName(top, t *Settings, name string) string {
	if src := t.Source(name); src != top.Source(name) {
		return src
	}
	return ""
}

// checkPointers checks --only and --omit pointers, as usage errors
// naming where each list came from.
func checkPointers(onlySrc, omitSrc string, only, omit []string) error {
	for _, p := range only {
		if err := pointerFlag(onlySrc, p); err != nil {
			return err
		}
	}
	for _, p := range omit {
		if err := pointerFlag(omitSrc, p); err != nil {
			return err
		}
	}
	for _, p := range omit {
		if p == "" {
			if strings.Contains(omitSrc, ": tools.") {
				return usageErrorf("%s: \"\" would drop the whole arguments value", omitSrc)
			}
			return usageErrorf("--omit '' would drop the whole arguments value")
		}
	}
	return nil
}

// forTool returns the spec as it applies to a call of tool: that tool's
// --only and --omit (see toolSelections), or s itself.
func (s *callSpec) forTool(tool string) *callSpec {
	sel, ok := s.tools[tool]
	if !ok {
		return s
	}
	t := *s
	t.Only, t.Omit, t.onlyName, t.omitName = sel.Only, sel.Omit, sel.onlyName, sel.omitName
	return &t
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
		FromSet:      v.IsSet("from"),
		Task:         v.GetString("task"),
		Tool:         v.GetString("tool"),
		taskSrc:      v.Source("task"),
		toolSrc:      v.Source("tool"),
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
	if err := checkPointers(f.Config.Source("only"), f.Config.Source("omit"), s.Only, s.Omit); err != nil {
		return nil, err
	}
	if s.tools, err = f.toolSelections(); err != nil {
		return nil, err
	}
	s.warn = f.printWarning
	if s.From != fromCall && s.Task == "" {
		_, _, err := f.taskTool() // the usage error for a missing task
		return nil, err
	}
	if err := (derive.Call{Task: orX(s.Task), Tool: orX(s.Tool)}).Validate(); err != nil {
		return nil, &UsageError{Err: err}
	}
	return s, nil
}

// pointerFlag checks that p, given with flag (--only, --omit), is an RFC
// 6901 JSON Pointer, as a usage error naming the flag.
func pointerFlag(flag, p string) error {
	if !utf8.ValidString(p) {
		for i := 0; i < len(p); {
			r, size := utf8.DecodeRuneInString(p[i:])
			if r == utf8.RuneError && size == 1 {
				return usageErrorf("%s: invalid JSON pointer %q: byte %d is not UTF-8", flag, p, i+1)
			}
			i += size
		}
	}
	_, err := canon.ParsePointer(p)
	if err == nil {
		return nil
	}
	e := &UsageError{Err: fmt.Errorf("%s: invalid JSON pointer %q: %s", flag, p, err)}
	switch {
	case p[0] != '/':
		e.Err = fmt.Errorf("%s: invalid JSON pointer %q: it must be empty or start with '/'", flag, p)
		e.hint = "write /" + p
		if strings.HasPrefix(flag, "--") {
			e.hint = "write " + flag + " /" + p
		}
	case strings.Contains(p, "~"):
		e.hint = "in a pointer, '~' is written ~0 and '/' ~1: /a~1b is the member \"a/b\", /a~0b the member \"a~b\""
	}
	return e
}

// orFlag is src, or flag when src is empty (a spec built by hand).
func orFlag(src, flag string) string {
	if src == "" {
		return flag
	}
	return src
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

	// The --only and --omit applied: the tool's, from the config file's
	// tools section, or the top-level ones (see callSpec.forTool).
	Only, Omit []string
	omitName   string // how the omit list is named in messages ("": --omit)
	OmitMissed []int  // indices into Omit of the pointers that matched nothing

	// Read as bare arguments by default, the input is shaped like an
	// envelope: the --from that reads it, and what it looks like.
	Shape, ShapeWhat string
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
	switch {
	case lc.From == fromAuto:
		lc.From = detect(root)
	case lc.From == fromArgs && !s.FromSet:
		if shape, what := argsShape(root); shape != fromArgs {
			lc.Shape, lc.ShapeWhat = shape, what
		}
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
			return lc, &envelopeError{msg: fmt.Sprintf("%s %q contradicts the call record's task %q", orFlag(s.taskSrc, "--task"), task, t)}
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
		if calls, ok := root.Get("tool_calls"); ok {
			// An assistant message: {"role":"assistant","tool_calls":[…]}.
			if fn, err = s.pick(calls, "OpenAI assistant message", "tool_calls", func(canon.Node) bool { return true }, openAICallName); err != nil {
				return lc, err
			}
		}
		if f, ok := fn.Get("function"); ok && f.Kind() == canon.Object {
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
		block := root
		if content, ok := root.Get("content"); ok && root.Kind() == canon.Object && !isType(root, "tool_use") {
			// A message: {"role":"assistant","content":[…, tool_use blocks]}.
			if block, err = s.pick(content, "Anthropic message", "content", isToolUse, anthropicBlockName); err != nil {
				return lc, err
			}
		}
		if tool, err = stringMember(block, "name", "Anthropic tool_use block"); err != nil {
			return lc, err
		}
		var ok bool
		if args, ok = block.Get("input"); !ok {
			return lc, envErr("Anthropic tool_use block has no \"input\" member")
		}
	}
	switch {
	case tool == "":
		tool = s.Tool
	case s.Tool != "" && s.Tool != tool:
		return lc, &envelopeError{
			msg:  fmt.Sprintf("%s %q contradicts the tool name %q in the %s input", orFlag(s.toolSrc, "--tool"), s.Tool, tool, lc.From),
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
	if ts := s.forTool(tool); len(ts.Only) > 0 || len(ts.Omit) > 0 {
		sel, missed, err := ts.selectArgs(args)
		if err != nil {
			return lc, err
		}
		lc.Call.Args, lc.Selected, lc.OmitMissed = sel, true, missed
		lc.Only, lc.Omit, lc.omitName = ts.Only, ts.Omit, ts.omitName
	}
	if s.warn != nil {
		for _, w := range lc.warnings(s) {
			s.warn(w)
		}
	}
	return lc, nil
}

// warning is something about an input that was used, for standard error.
type warning struct{ msg, hint string }

// warnings returns what the user should know about a loaded call: an
// envelope read as bare arguments, --omit pointers that matched nothing.
func (lc *loadedCall) warnings(s *callSpec) []warning {
	var ws []warning
	if lc.Shape != "" {
		ws = append(ws, shapeWarning(lc.Shape, lc.ShapeWhat, "the input looks like", ""))
	}
	for _, i := range lc.OmitMissed {
		ws = append(ws, omitWarning(lc.omitName, lc.Omit[i], lc.Args, ""))
	}
	return ws
}

// shapeWarning says that input shaped like an envelope (what, read with
// --from from) was read as bare arguments.
func shapeWarning(from, what, lead, where string) warning {
	if from == fromCall {
		return warning{
			msg:  fmt.Sprintf("%s %s%s, read as bare arguments: the key covers the whole record, not the call it records", lead, what, where),
			hint: "give --from call to key the recorded call (its task id too), or --from args to key the input as it is",
		}
	}
	return warning{
		msg:  fmt.Sprintf("%s %s%s, read as bare arguments: the key covers the whole envelope, its ids too, so a retry may get a new key", lead, what, where),
		hint: fmt.Sprintf("give --from %s to key the tool call, or --from args to key the input as it is", from),
	}
}

// omitWarning says that omit pointer p, named name ("": --omit), matched
// nothing (where: "" for one input, or which lines of a batch).
func omitWarning(name, p string, args canon.Node, where string) warning {
	w := warning{
		msg:  fmt.Sprintf("%s %s matches nothing in the arguments%s: the key is derived as if it were not given", orFlag(name, "--omit"), p, where),
		hint: "check the pointer: a volatile field left in gives every retry a new key",
	}
	if h := argsPrefixHint("--omit", p, args); h != "" {
		w.hint = h
	}
	return w
}

// detect names the envelope format of an input for --from auto. A call
// record is never detected: it carries a task id, and the task id must not
// come from input unless asked for with --from call.
func detect(root canon.Node) string {
	from, _ := envelopeShape(root)
	return from
}

// envelopeShape names the envelope an input is shaped like, and the --from
// that reads it, or returns fromArgs and "".
func envelopeShape(root canon.Node) (from, what string) {
	if root.Kind() != canon.Object {
		return fromArgs, ""
	}
	if _, ok := root.Get("jsonrpc"); ok && str(root, "method") == "tools/call" {
		return fromMCP, "an MCP tools/call request"
	}
	if isOpenAICall(root) {
		if str(root, "type") == "function_call" {
			return fromOpenAI, "an OpenAI function_call item"
		}
		return fromOpenAI, "an OpenAI tool call"
	}
	if calls, ok := root.Get("tool_calls"); ok && calls.Kind() == canon.Array {
		for _, c := range calls.Elements() {
			if isOpenAICall(c) {
				return fromOpenAI, "an OpenAI assistant message with tool_calls"
			}
		}
	}
	if isToolUse(root) {
		return fromAnthropic, "an Anthropic tool_use block"
	}
	if content, ok := root.Get("content"); ok && content.Kind() == canon.Array {
		for _, b := range content.Elements() {
			if isToolUse(b) {
				return fromAnthropic, "an Anthropic message with a tool_use block"
			}
		}
	}
	return fromArgs, ""
}

// argsShape is envelopeShape for input read as bare arguments by default,
// where a call record {"task","tool","args"} is an envelope too: keyed as
// it is, its task and tool are hashed as arguments, inside the --task and
// --tool given. (--from auto never takes a record: see detect.)
func argsShape(root canon.Node) (from, what string) {
	if from, what = envelopeShape(root); from != fromArgs {
		return from, what
	}
	if root.Kind() == canon.Object && str(root, "task") != "" && str(root, "tool") != "" {
		if _, ok := root.Get("args"); ok {
			return fromCall, `a call record {"task","tool","args"}`
		}
	}
	return fromArgs, ""
}

// mayBeEnvelope is a quick test, before parsing, that input may be shaped
// like an envelope: every shape argsShape knows has one of these member
// names or values, or all of a call record's names (unless written with
// escapes, which a logged envelope never is).
func mayBeEnvelope(data []byte) bool {
	for _, s := range []string{`"jsonrpc"`, `"function`, `"tool_calls"`, `"tool_use"`} {
		if bytes.Contains(data, []byte(s)) {
			return true
		}
	}
	return bytes.Contains(data, []byte(`"task"`)) && bytes.Contains(data, []byte(`"tool"`)) && bytes.Contains(data, []byte(`"args"`))
}

// str returns n's string member name, or "".
func str(n canon.Node, name string) string {
	if n.Kind() != canon.Object {
		return ""
	}
	if v, ok := n.Get(name); ok && v.Kind() == canon.String {
		return v.Text()
	}
	return ""
}

func isType(n canon.Node, t string) bool { return str(n, "type") == t }

// isOpenAICall: a Chat Completions tool call {"function":{"name",
// "arguments"}} or a Responses function_call item {"type":"function_call",
// "name","arguments":"…"}.
func isOpenAICall(n canon.Node) bool {
	if n.Kind() != canon.Object {
		return false
	}
	if fn, ok := n.Get("function"); ok && fn.Kind() == canon.Object {
		if _, ok := fn.Get("arguments"); ok && str(fn, "name") != "" {
			return true
		}
	}
	if isType(n, "function_call") && str(n, "name") != "" {
		if a, ok := n.Get("arguments"); ok && a.Kind() == canon.String {
			return true
		}
	}
	return false
}

// isToolUse: an Anthropic {"type":"tool_use","name","input"} block.
func isToolUse(n canon.Node) bool {
	if !isType(n, "tool_use") || str(n, "name") == "" {
		return false
	}
	_, ok := n.Get("input")
	return ok
}

func openAICallName(n canon.Node) (name, id string) {
	if fn, ok := n.Get("function"); ok {
		return str(fn, "name"), str(n, "id")
	}
	return str(n, "name"), str(n, "call_id")
}

func anthropicBlockName(n canon.Node) (name, id string) { return str(n, "name"), str(n, "id") }

// pick chooses the tool call of a message (what) from its list of calls,
// or of content blocks of which isCall tells the calls: the only one, or
// the only one named --tool; otherwise an error that lists them.
func (s *callSpec) pick(list canon.Node, what, member string, isCall func(canon.Node) bool, name func(canon.Node) (string, string)) (canon.Node, error) {
	if list.Kind() != canon.Array {
		return canon.Node{}, envErr("the %s's %q must be an array, not %s", what, member, list.Kind())
	}
	var calls, named []canon.Node
	for _, e := range list.Elements() {
		if isCall(e) {
			calls = append(calls, e)
			if n, _ := name(e); n == s.Tool {
				named = append(named, e)
			}
		}
	}
	switch {
	case len(calls) == 0:
		return canon.Node{}, envErr("the %s holds no tool call", what)
	case len(calls) == 1:
		return calls[0], nil // a --tool that differs is reported as for one call
	case s.Tool != "" && len(named) == 1:
		return named[0], nil
	}
	var items []string
	for _, c := range calls {
		n, id := name(c)
		item := printable(n)
		if id != "" {
			item += " (" + printable(id) + ")"
		}
		items = append(items, item)
	}
	listed := strings.Join(items, ", ")
	switch {
	case s.Tool == "":
		return canon.Node{}, &envelopeError{
			msg:  fmt.Sprintf("the %s holds %d tool calls: %s", what, len(calls), listed),
			hint: "give --tool NAME to choose the call to key",
		}
	case len(named) == 0:
		return canon.Node{}, &envelopeError{
			msg:  fmt.Sprintf("--tool %s names none of the %d tool calls of the %s: %s", printable(s.Tool), len(calls), what, listed),
			hint: "give --tool one of those names",
		}
	}
	return canon.Node{}, &envelopeError{
		msg:  fmt.Sprintf("--tool %s names %d of the %d tool calls of the %s: %s", printable(s.Tool), len(named), len(calls), what, listed),
		hint: "each call has its own key: give idemkey one call at a time",
	}
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
	toks, _ := canon.ParsePointer(pointer) // checked by pointerFlag
	for _, tok := range toks {
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
// selected document: that, not the original, is what is hashed; and the
// indices of the --omit pointers that matched nothing in it.
func (s *callSpec) selectArgs(args canon.Node) (canon.Node, []int, error) {
	text := args.Append(nil)
	if len(s.Only) > 0 {
		only := &selection{}
		for _, p := range s.Only {
			if _, ok := args.At(p); !ok {
				if s.AllowMissing {
					continue
				}
				hint := "check the pointer, or add --allow-missing"
				if h := argsPrefixHint("--only", p, args); h != "" {
					hint = h
				}
				return canon.Node{}, nil, &envelopeError{
					msg:  fmt.Sprintf("%s %s matches nothing in the arguments", orFlag(s.onlyName, "--only"), p),
					hint: hint,
				}
			}
			only.add(p)
		}
		text = appendSelected(nil, args, only, true)
	}
	doc, err := canon.Parse(text, s.Scheme)
	if err != nil {
		return canon.Node{}, nil, err
	}
	var missed []int
	if len(s.Omit) > 0 {
		omit := &selection{}
		for i, p := range s.Omit {
			if _, ok := doc.Root().At(p); !ok {
				missed = append(missed, i)
			}
			omit.add(p)
		}
		if doc, err = canon.Parse(appendSelected(nil, doc.Root(), omit, false), s.Scheme); err != nil {
			return canon.Node{}, nil, err
		}
	}
	return doc.Root(), missed, nil
}

// argsPrefixHint explains a pointer that starts with /args, as diff
// prints pointers into a call record: --only and --omit point into the
// arguments themselves.
func argsPrefixHint(flag, p string, args canon.Node) string {
	rest, ok := strings.CutPrefix(p, "/args")
	if !ok || (rest != "" && rest[0] != '/') {
		return ""
	}
	if _, ok := args.At(rest); ok && rest != "" {
		return fmt.Sprintf("pointers start inside the arguments, not at a call record's \"args\": %s %s matches", flag, rest)
	}
	return "pointers start inside the arguments, not at a call record's \"args\": drop the /args"
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
