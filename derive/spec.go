package derive

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/idemkey/idemkey/canon"
)

// The shapes a tool call can arrive in (idemkey's --from).
const (
	FromArgs      = "args"      // the bare arguments value
	FromCall      = "call"      // a call record {"task":…,"tool":…,"args":…}
	FromMCP       = "mcp"       // a JSON-RPC tools/call request (MCP 2025-06-18, tools/call)
	FromOpenAI    = "openai"    // a Chat Completions tool call or message, a Responses function_call item or whole response
	FromAnthropic = "anthropic" // a tool_use content block
	FromAuto      = "auto"      // any shape Shape knows (an envelope, a call record); otherwise args
)

// FromNames lists the shapes, in the order help text shows them.
var FromNames = []string{FromArgs, FromCall, FromMCP, FromOpenAI, FromAnthropic, FromAuto}

// ValidFrom reports whether s names a shape.
func ValidFrom(s string) bool {
	for _, n := range FromNames {
		if s == n {
			return true
		}
	}
	return false
}

// Error is input, or a setting, that cannot be used: a message and, where
// it helps, a hint for the reader.
type Error struct {
	Msg    string
	Advice string
	// Setting marks a mistake in the settings (a pointer given with
	// --only), not in the input.
	Setting bool
}

func (e *Error) Error() string { return e.Msg }

// Hint is the suggestion for the reader, or "".
func (e *Error) Hint() string { return e.Advice }

func inputErrorf(format string, args ...any) *Error {
	return &Error{Msg: fmt.Sprintf(format, args...)}
}

// Selection is the --only and --omit that apply to one tool's calls, and
// the names they go by in messages ("" means the flags, --only and --omit).
type Selection struct {
	Only, Omit         []string
	OnlyName, OmitName string
}

// Spec says how to turn input bytes into a call: the shape it arrives in,
// the task and tool given beside it, and the parts of the arguments that
// make up the key.
type Spec struct {
	From         string
	FromSet      bool   // From was chosen by the user, not defaulted
	Task, Tool   string // given beside the input; may be empty
	Scheme       canon.Scheme
	Only, Omit   []string // RFC 6901 pointers into the arguments
	AllowMissing bool
	// NoTask: the task takes no part in what is wanted (canon --from
	// prints the arguments alone): none is needed, and a record's is not
	// checked against Task.
	NoTask bool

	// How Task, Tool, Only and Omit are named in messages ("" means the
	// flags: --task, --tool, --only, --omit).
	TaskName, ToolName, OnlyName, OmitName string

	// Tools holds the selection of each tool that has its own (a config
	// file's tools section); any other tool gets Only and Omit. Shared,
	// read only, by the copies of a spec.
	Tools map[string]Selection

	// Warn, if set, is given the warnings about each call Load returns
	// (see Loaded.Warnings); a batch leaves it nil and sums them up.
	Warn func(Warning)

	// Parsers reused across the inputs of a batch: a loaded call is valid
	// until the next call to Load. Copy gives a copy its own.
	outer, inner canon.Parser
}

// Copy returns a copy of s with parsers of its own, for another goroutine
// or a call that must outlive the next Load.
func (s *Spec) Copy() *Spec {
	c := *s
	c.outer, c.inner = canon.Parser{}, canon.Parser{}
	return &c
}

// ForTool returns the spec as it applies to a call of tool: that tool's
// selection (see Tools), or s itself.
func (s *Spec) ForTool(tool string) *Spec {
	sel, ok := s.Tools[tool]
	if !ok {
		return s
	}
	t := *s
	t.Only, t.Omit, t.OnlyName, t.OmitName = sel.Only, sel.Omit, sel.OnlyName, sel.OmitName
	return &t
}

// Loaded is a call read from input.
type Loaded struct {
	Call     Call
	Args     canon.Node // the whole arguments value, before --only and --omit
	From     string     // the shape the input was read as (auto resolved)
	Selected bool       // --only or --omit chose part of the arguments

	// The selection applied: the tool's (see Spec.Tools) or the spec's.
	Only, Omit []string
	OnlyName   string // how the only list is named in messages ("": --only)
	OmitName   string // how the omit list is named in messages ("": --omit)
	OmitMissed []int  // indices into Omit of the pointers that matched nothing

	// The input, read as bare arguments without being asked to, has
	// another shape: the --from that reads it, and what it looks like.
	Shape, ShapeWhat string
}

