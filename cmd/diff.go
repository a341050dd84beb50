package cmd

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/fatih/color"
	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/derive"
	"github.com/spf13/cobra"
)

type diffOptions struct {
	f            *Factory
	FileA, FileB string
	Scheme       canon.Scheme
	Record       bool
	Spec         *callSpec // with --from, --only or --omit
	JSON         bool
	Explain      bool
	Schemes      bool
	Max          int
}

func newDiffCmd(f *Factory) *cobra.Command {
	opts := &diffOptions{f: f}
	cmd := &cobra.Command{
		Use:   "diff A B",
		Short: "Explain why two tool calls got different keys (or the same one)",
		Long: `Compare two tool calls and explain, difference by difference, why their
idempotency keys differ, or why two calls that look different share a key.

A and B are files, or - for standard input (one of them). Each is either the
bare arguments, with --task and --tool (or IDEMKEY_TASK and IDEMKEY_TOOL)
applying to both sides, or a call record {"task":…,"tool":…,"args":…},
recognised when the object has exactly those three members with string task
and tool (--record insists on records).

The first line is the verdict with both keys. Then comes one entry per
difference that changes the key: its JSON Pointer into the call record
(/task, /tool, /args/…; for bare arguments /args is the file's top value),
the two values in canonical form (shortened when long, with invisible
characters, unusual spaces and combining marks spelled \uXXXX; for an
inserted element the index is b's, and where the two sides' pointers differ
b's is shown too), and the reason in
plain words: a member added or removed, null against a missing member, a
different type, look-alike strings (Unicode normalization, invisible
characters, non-breaking spaces, surrounding whitespace, letter case, with
the code points named), arrays reordered, elements inserted, removed or
moved (arrays are aligned, so one insertion is one entry). Warnings follow:
different numbers that collapse to the same double, numbers out of range
that js writes as null, duplicate member names whose earlier value was
silently dropped. All of it is the result, so it goes to standard output;
with --json, warnings are also repeated on standard error.

--explain lists what canonicalization absorbed (member order, whitespace,
number spelling such as 1.0 or 1e2, string escapes such as \u00e9).
--schemes tells whether js and jcs agree about equality for this pair (they
disagree only when jcs rejects an input: a duplicate name, a lone surrogate,
a number outside the double range).

--json prints one object: {"equal","key_a","key_b","scheme","a","b",
"differences":[{"pointer","pointer_b"?,"kind","a"?,"b"?,"reason"}],
"omitted","warnings":[{"pointer","kind","side"?,"a"?,"b"?,"message"}],
"warnings_omitted"}, plus "absorbed"/"absorbed_omitted" with --explain and
"schemes" with --schemes. In differences, "a" and "b" are the JSON values in
canonical form, never shortened, and absent where that side has no value; in
warnings and absorbed entries they are the source texts, as strings.

Exit status: 0 when the keys are equal, 1 when they differ, 2 on bad input.`,
		Example: `  idemkey diff --task t-42 --tool pay before.json after.json
  idemkey diff call1.json call2.json            # call records
  curl -s $URL | idemkey diff --json --task t --tool x pinned.json -
  idemkey diff --explain --schemes a.json b.json`,
		Args: rangeArgs(2, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.FileA, opts.FileB = args[0], args[1]
			var err error
			if opts.Scheme, err = f.scheme(); err != nil {
				return err
			}
			opts.Record = f.Config.GetBool("record")
			if changed(cmd.Flags(), "from") || changed(cmd.Flags(), "only") || changed(cmd.Flags(), "omit") ||
				f.Config.GetString("from") != fromArgs {
				spec := &callSpec{
					From: f.Config.GetString("from"), Task: f.Config.GetString("task"), Tool: f.Config.GetString("tool"),
					Scheme: opts.Scheme, Only: f.Config.GetStringSlice("only"), Omit: f.Config.GetStringSlice("omit"),
					AllowMissing: f.Config.GetBool("allow-missing"),
				}
				if !validFrom(spec.From) {
					return usageErrorf("invalid --from %q (want one of %s)", spec.From, strings.Join(fromNames, ", "))
				}
				opts.Spec = spec
			}
			opts.JSON = f.Config.GetBool("json")
			opts.Explain = f.Config.GetBool("explain")
			opts.Schemes = f.Config.GetBool("schemes")
			opts.Max = f.Config.GetInt("max")
			if opts.Max < 0 {
				return usageErrorf("invalid --max %d (want 0 for no limit, or a positive number)", opts.Max)
			}
			return runDiff(opts)
		},
	}
	fl := cmd.Flags()
	fl.String("task", "", "task id for sides that are bare arguments (IDEMKEY_TASK)")
	fl.String("tool", "", "tool name for sides that are bare arguments (IDEMKEY_TOOL)")
	fl.String("scheme", "js", "canonical form: js (the reference harness) or jcs (RFC 8785)")
	fl.Bool("record", false, `both sides are call records {"task","tool","args"}`)
	fl.String("from", fromArgs, "input format of both sides: "+strings.Join(fromNames, ", ")+` (args also detects call records)`)
	fl.StringArray("only", nil, "compare just this part of the args (RFC 6901 pointer; repeatable)")
	fl.StringArray("omit", nil, "leave this part of the args out (RFC 6901 pointer; repeatable)")
	fl.Bool("allow-missing", false, "let --only pointers that match nothing be ignored")
	fl.Bool("json", false, "print one JSON object for machines")
	fl.Bool("explain", false, "also list what canonicalization absorbed")
	fl.Bool("schemes", false, "also tell whether js and jcs agree about equality")
	fl.Int("max", 50, "list at most N differences (and N warnings, N absorbed); 0: all")
	return cmd
}