// Load parses one input (a file, or one line of a batch) into a call.
// Missing task or tool names are ErrEmptyTask and ErrEmptyTool; problems
// with the input are *Error or *canon.Error.
func (s *Spec) Load(data []byte) (Loaded, error) {
	doc, err := s.outer.Parse(data, s.Scheme)
	if err != nil {
		return Loaded{}, err
	}
	root := doc.Root()
	lc := Loaded{From: s.From}
	if s.From == FromAuto || !s.FromSet {
		// auto reads every shape Shape knows, the call record too; input
		// taken as bare arguments without being asked to (the default,
		// or auto finding no shape) is warned about when it has one. Only
		// --from args given by the user takes it as it is, silently.
		shape, what := Shape(root)
		if s.From == FromAuto {
			lc.From = shape
		}
		if lc.From == FromArgs && shape != FromArgs {
			lc.Shape, lc.ShapeWhat = shape, what
		}
	}
	task, tool := s.Task, ""
	var args canon.Node
	switch lc.From {
	case FromArgs:
		args = root
	case FromCall:
		task, tool, args, err = s.callRecord(root, data)
	case FromMCP:
		tool, args, err = s.mcpCall(root)
	case FromOpenAI:
		tool, args, err = s.openAICall(root, data)
	case FromAnthropic:
		tool, args, err = s.anthropicCall(root)
	}
	if err != nil {
		return lc, err
	}
	if err := s.finish(&lc, Call{Task: task, Tool: tool, Args: args}); err != nil {
		return lc, err
	}
	if s.Warn != nil {
		for _, w := range lc.Warnings() {
			s.Warn(w)
		}
	}
	return lc, nil
}

// finish checks the call's tool against s.Tool, validates it and applies
// the selection.
func (s *Spec) finish(lc *Loaded, c Call) error {
	switch {
	case c.Tool == "":
		c.Tool = s.Tool
	case s.Tool != "" && s.Tool != c.Tool:
		return &Error{
			Msg:    fmt.Sprintf("%s %q contradicts the tool name %q in the %s input", orName(s.ToolName, "--tool"), s.Tool, c.Tool, lc.From),
			Advice: "drop --tool, or check that the right call was logged",
		}
	}
	lc.Call, lc.Args = c, c.Args
	v := c
	if s.NoTask && v.Task == "" {
		v.Task = "-"
	}
	if err := v.Validate(); err != nil {
		return err
	}
	if ts := s.ForTool(c.Tool); len(ts.Only) > 0 || len(ts.Omit) > 0 {
		sel, missed, err := ts.SelectArgs(c.Args)
		if err != nil {
			return err
		}
		lc.Call.Args, lc.Selected, lc.OmitMissed = sel, true, missed
		lc.Only, lc.Omit, lc.OnlyName, lc.OmitName = ts.Only, ts.Omit, ts.OnlyName, ts.OmitName
	}
	return nil
}

// callRecord reads a call record {"task","tool","args"}: its task must
// agree with s.Task when that is given. A record without "args" may carry
// the arguments' text in "args_text" (a JSON string, as conform's requests
// and the vectors do where the arguments cannot be written inline).
func (s *Spec) callRecord(root canon.Node, data []byte) (task, tool string, args canon.Node, err error) {
	if root.Kind() != canon.Object {
		return "", "", args, inputErrorf("a call record must be an object {\"task\",\"tool\",\"args\"}, not %s", root.Kind())
	}
	if task, err = stringMember(root, "task", "call record"); err != nil {
		return "", "", args, err
	}
	if s.Task != "" && s.Task != task {
		return "", "", args, inputErrorf("%s %q contradicts the call record's task %q", orName(s.TaskName, "--task"), s.Task, task)
	}
	if tool, err = stringMember(root, "tool", "call record"); err != nil {
		return "", "", args, err
	}
	var ok bool
	if args, ok = root.Get("args"); ok {
		return task, tool, args, nil
	}
	text, ok := root.Get("args_text")
	if !ok {
		return "", "", args, inputErrorf("call record has no \"args\" member")
	}
	if text.Kind() != canon.String {
		return "", "", args, inputErrorf("call record \"args_text\" must be a JSON string, not %s", text.Kind())
	}
	args, err = s.argumentsString(text, "args_text", data)
	return task, tool, args, err
}