// diffSide is one parsed side of a comparison.
type diffSide struct {
	name   string
	doc    *canon.Document
	record bool
	task   string
	tool   string
	args   canon.Node
}

func (s *diffSide) key() [32]byte {
	return derive.Call{Task: s.task, Tool: s.tool, Args: s.args}.Key()
}

// diffInput is a side's bytes before parsing.
type diffInput struct {
	data []byte
	name string
}

func runDiff(opts *diffOptions) error {
	if opts.FileA == "-" && opts.FileB == "-" || opts.FileA == "" && opts.FileB == "" {
		return usageErrorf("only one of A and B can be - (standard input)")
	}
	var in [2]diffInput
	for k, file := range []string{opts.FileA, opts.FileB} {
		data, name, err := opts.f.readInput(file)
		if err != nil {
			return err
		}
		in[k] = diffInput{data, name}
	}
	a, b, err := loadSides(opts, in, opts.Scheme)
	if err != nil {
		return err
	}
	res := compareSides(a, b, opts.Scheme, opts.Max, opts.Explain)
	if opts.Schemes {
		res.schemes = schemeVerdicts(opts, in, res)
	}
	ios := opts.f.IO
	if opts.JSON {
		if _, err := ios.Out.Write(res.json()); err != nil {
			return err
		}
		for _, w := range res.eng.warns.items {
			fmt.Fprintf(ios.Err, "idemkey: warning: %s\n", warningLine(w))
		}
	} else {
		res.human(opts.f)
	}
	if !res.equal {
		return &ExitError{Code: exitNegative}
	}
	return nil
}

// diffResult is a finished comparison.
type diffResult struct {
	a, b         *diffSide
	scheme       canon.Scheme
	keyA, keyB   string
	equal        bool
	identical    bool // byte-identical arguments, task and tool
	explain      bool
	eng          *engine
	schemes      []schemeVerdict
	schemesAgree bool
}

func compareSides(a, b *diffSide, s canon.Scheme, max int, explain bool) *diffResult {
	ka, kb := a.key(), b.key()
	res := &diffResult{a: a, b: b, scheme: s, explain: explain,
		keyA: hex.EncodeToString(ka[:]), keyB: hex.EncodeToString(kb[:]), equal: ka == kb}
	res.identical = a.task == b.task && a.tool == b.tool && bytes.Equal(a.args.Raw(), b.args.Raw())
	e := newEngine(s, max, explain)
	e.compareCalls(a, b)
	if !res.equal && e.diffs.total() == 0 {
		e.push(token{name: "args", idx: -1}, token{name: "args", idx: -1})
		e.add(&e.diffs, kindUnexplained, nodeVal(a.args), nodeVal(b.args),
			"the canonical texts differ but no single difference was found (please report this as a bug)")
		e.pop()
	}
	e.duplicates(a, "a")
	e.duplicates(b, "b")
	res.eng = e
	return res
}