// mcpCall reads a JSON-RPC tools/call request: {"params":{"name",
// "arguments"}}, where an absent arguments member means {}.
func (s *Spec) mcpCall(root canon.Node) (tool string, args canon.Node, err error) {
	params, ok := root.Get("params")
	if !ok || params.Kind() != canon.Object {
		return "", args, inputErrorf("not an MCP tools/call request: no \"params\" object")
	}
	if m, ok := root.Get("method"); ok && (m.Kind() != canon.String || m.Text() != "tools/call") {
		return "", args, inputErrorf("MCP request method is %s, not \"tools/call\"", m.Raw())
	}
	if tool, err = stringMember(params, "name", "MCP params"); err != nil {
		return "", args, err
	}
	if args, ok = params.Get("arguments"); !ok {
		empty, _ := canon.Parse([]byte("{}"), s.Scheme)
		args = empty.Root()
	}
	return tool, args, nil
}

// openAICall reads an OpenAI tool call, function_call item, assistant
// message or Responses API response (data is the whole input, for
// positions in errors).
func (s *Spec) openAICall(root canon.Node, data []byte) (tool string, args canon.Node, err error) {
	fn := root
	if calls, ok := root.Get("tool_calls"); ok {
		// An assistant message: {"role":"assistant","tool_calls":[…]}.
		if fn, err = s.pick(calls, "OpenAI assistant message", "tool_calls", func(canon.Node) bool { return true }, OpenAICallName); err != nil {
			return "", args, err
		}
	} else if output, ok := root.Get("output"); ok && !IsType(root, "function_call") {
		// A whole Responses API response: {"object":"response","output":[…]},
		// its function_call items among messages and reasoning.
		if fn, err = s.pick(output, "OpenAI response", "output", IsOpenAICall, OpenAICallName); err != nil {
			return "", args, err
		}
	}
	if f, ok := fn.Get("function"); ok && f.Kind() == canon.Object {
		fn = f // Chat Completions: {"id","type":"function","function":{"name","arguments"}}
	}
	if tool, err = stringMember(fn, "name", "OpenAI tool call"); err != nil {
		return "", args, err
	}
	a, ok := fn.Get("arguments")
	if !ok {
		return "", args, inputErrorf("OpenAI tool call has no \"arguments\" member")
	}
	if a.Kind() != canon.String {
		return "", args, inputErrorf("OpenAI tool call \"arguments\" must be a JSON string, not %s", a.Kind())
	}
	args, err = s.argumentsString(a, "arguments", data)
	return tool, args, err
}

// argumentsString parses the JSON text inside an "arguments" (or
// "args_text", the member's name) string, as JSON.parse parses the string
// the first JSON.parse gave: an escaped lone surrogate in the string is a
// character of the text.
func (s *Spec) argumentsString(a canon.Node, member string, data []byte) (canon.Node, error) {
	text, escaped := canon.EscapeSurrogates([]byte(a.Text()))
	inner, err := s.inner.Parse(text, s.Scheme)
	if err == nil {
		return inner.Root(), nil
	}
	var ce *canon.Error
	if !errors.As(err, &ce) {
		return canon.Node{}, err
	}
	// Report the position of the string in the input, and the position
	// inside the string in the message: in the string's own text, where
	// each escaped surrogate was one character, not six.
	col := ce.Column
	for _, at := range escaped {
		if at < ce.Offset && !bytes.Contains(text[at:ce.Offset], []byte{'\n'}) {
			col -= 5
		}
	}
	line, c := canon.Position(data, a.Offset())
	return canon.Node{}, &canon.Error{
		Offset: a.Offset(), Line: line, Column: c, Pointer: "",
		Msg:  fmt.Sprintf("%q string is not valid JSON: %s (at %d:%d of the string)", member, ce.Msg, ce.Line, col),
		Hint: ce.Hint,
	}
}

// anthropicCall reads an Anthropic tool_use block, or a message holding
// tool_use blocks.
func (s *Spec) anthropicCall(root canon.Node) (tool string, args canon.Node, err error) {
	block := root
	if content, ok := root.Get("content"); ok && root.Kind() == canon.Object && !IsType(root, "tool_use") {
		// A message: {"role":"assistant","content":[…, tool_use blocks]}.
		if block, err = s.pick(content, "Anthropic message", "content", IsToolUse, AnthropicBlockName); err != nil {
			return "", args, err
		}
	}
	if tool, err = stringMember(block, "name", "Anthropic tool_use block"); err != nil {
		return "", args, err
	}
	var ok bool
	if args, ok = block.Get("input"); !ok {
		return "", args, inputErrorf("Anthropic tool_use block has no \"input\" member")
	}
	return tool, args, nil
}

// SelectionText names the selection the key was derived under, as a
// reader would type or find it ("--only /amount, /to; --omit /ts", or a
// config file's tools section), or "" when the key covers the whole
// arguments.
func (lc *Loaded) SelectionText() string {
	if !lc.Selected {
		return ""
	}
	var parts []string
	if len(lc.Only) > 0 {
		parts = append(parts, orName(lc.OnlyName, "--only")+" "+strings.Join(lc.Only, ", "))
	}
	if len(lc.Omit) > 0 {
		parts = append(parts, orName(lc.OmitName, "--omit")+" "+strings.Join(lc.Omit, ", "))
	}
	return strings.Join(parts, "; ")
}

// Warning is something about an input that was used, for the reader.
type Warning struct{ Msg, Hint string }

// Warnings returns what the user should know about a loaded call: input
// of another shape read as bare arguments, --omit pointers that matched
// nothing.
func (lc *Loaded) Warnings() []Warning {
	var ws []Warning
	if lc.Shape != "" {
		ws = append(ws, ShapeWarning(lc.Shape, lc.ShapeWhat, "the input looks like"))
	}
	for _, i := range lc.OmitMissed {
		ws = append(ws, OmitWarning(lc.OmitName, lc.Omit[i], lc.Args))
	}
	return ws
}

// ShapeWarning says that input shaped like what (read with --from from)
// was read as bare arguments; lead opens the message.
func ShapeWarning(from, what, lead string) Warning {
	if from == FromCall {
		return Warning{
			Msg:  fmt.Sprintf("%s %s, read as bare arguments: the key covers the whole record, not the call it records", lead, what),
			Hint: "give --from call to key the recorded call (its task id too), or --from args to key the input as it is",
		}
	}
	return Warning{
		Msg:  fmt.Sprintf("%s %s, read as bare arguments: the key covers the whole envelope, its ids too, so a retry may get a new key", lead, what),
		Hint: fmt.Sprintf("give --from %s to key the tool call, or --from args to key the input as it is", from),
	}
}

// OmitWarning says that omit pointer p, named name ("": --omit), matched
// nothing in args.
func OmitWarning(name, p string, args canon.Node) Warning {
	w := Warning{
		Msg:  fmt.Sprintf("%s %s matches nothing in the arguments: the key is derived as if it were not given", orName(name, "--omit"), p),
		Hint: "check the pointer: a volatile field left in gives every retry a new key",
	}
	if h := ArgsPrefixHint("--omit", p, args); h != "" {
		w.Hint = h
	}
	return w
}

// Shape names the shape of an input, the --from that reads it as a call,
// and what it looks like; or returns FromArgs and "". It knows every
// envelope and the call record: --from auto reads what it names, and an
// input taken as bare arguments without being asked is warned about when
// it names one.
func Shape(root canon.Node) (from, what string) {
	if from, what = EnvelopeShape(root); from != FromArgs {
		return from, what
	}
	if IsCallRecord(root) {
		return FromCall, `a call record {"task","tool","args"}`
	}
	return FromArgs, ""
}

// IsCallRecord reports whether root is a call record: an object with a
// non-empty string "task" and "tool" and an "args" member.
func IsCallRecord(root canon.Node) bool {
	if root.Kind() != canon.Object || StringAt(root, "task") == "" || StringAt(root, "tool") == "" {
		return false
	}
	_, ok := root.Get("args")
	return ok
}