// loadSides parses both inputs under scheme s.
func loadSides(opts *diffOptions, in [2]diffInput, s canon.Scheme) (*diffSide, *diffSide, error) {
	var task, tool string
	var ttErr error
	ttDone := false
	taskTool := func() (string, string, error) {
		if !ttDone {
			ttDone = true
			task, tool, ttErr = opts.f.taskTool()
			var ue *UsageError
			if errors.As(ttErr, &ue) && strings.HasPrefix(ue.Error(), "missing") {
				ue.hint = `give --task and --tool for bare arguments, or compare call records {"task":…,"tool":…,"args":…}`
			}
		}
		return task, tool, ttErr
	}
	var sides [2]*diffSide
	for k := range in {
		if opts.Spec != nil {
			side, err := loadSpecSide(opts, in[k], s)
			if err != nil {
				return nil, nil, err
			}
			sides[k] = side
			continue
		}
		doc, err := parseDoc(in[k].data, in[k].name, s)
		if err != nil {
			return nil, nil, err
		}
		side := &diffSide{name: in[k].name, doc: doc}
		root := doc.Root()
		if opts.Record || isRecord(root) {
			if err := side.fromRecord(root); err != nil {
				return nil, nil, &InputError{Name: in[k].name, Err: err}
			}
		} else {
			t, tl, err := taskTool()
			if err != nil {
				return nil, nil, err
			}
			side.task, side.tool, side.args = t, tl, root
		}
		sides[k] = side
	}
	return sides[0], sides[1], nil
}

// loadSpecSide loads one side through the shared call loader (--from,
// --only, --omit). A side that is a call record is read as one, as
// without those flags.
func loadSpecSide(opts *diffOptions, in diffInput, s canon.Scheme) (*diffSide, error) {
	spec := *opts.Spec
	spec.Scheme = s
	if spec.From == fromArgs {
		if doc, err := canon.Parse(in.data, s); err == nil && (opts.Record || isRecord(doc.Root())) {
			spec.From = fromCall
		}
	}
	if spec.From == fromArgs && (spec.Task == "" || spec.Tool == "") {
		if _, _, err := opts.f.taskTool(); err != nil {
			return nil, err
		}
	}
	lc, err := spec.load(in.data)
	if err != nil {
		return nil, inputErr(in.name, 0, err)
	}
	side := &diffSide{name: in.name, task: lc.Call.Task, tool: lc.Call.Tool, args: lc.Call.Args, doc: lc.Call.Args.Document()}
	// Duplicate names are reported with pointers into the document they
	// were found in: the whole input for an envelope or record, which
	// then holds the arguments.
	if !lc.Selected && lc.Call.Args.Document() != nil && lc.Call.Args.Offset() != lc.Call.Args.Document().Root().Offset() {
		side.record = true
	}
	return side, nil
}

// isRecord reports whether v looks like a call record: an object with
// exactly the members task (a string), tool (a string) and args.
func isRecord(v canon.Node) bool {
	ms := v.Members()
	if len(ms) != 3 {
		return false
	}
	t, ok1 := v.Get("task")
	tl, ok2 := v.Get("tool")
	_, ok3 := v.Get("args")
	return ok1 && ok2 && ok3 && t.Kind() == canon.String && tl.Kind() == canon.String
}

func (s *diffSide) fromRecord(root canon.Node) error {
	if root.Kind() != canon.Object {
		return fmt.Errorf(`not a call record: want an object {"task":…,"tool":…,"args":…}, not %s`, article(typeName(root.Kind())))
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"task", &s.task}, {"tool", &s.tool}} {
		v, ok := root.Get(f.name)
		if !ok {
			return fmt.Errorf("not a call record: missing %q member", f.name)
		}
		if v.Kind() != canon.String {
			return fmt.Errorf("not a call record: %q must be a string, not %s", f.name, article(typeName(v.Kind())))
		}
		*f.dst = v.Text()
	}
	args, ok := root.Get("args")
	if !ok {
		return errors.New(`not a call record: missing "args" member`)
	}
	s.args, s.record = args, true
	return (derive.Call{Task: s.task, Tool: s.tool}).Validate()
}

// ---- duplicates ----