// EnvelopeShape names the model or protocol envelope an input is shaped
// like (MCP, OpenAI, Anthropic), and the --from that reads it, or returns
// FromArgs and "".
func EnvelopeShape(root canon.Node) (from, what string) {
	if root.Kind() != canon.Object {
		return FromArgs, ""
	}
	if _, ok := root.Get("jsonrpc"); ok && StringAt(root, "method") == "tools/call" {
		return FromMCP, "an MCP tools/call request"
	}
	if IsOpenAICall(root) {
		if StringAt(root, "type") == "function_call" {
			return FromOpenAI, "an OpenAI function_call item"
		}
		return FromOpenAI, "an OpenAI tool call"
	}
	if anyElement(root, "tool_calls", IsOpenAICall) {
		return FromOpenAI, "an OpenAI assistant message with tool_calls"
	}
	if anyElement(root, "output", IsOpenAICall) {
		return FromOpenAI, "an OpenAI response with a function_call item"
	}
	if IsToolUse(root) {
		return FromAnthropic, "an Anthropic tool_use block"
	}
	if anyElement(root, "content", IsToolUse) {
		return FromAnthropic, "an Anthropic message with a tool_use block"
	}
	return FromArgs, ""
}

// anyElement reports whether n's member name is an array with an element
// for which is holds.
func anyElement(n canon.Node, name string, is func(canon.Node) bool) bool {
	list, ok := n.Get(name)
	if !ok || list.Kind() != canon.Array {
		return false
	}
	for _, e := range list.Elements() {
		if is(e) {
			return true
		}
	}
	return false
}

// ShapeLook returns the text of data (a call's arguments, read whole by
// the one pass) to look at for a shape warning: nil unless its root is an
// object; for a large object whose bulk is one array (canon.Outline), the
// outline with that array emptied, which Shape reads as it reads the
// whole, unless the array holds the calls, blocks or items it looks into.
func ShapeLook(data []byte) []byte {
	i := 0
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	if i == len(data) || data[i] != '{' {
		return nil
	}
	if len(data) >= canon.ParallelMin {
		if outline, name, ok := canon.Outline(data); ok && name != "tool_calls" && name != "content" && name != "output" {
			return outline
		}
	}
	return data
}

// MayHaveShape is a quick test, before parsing, that input may have a
// shape Shape knows: every one has one of these member names or values,
// or all of a call record's names (unless written with escapes, which a
// logged envelope never is).
func MayHaveShape(data []byte) bool {
	for _, s := range []string{`"jsonrpc"`, `"function`, `"tool_calls"`, `"tool_use"`} {
		if bytes.Contains(data, []byte(s)) {
			return true
		}
	}
	return bytes.Contains(data, []byte(`"task"`)) && bytes.Contains(data, []byte(`"tool"`)) && bytes.Contains(data, []byte(`"args"`))
}

// ShapeOf parses data and names its shape (see Shape), reusing s's
// parser: FromArgs for input that does not parse.
func (s *Spec) ShapeOf(data []byte) (from, what string) {
	doc, err := s.outer.Parse(data, s.Scheme)
	if err != nil {
		return FromArgs, ""
	}
	return Shape(doc.Root())
}

// StringAt returns n's string member name, or "".
func StringAt(n canon.Node, name string) string {
	if n.Kind() != canon.Object {
		return ""
	}
	if v, ok := n.Get(name); ok && v.Kind() == canon.String {
		return v.Text()
	}
	return ""
}

// IsType reports whether n's "type" member is the string t.
func IsType(n canon.Node, t string) bool { return StringAt(n, "type") == t }

// IsOpenAICall reports whether n is an OpenAI tool call: a Chat
// Completions {"function":{"name","arguments"}} or a Responses
// function_call item with a string "arguments".
func IsOpenAICall(n canon.Node) bool {
	if n.Kind() != canon.Object {
		return false
	}
	if fn, ok := n.Get("function"); ok && fn.Kind() == canon.Object {
		if _, ok := fn.Get("arguments"); ok && StringAt(fn, "name") != "" {
			return true
		}
	}
	if IsType(n, "function_call") && StringAt(n, "name") != "" {
		if a, ok := n.Get("arguments"); ok && a.Kind() == canon.String {
			return true
		}
	}
	return false
}

// IsToolUse reports whether n is an Anthropic {"type":"tool_use","name",
// "input"} block.
func IsToolUse(n canon.Node) bool {
	if !IsType(n, "tool_use") || StringAt(n, "name") == "" {
		return false
	}
	_, ok := n.Get("input")
	return ok
}

// OpenAICallName returns the tool name and call id of an OpenAI tool call
// or function_call item.
func OpenAICallName(n canon.Node) (name, id string) {
	if fn, ok := n.Get("function"); ok {
		return StringAt(fn, "name"), StringAt(n, "id")
	}
	return StringAt(n, "name"), StringAt(n, "call_id")
}

// AnthropicBlockName returns the tool name and id of a tool_use block.
func AnthropicBlockName(n canon.Node) (name, id string) {
	return StringAt(n, "name"), StringAt(n, "id")
}

// pick chooses the tool call of a message (what) from its list of calls,
// or of content blocks of which isCall tells the calls: the only one, or
// the only one named s.Tool; otherwise an error that lists them.
func (s *Spec) pick(list canon.Node, what, member string, isCall func(canon.Node) bool, name func(canon.Node) (string, string)) (canon.Node, error) {
	if list.Kind() != canon.Array {
		return canon.Node{}, inputErrorf("the %s's %q must be an array, not %s", what, member, list.Kind())
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
		return canon.Node{}, inputErrorf("the %s holds no tool call", what)
	case len(calls) == 1:
		return calls[0], nil // a --tool that differs is reported as for one call
	case s.Tool != "" && len(named) == 1:
		return named[0], nil
	}
	return canon.Node{}, s.pickError(calls, named, what, name)
}

// pickError says why none of a message's tool calls was chosen.
func (s *Spec) pickError(calls, named []canon.Node, what string, name func(canon.Node) (string, string)) error {
	var items []string
	for _, c := range calls {
		n, id := name(c)
		item := Printable(n)
		if id != "" {
			item += " (" + Printable(id) + ")"
		}
		items = append(items, item)
	}
	listed := strings.Join(items, ", ")
	switch {
	case s.Tool == "":
		return &Error{
			Msg:    fmt.Sprintf("the %s holds %d tool calls: %s", what, len(calls), listed),
			Advice: "give --tool NAME to choose the call to key",
		}
	case len(named) == 0:
		return &Error{
			Msg:    fmt.Sprintf("--tool %s names none of the %d tool calls of the %s: %s", Printable(s.Tool), len(calls), what, listed),
			Advice: "give --tool one of those names",
		}
	}
	return &Error{
		Msg:    fmt.Sprintf("--tool %s names %d of the %d tool calls of the %s: %s", Printable(s.Tool), len(named), len(calls), what, listed),
		Advice: "each call has its own key: give idemkey one call at a time",
	}
}

func stringMember(n canon.Node, name, what string) (string, error) {
	if n.Kind() != canon.Object {
		return "", inputErrorf("%s must be an object, not %s", what, n.Kind())
	}
	v, ok := n.Get(name)
	if !ok {
		return "", inputErrorf("%s has no %q member", what, name)
	}
	if v.Kind() != canon.String {
		return "", inputErrorf("%s %q must be a string, not %s", what, name, v.Kind())
	}
	return v.Text(), nil
}