// duplicates warns about every member name that appears twice in one
// object of side s: the earlier value was silently dropped.
func (e *engine) duplicates(s *diffSide, label string) {
	src := s.doc.Source()
	for _, d := range s.doc.Duplicates() {
		if !e.warns.room() {
			continue
		}
		obj, ptr := nodeAt(s.doc.Root(), d.Dropped)
		if !s.record {
			ptr = append([]token{{name: "args", idx: -1}}, ptr...)
		}
		ptr = append(ptr, token{name: d.Name, idx: -1})
		dropped := string(valueAfterName(src, d.Dropped))
		kept := ""
		if v, ok := obj.Get(d.Name); ok {
			kept = string(v.Raw())
		}
		ld, _ := canon.Position(src, d.Dropped)
		lk, _ := canon.Position(src, d.Kept)
		where := fmt.Sprintf("lines %d and %d", ld, lk)
		if ld == lk {
			where = fmt.Sprintf("line %d", ld)
		}
		e.warns.items = append(e.warns.items, entry{
			Pointer: pointerOf(ptr), Kind: warnDuplicate, RawA: label,
			Reason: fmt.Sprintf("%s (%s) has the member %s twice (%s): the earlier value %s was silently dropped and %s is used",
				label, s.name, canon.AppendQuoted(nil, d.Name), where, shorten(dropped, 40), shorten(kept, 40)),
		})
	}
}

// nodeAt returns the innermost value of root whose source contains offset
// off, and its pointer.
func nodeAt(n canon.Node, off int) (canon.Node, []token) {
	var ptr []token
outer:
	for {
		switch n.Kind() {
		case canon.Object:
			for _, m := range n.Members() {
				if m.NameOffset <= off && off < m.Value.End() {
					ptr = append(ptr, token{name: m.Name, idx: -1})
					n = m.Value
					continue outer
				}
			}
		case canon.Array:
			for k, el := range n.Elements() {
				if el.Offset() <= off && off < el.End() {
					ptr = append(ptr, token{idx: k})
					n = el
					continue outer
				}
			}
		}
		return n, ptr
	}
}

// valueAfterName returns the source text of the value that follows the
// member name whose opening quote is at src[i].
func valueAfterName(src []byte, i int) []byte {
	j := i + 1
	for j < len(src) && src[j] != '"' {
		if src[j] == '\\' {
			j++
		}
		j++
	}
	j++
	for j < len(src) && (isJSONSpace(src[j]) || src[j] == ':') {
		j++
	}
	start, depth, inStr := j, 0, false
	for ; j < len(src); j++ {
		c := src[j]
		if inStr {
			if c == '\\' {
				j++
			} else if c == '"' {
				inStr = false
				if depth == 0 {
					return src[start : j+1]
				}
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return src[start : j+1]
			}
			if depth < 0 {
				return src[start:j]
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return src[start:j]
			}
		}
	}
	return src[start:j]
}

// ---- --schemes ----

type schemeVerdict struct {
	scheme     canon.Scheme
	verdict    string // "equal", "differ" or "rejected"
	keyA, keyB string
	err        string
}

func schemeVerdicts(opts *diffOptions, in [2]diffInput, res *diffResult) []schemeVerdict {
	var out []schemeVerdict
	for _, s := range []canon.Scheme{canon.JS, canon.JCS} {
		v := schemeVerdict{scheme: s}
		if s == res.scheme {
			v.keyA, v.keyB = res.keyA, res.keyB
			v.verdict = map[bool]string{true: "equal", false: "differ"}[res.equal]
		} else if a, b, err := loadSides(opts, in, s); err != nil {
			v.verdict, v.err = "rejected", oneLine(err.Error())
		} else {
			ka, kb := a.key(), b.key()
			v.keyA, v.keyB = hex.EncodeToString(ka[:]), hex.EncodeToString(kb[:])
			v.verdict = map[bool]string{true: "equal", false: "differ"}[ka == kb]
		}
		out = append(out, v)
	}
	res.schemesAgree = out[0].verdict == out[1].verdict
	return out
}

func (r *diffResult) schemesReason() string {
	if r.schemesAgree {
		if r.schemes[0].verdict == "rejected" {
			return "both schemes reject the input"
		}
		return "the schemes agree: they order some member names differently (js puts array-index names first), which changes keys but never equality"
	}
	return "the schemes disagree: jcs (RFC 8785) rejects what js accepts (duplicate names, lone surrogates, numbers outside the double range)"
}

// ---- output ----

func (r *diffResult) verdictWord() string {
	if r.equal {
		return "keys equal"
	}
	return "keys differ"
}

func warningLine(w entry) string {
	if w.Pointer == "" {
		return w.Reason
	}
	return w.Pointer + ": " + w.Reason
}

// json renders the result as one JSON object and a newline.
func (r *diffResult) json() []byte {
	o := &jsonObject{}
	o.bool("equal", r.equal).
		str("key_a", r.keyA).
		str("key_b", r.keyB).
		str("scheme", r.scheme.String()).
		str("a", r.a.name).
		str("b", r.b.name)
	e := r.eng
	o.raw("differences", entriesJSON(e.diffs.items, false))
	o.int("omitted", e.diffs.omitted)
	o.raw("warnings", entriesJSON(e.warns.items, true))
	o.int("warnings_omitted", e.warns.omitted)
	if r.explain {
		o.raw("absorbed", entriesJSON(e.notes.items, true))
		o.int("absorbed_omitted", e.notes.omitted)
	}
	if r.schemes != nil {
		s := &jsonObject{}
		for _, v := range r.schemes {
			vo := &jsonObject{}
			vo.str("verdict", v.verdict)
			if v.err != "" {
				vo.str("error", v.err)
			} else {
				vo.str("key_a", v.keyA).str("key_b", v.keyB)
			}
			s.raw(v.scheme.String(), trimNL(vo.line()))
		}
		s.bool("agree", r.schemesAgree).str("reason", r.schemesReason())
		o.raw("schemes", trimNL(s.line()))
	}
	return o.line()
}

func trimNL(b []byte) []byte { return bytes.TrimSuffix(b, []byte{'\n'}) }

func entriesJSON(es []entry, raw bool) []byte {
	b := []byte{'['}
	for k, en := range es {
		if k > 0 {
			b = append(b, ',')
		}
		o := &jsonObject{}
		o.str("pointer", en.Pointer)
		if en.PointerB != "" {
			o.str("pointer_b", en.PointerB)
		}
		o.str("kind", en.Kind)
		switch {
		case en.Kind == warnDuplicate:
			o.str("side", en.RawA)
		case raw:
			o.str("a", en.RawA).str("b", en.RawB)
		default:
			if en.A.has {
				o.raw("a", en.A.canonical())
			}
			if en.B.has {
				o.raw("b", en.B.canonical())
			}
		}
		if raw {
			o.str("message", en.Reason)
		} else {
			o.str("reason", en.Reason)
		}
		b = append(b, trimNL(o.line())...)
	}
	return append(b, ']')
}