// Printable shows a text as it is when it is short, UTF-8 and made of
// printable characters and spaces only (U+E000 or U+2028 would be
// invisible); otherwise quoted, and cut.
func Printable(s string) string {
	plain := utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return r != ' ' && !strconv.IsPrint(r) })
	if plain && len(s) <= 200 {
		return s
	}
	if len(s) > 200 {
		cut := 160
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return fmt.Sprintf("%q… (%d bytes)", s[:cut], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// orName is name, or def when name is empty.
func orName(name, def string) string {
	if name == "" {
		return def
	}
	return name
}

// CheckPointer checks that p, named name (--only, --omit, or a place in a
// config file), is an RFC 6901 JSON Pointer; the error is a Setting.
func CheckPointer(name, p string) error {
	if !utf8.ValidString(p) {
		for i := 0; i < len(p); {
			r, size := utf8.DecodeRuneInString(p[i:])
			if r == utf8.RuneError && size == 1 {
				return &Error{Msg: fmt.Sprintf("%s: invalid JSON pointer %q: byte %d is not UTF-8", name, p, i+1), Setting: true}
			}
			i += size
		}
	}
	_, err := canon.ParsePointer(p)
	if err == nil {
		return nil
	}
	e := &Error{Msg: fmt.Sprintf("%s: invalid JSON pointer %q: %s", name, p, err), Setting: true}
	switch {
	case p[0] != '/':
		e.Msg = fmt.Sprintf("%s: invalid JSON pointer %q: it must be empty or start with '/'", name, p)
		e.Advice = "write /" + p
		if strings.HasPrefix(name, "--") {
			e.Advice = "write " + name + " /" + p
		}
	case strings.Contains(p, "~"):
		e.Advice = "in a pointer, '~' is written ~0 and '/' ~1: /a~1b is the member \"a/b\", /a~0b the member \"a~b\""
	}
	return e
}

// CheckSelection checks --only and --omit pointers (CheckPointer), named
// onlyName and omitName in messages, and refuses an --omit of the whole
// arguments value.
func CheckSelection(onlyName, omitName string, only, omit []string) error {
	for _, p := range only {
		if err := CheckPointer(onlyName, p); err != nil {
			return err
		}
	}
	for _, p := range omit {
		if err := CheckPointer(omitName, p); err != nil {
			return err
		}
	}
	for _, p := range omit {
		if p == "" {
			if strings.Contains(omitName, ": tools.") {
				return &Error{Msg: fmt.Sprintf("%s: \"\" would drop the whole arguments value", omitName), Setting: true}
			}
			return &Error{Msg: "--omit '' would drop the whole arguments value", Setting: true}
		}
	}
	return nil
}

// pointerSet is a tree of pointer tokens; all marks a chosen subtree.
type pointerSet struct {
	all  bool
	kids map[string]*pointerSet
}

func (s *pointerSet) add(pointer string) {
	if pointer == "" {
		s.all = true
		return
	}
	n := s
	toks, _ := canon.ParsePointer(pointer) // checked by CheckPointer
	for _, tok := range toks {
		if n.kids == nil {
			n.kids = map[string]*pointerSet{}
		}
		k := n.kids[tok]
		if k == nil {
			k = &pointerSet{}
			n.kids[tok] = k
		}
		n = k
	}
	n.all = true
}

// SelectArgs applies --only, then --omit, to the arguments and returns the
// selected document: that, not the original, is what is hashed; and the
// indices of the --omit pointers that matched nothing in it.
func (s *Spec) SelectArgs(args canon.Node) (canon.Node, []int, error) {
	text := args.Append(nil)
	if len(s.Only) > 0 {
		only := &pointerSet{}
		for _, p := range s.Only {
			if _, ok := args.At(p); !ok {
				if s.AllowMissing {
					continue
				}
				hint := "check the pointer, or add --allow-missing"
				if h := ArgsPrefixHint("--only", p, args); h != "" {
					hint = h
				}
				return canon.Node{}, nil, &Error{
					Msg:    fmt.Sprintf("%s %s matches nothing in the arguments", orName(s.OnlyName, "--only"), p),
					Advice: hint,
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
		omit := &pointerSet{}
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

// AppendOmitted appends the canonical text of n without the parts the
// (checked) pointers omit name: the text --omit alone hashes.
func AppendOmitted(dst []byte, n canon.Node, omit []string) []byte {
	sel := &pointerSet{}
	for _, p := range omit {
		sel.add(p)
	}
	return appendSelected(dst, n, sel, false)
}

// ArgsPrefixHint explains a pointer given with flag that starts with
// /args, as diff prints pointers into a call record: --only and --omit
// point into the arguments themselves. It returns "" for other pointers.
func ArgsPrefixHint(flag, p string, args canon.Node) string {
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
func appendSelected(dst []byte, n canon.Node, sel *pointerSet, only bool) []byte {
	if sel == nil || (sel.all && only) || (sel.kids == nil && !only) {
		return n.Append(dst)
	}
	keep := func(k *pointerSet) bool {
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