// human writes the report for people.
func (r *diffResult) human(f *Factory) {
	w := f.IO.Out
	mode := f.colorMode()
	paint := func(attrs ...color.Attribute) *color.Color { return f.IO.paint(mode, w, attrs...) }
	bold := paint(color.Bold)
	ptrC := paint(color.FgCyan, color.Bold)
	kindC := paint(color.FgYellow)
	aC, bC := paint(color.FgRed), paint(color.FgGreen)
	faint := paint(color.Faint)
	warnC := paint(color.FgRed, color.Bold)

	verdict := paint(color.FgRed, color.Bold)
	sep := "!="
	if r.equal {
		verdict = paint(color.FgGreen, color.Bold)
		sep = "=="
	}
	fmt.Fprintf(w, "%s (%s): %s %s %s %s %s\n", verdict.Sprint(r.verdictWord()), r.scheme,
		r.a.name, r.keyA, sep, r.b.name, r.keyB)

	e := r.eng
	entryOut := func(en entry, a, b string) {
		ptr := en.Pointer
		if ptr == "" {
			ptr = "(top)"
		}
		fmt.Fprintf(w, "%s", ptrC.Sprint(ptr))
		if en.PointerB != "" {
			fmt.Fprintf(w, " (b: %s)", ptrC.Sprint(en.PointerB))
		}
		fmt.Fprintf(w, "  %s\n", kindC.Sprint(en.Kind))
		fmt.Fprintf(w, "    %s %s\n", aC.Sprint("a:"), a)
		fmt.Fprintf(w, "    %s %s\n", bC.Sprint("b:"), b)
		fmt.Fprintf(w, "    %s\n", en.Reason)
	}
	for _, en := range e.diffs.items {
		a, b := showPair(revealed(en.A), revealed(en.B))
		entryOut(en, a, b)
	}
	if e.diffs.omitted > 0 {
		fmt.Fprintf(w, "… %d more %s not shown (--max %d; --max 0 shows all)\n",
			e.diffs.omitted, diffPlural(e.diffs.omitted, "difference"), e.diffs.max)
	}
	switch n := e.diffs.total(); {
	case n > 0:
		fmt.Fprintf(w, "%s\n", bold.Sprintf("%d %s the key", n, diffPlural2(n, "difference changes", "differences change")))
	case r.identical:
		fmt.Fprintln(w, "the two calls are byte for byte the same")
	case len(e.warns.items) > 0:
		fmt.Fprintln(w, "equal after canonicalization, but read the warnings: different inputs can share this key")
	default:
		fmt.Fprint(w, "equal after canonicalization")
		if !r.explain {
			fmt.Fprint(w, " (--explain shows what it absorbed)")
		}
		fmt.Fprintln(w)
	}
	for _, en := range e.warns.items {
		fmt.Fprintf(w, "%s %s\n", warnC.Sprint("warning:"), warningLine(en))
	}
	if e.warns.omitted > 0 {
		fmt.Fprintf(w, "%s %d more %s not shown\n", warnC.Sprint("warning:"), e.warns.omitted, diffPlural(e.warns.omitted, "warning"))
	}
	if r.explain {
		if len(e.notes.items) == 0 {
			fmt.Fprintln(w, faint.Sprint("canonicalization absorbed nothing: the texts differ only where the key does"))
		} else {
			fmt.Fprintln(w, bold.Sprint("absorbed by canonicalization (these do not change the key):"))
		}
		for _, en := range e.notes.items {
			a, b := showPair(reveal([]byte(en.RawA)), reveal([]byte(en.RawB)))
			entryOut(en, a, b)
		}
		if e.notes.omitted > 0 {
			fmt.Fprintf(w, "… %d more not shown\n", e.notes.omitted)
		}
	}
	if r.schemes != nil {
		var parts []string
		for _, v := range r.schemes {
			p := v.scheme.String() + ": " + v.verdict
			if v.err != "" {
				p += " (" + v.err + ")"
			}
			parts = append(parts, p)
		}
		fmt.Fprintf(w, "%s %s; %s\n", bold.Sprint("schemes:"), strings.Join(parts, ", "), r.schemesReason())
	}
}

func diffPlural(n int, s string) string {
	if n == 1 {
		return s
	}
	return s + "s"
}

func diffPlural2(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// ---- value display ----

const showWidth = 72

// showPair renders both sides' values for people: canonical JSON with
// invisible characters, unusual spaces and combining marks spelled as
// \uXXXX, shortened around the first difference when long.
func showPair(a, b string) (string, string) {
	ra, rb := []rune(a), []rune(b)
	if len(ra) <= showWidth && len(rb) <= showWidth {
		return string(ra), string(rb)
	}
	p := 0
	for p < len(ra) && p < len(rb) && ra[p] == rb[p] {
		p++
	}
	return window(ra, p), window(rb, p)
}

func window(r []rune, p int) string {
	if len(r) <= showWidth {
		return string(r)
	}
	start := max(0, min(p-showWidth/3, len(r)-showWidth))
	end := min(len(r), start+showWidth)
	s := string(r[start:end])
	if start > 0 {
		s = "…" + s
	}
	if end < len(r) {
		s += "…"
	}
	return s + fmt.Sprintf(" (%d characters)", len(r))
}

func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

func revealed(v dval) string {
	if !v.has {
		return "(absent)"
	}
	return reveal(v.canonical())
}

// reveal spells the characters a reader cannot see as \uXXXX.
func reveal(s []byte) string {
	var b strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRune(s)
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case isInvisible(r) || isOddSpace(r) || unicode.Is(unicode.Mn, r) || r == 0x2028 || r == 0x2029:
			if r > 0xFFFF {
				r1, r2 := utf16.EncodeRune(r)
				fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.Write(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}
