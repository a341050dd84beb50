package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/fatih/color"
	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/derive"
	"github.com/idemkey/idemkey/derive/diff"
	"github.com/spf13/cobra"
)

type diffOptions struct {
	f            *Factory
	FileA, FileB string
	Scheme       canon.Scheme
	Record       bool
	BareArgs     bool // --from args, or --task/--tool without --record: never read a side as a record
	Format       *keyFormat
	Secret       []byte
	Spec         *callSpec // with --from, --only or --omit
	JSON         bool
	Explain      bool
	Schemes      bool
	Max          int
	Lines        [2]int // with --line: the line of each side's JSON Lines log (1-based), or 0
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
recognised when the object has those members with string task and tool,
whatever else it carries (a log line's call_id or timestamp; --record
insists on records). --line N compares line N of each side, a JSON Lines
log (a log of tool calls, as drift reads); --line N:M compares line N of A
with line M of B, which may be the same file. An explicit --from args, or --task
or --tool on the command line without --record, means both sides are bare
arguments, whatever their shape. --omit and --only come from the flags,
IDEMKEY_OMIT/IDEMKEY_ONLY or the config file, as for key, and the keys are
printed as key prints them (--format, --prefix, --secret-env).

The first line is the verdict with both keys. Then comes one entry per
difference that changes the key: its JSON Pointer into the call record
(/task, /tool, /args/…; for bare arguments /args is the file's top value;
--omit and --only take the part after /args, as the hint line and the
"omit" member of --json spell it),
the two values in canonical form (shortened when long, with invisible
characters, unusual spaces and combining marks spelled \uXXXX; for an
inserted element the index is b's, and where the two sides' pointers differ
b's is shown too), and the reason in
plain words: a member added or removed, null against a missing member, a
different type, look-alike strings (Unicode normalization, invisible
characters, non-breaking spaces, surrounding whitespace, letter case,
letters from another script that look the same, with the code points named), arrays reordered, elements inserted, removed or
moved (arrays are aligned, so one insertion is one entry). Warnings follow:
different numbers that collapse to the same double, numbers out of range
that js writes as null, duplicate member names whose earlier value was
silently dropped. All of it is the result, so it goes to standard output;
with --json, warnings are also repeated on standard error.

The hints are safe: --omit is offered only for request metadata that a
retry regenerates (a request or trace id, a nonce, the attempt's time or
number, anything under meta, _meta or headers; judged by the pointer's name
and the two values). Any other difference (a title, a flag, a recipient, a
start time) is a value: if a and b are one call retried, the harness must
send the same value; leaving it out of the key would let distinct writes
share one.

--explain lists what canonicalization absorbed (member order, whitespace,
number spelling such as 1.0 or 1e2, string escapes such as \u00e9).
--schemes tells whether js and jcs agree about equality for this pair (they
disagree only when jcs rejects an input: a duplicate name, a lone surrogate,
a number outside the double range).

--json prints one object: {"equal","key_a","key_b","scheme","a","b",
"differences":[{"pointer","pointer_b"?,"kind","a"?,"b"?,"reason","omit"?}],
"omitted","warnings":[{"pointer","kind","side"?,"a"?,"b"?,"message"}],
"warnings_omitted"}, plus "absorbed"/"absorbed_omitted" with --explain and
"schemes" with --schemes. In differences, "omit" (the pointer as --omit
takes it) is there only for request metadata; "a" and "b" are the JSON values in
canonical form, never shortened, and absent where that side has no value; in
warnings and absorbed entries they are the source texts, as strings.

Exit status: 0 when the keys are equal, 1 when they differ, 2 on bad input.`,
		Example: `  idemkey diff --task t-42 --tool pay before.json after.json
  idemkey diff call1.json call2.json            # call records
  curl -s $URL | idemkey diff --json --task t --tool x pinned.json -
  idemkey diff --explain --schemes a.json b.json
  idemkey diff --line 3:7 calls.jsonl calls.jsonl # two lines of one log`,
		Args: rangeArgs(2, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.FileA, opts.FileB = args[0], args[1]
			var err error
			if opts.Scheme, err = f.scheme(); err != nil {
				return err
			}
			opts.Record = f.Config.GetBool("record")
			fl := cmd.Flags()
			// Arguments shaped like a call record are bare arguments when
			// the user said so: --from args, or --task/--tool given.
			opts.BareArgs = !opts.Record && (changed(fl, "from") && f.Config.GetString("from") == fromArgs ||
				changed(fl, "task") || changed(fl, "tool"))
			// --only and --omit resolve as for key: flag, IDEMKEY_*, config file.
			// So do a tool's only and omit in the config file's tools section.
			tools, err := f.toolSelections()
			if err != nil {
				return err
			}
			if changed(fl, "from") || len(f.Config.GetStringSlice("only")) > 0 || len(f.Config.GetStringSlice("omit")) > 0 ||
				f.Config.GetString("from") != fromArgs || len(tools) > 0 {
				spec := &callSpec{
					From: f.Config.GetString("from"), Task: f.Config.GetString("task"), Tool: f.Config.GetString("tool"),
					Scheme: opts.Scheme, Only: f.Config.GetStringSlice("only"), Omit: f.Config.GetStringSlice("omit"),
					AllowMissing: f.Config.GetBool("allow-missing"), Tools: tools,
				}
				if !validFrom(spec.From) {
					return usageErrorf("invalid --from %q (want one of %s)", spec.From, strings.Join(fromNames, ", "))
				}
				opts.Spec = spec
			}
			if opts.Format, err = f.keyFormat(); err != nil {
				return err
			}
			if opts.Secret, err = f.secret(); err != nil {
				return err
			}
			opts.JSON = f.Config.GetBool("json")
			opts.Explain = f.Config.GetBool("explain")
			opts.Schemes = f.Config.GetBool("schemes")
			opts.Max = f.Config.GetInt("max")
			if opts.Max < 0 {
				return usageErrorf("invalid --max %d (want 0 for no limit, or a positive number)", opts.Max)
			}
			if l := f.Config.GetString("line"); l != "" {
				if opts.Lines, err = parseLines(l); err != nil {
					return err
				}
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
	fl.String("line", "", "compare line N of each side's JSON Lines log, or N:M (line N of A, line M of B)")
	commandLineOnly(fl, "line")
	addKeyFormatFlags(fl)
	return cmd
}

// parseLines reads --line: N (both sides) or N:M, lines counted from 1.
func parseLines(text string) ([2]int, error) {
	a, b, two := strings.Cut(text, ":")
	if !two {
		b = a
	}
	var lines [2]int
	for k, t := range []string{a, b} {
		n, err := strconv.Atoi(t)
		if err != nil || n < 1 || t != strconv.Itoa(n) {
			return lines, &UsageError{Err: fmt.Errorf("invalid --line %q", text), hint: "give a line number from 1, or two as N:M (line N of A, line M of B)"}
		}
		lines[k] = n
	}
	return lines, nil
}

// pickLine returns line n (from 1) of a side's data, a JSON Lines log.
func pickLine(in diffInput, n int) (diffInput, error) {
	data := in.data
	for k := 1; ; k++ {
		i := bytes.IndexByte(data, '\n')
		line := data
		if i >= 0 {
			line = data[:i]
		}
		if k == n {
			if len(bytes.TrimSpace(line)) == 0 {
				return in, &InputError{Name: in.name, Line: n, Err: errors.New("the line is empty: no call to compare")}
			}
			return diffInput{data: line, name: in.name, line: n}, nil
		}
		if i < 0 || i == len(data)-1 {
			return in, &InputError{Name: in.name, Err: fmt.Errorf("no line %d: the log has %d %s", n, k, diffPlural(k, "line"))}
		}
		data = data[i+1:]
	}
}

// diffInput is a side's bytes before parsing: a whole file, or with line
// > 0 that line of it.
type diffInput struct {
	data []byte
	name string
	line int
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
		in[k] = diffInput{data: data, name: name}
		if opts.Lines[k] > 0 {
			if in[k], err = pickLine(in[k], opts.Lines[k]); err != nil {
				return err
			}
		}
	}
	a, b, err := loadSides(opts, in, opts.Scheme)
	if err != nil {
		return err
	}
	res := compareSides(opts, a, b, opts.Scheme)
	res.identical = bytes.Equal(in[0].data, in[1].data)
	if opts.Schemes {
		res.schemes = schemeVerdicts(opts, in, res)
	}
	ios := opts.f.IO
	if opts.JSON {
		if _, err := ios.Out.Write(res.json()); err != nil {
			return err
		}
		for _, w := range res.Warns.Items {
			fmt.Fprintf(ios.Err, "idemkey: warning: %s\n", warningLine(w))
		}
	} else {
		res.human(opts.f)
	}
	if !res.Equal {
		return &ExitError{Code: exitNegative}
	}
	return nil
}

// diffResult is a finished comparison.
type diffResult struct {
	a, b       *diff.Side
	scheme     canon.Scheme
	keyA, keyB string
	explain    bool
	identical  bool // the two inputs are the same bytes
	*diff.Result
	schemes      []schemeVerdict
	schemesAgree bool
}

func compareSides(opts *diffOptions, a, b *diff.Side, s canon.Scheme) *diffResult {
	return &diffResult{a: a, b: b, scheme: s, explain: opts.Explain,
		keyA: opts.key(a), keyB: opts.key(b),
		Result: diff.Compare(a, b, diff.Options{Scheme: s, Max: opts.Max, Explain: opts.Explain})}
}

// key formats a side's key as key would print it (--format, --prefix,
// --secret-env), so that it matches what a server logs.
func (opts *diffOptions) key(s *diff.Side) string {
	c := derive.Call{Task: s.Task, Tool: s.Tool, Args: s.Args}
	if opts.Secret != nil {
		return string(opts.Format.append(nil, c.HMAC(opts.Secret)))
	}
	return string(opts.Format.append(nil, c.Key()))
}

// loadSides parses both inputs under scheme s.
func loadSides(opts *diffOptions, in [2]diffInput, s canon.Scheme) (*diff.Side, *diff.Side, error) {
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
	var sides [2]*diff.Side
	for k := range in {
		if opts.Spec != nil {
			side, err := loadSpecSide(opts, in[k], s)
			if err != nil {
				return nil, nil, err
			}
			sides[k] = side
			continue
		}
		doc, err := canon.Parse(in[k].data, s)
		if err != nil {
			return nil, nil, &InputError{Name: in[k].name, Line: in[k].line, Err: err}
		}
		side := &diff.Side{Name: in[k].name, Doc: doc}
		root := doc.Root()
		if opts.Record || !opts.BareArgs && diff.IsRecord(root) {
			if err := side.FromRecord(root); err != nil {
				return nil, nil, &InputError{Name: in[k].name, Line: in[k].line, Err: err}
			}
		} else {
			t, tl, err := taskTool()
			if err != nil {
				return nil, nil, err
			}
			side.Task, side.Tool, side.Args = t, tl, root
		}
		sides[k] = side
	}
	return sides[0], sides[1], nil
}

// loadSpecSide loads one side through the shared call loader (--from,
// --only, --omit). A side that is a call record is read as one, as
// without those flags, unless the user said the sides are bare arguments.
func loadSpecSide(opts *diffOptions, in diffInput, s canon.Scheme) (*diff.Side, error) {
	spec := *opts.Spec
	spec.Scheme = s
	if spec.From == fromArgs && !opts.BareArgs {
		if doc, err := canon.Parse(in.data, s); err == nil && (opts.Record || diff.IsRecord(doc.Root())) {
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
		return nil, inputErr(in.name, in.line, err)
	}
	side := &diff.Side{Name: in.name, Task: lc.Call.Task, Tool: lc.Call.Tool, Args: lc.Call.Args, Doc: lc.Call.Args.Document()}
	// Duplicate names are reported with pointers into the document they
	// were found in: the whole input for an envelope or record, which
	// then holds the arguments.
	if !lc.Selected && lc.Call.Args.Document() != nil && lc.Call.Args.Offset() != lc.Call.Args.Document().Root().Offset() {
		side.Record = true
	}
	return side, nil
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
			v.verdict = map[bool]string{true: "equal", false: "differ"}[res.Equal]
		} else if a, b, err := loadSides(opts, in, s); err != nil {
			v.verdict, v.err = "rejected", oneLine(err.Error())
		} else {
			v.keyA, v.keyB = opts.key(a), opts.key(b)
			v.verdict = map[bool]string{true: "equal", false: "differ"}[a.Key() == b.Key()]
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
	if r.Equal {
		return "keys equal"
	}
	return "keys differ"
}

func warningLine(w diff.Entry) string {
	if w.Pointer == "" {
		return w.Reason
	}
	return diff.RevealPointer(w.Pointer) + ": " + w.Reason
}

// json renders the result as one JSON object and a newline.
func (r *diffResult) json() []byte {
	o := &jsonObject{}
	o.bool("equal", r.Equal).
		str("key_a", r.keyA).
		str("key_b", r.keyB).
		str("scheme", r.scheme.String()).
		str("a", r.a.Name).
		str("b", r.b.Name)
	e := r.Result
	o.raw("differences", entriesJSON(e.Diffs.Items, false))
	o.int("omitted", e.Diffs.Omitted)
	o.raw("warnings", entriesJSON(e.Warns.Items, true))
	o.int("warnings_omitted", e.Warns.Omitted)
	if r.explain {
		o.raw("absorbed", entriesJSON(e.Notes.Items, true))
		o.int("absorbed_omitted", e.Notes.Omitted)
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

func entriesJSON(es []diff.Entry, raw bool) []byte {
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
		case en.Kind == diff.WarnDuplicate:
			o.str("side", en.RawA)
		case raw:
			o.str("a", en.RawA).str("b", en.RawB)
		default:
			if en.A.Has() {
				o.raw("a", en.A.Canonical())
			}
			if en.B.Has() {
				o.raw("b", en.B.Canonical())
			}
		}
		if raw {
			o.str("message", en.Reason)
		} else {
			o.str("reason", en.Reason)
		}
		if p, ok := argsPointer(en.Pointer); ok && !raw && diff.EntryRegenerated(p, en) {
			o.str("omit", p) // request metadata, the pointer as --omit takes it
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
	if r.Equal {
		// Green only when nothing says different inputs can share the key.
		verdict = paint(color.FgGreen, color.Bold)
		if r.Warns.Total() > 0 {
			verdict = paint(color.FgYellow, color.Bold)
		}
		sep = "=="
	}
	fmt.Fprintf(w, "%s (%s): %s %s %s %s %s\n", verdict.Sprint(r.verdictWord()), r.scheme,
		r.a.Name, r.keyA, sep, r.b.Name, r.keyB)

	e := r.Result
	entryOut := func(en diff.Entry, a, b string) {
		ptr := diff.RevealPointer(en.Pointer)
		if ptr == "" {
			ptr = "(top)"
		}
		fmt.Fprintf(w, "%s", ptrC.Sprint(ptr))
		if en.PointerB != "" {
			fmt.Fprintf(w, " (b: %s)", ptrC.Sprint(diff.RevealPointer(en.PointerB)))
		}
		fmt.Fprintf(w, "  %s\n", kindC.Sprint(en.Kind))
		fmt.Fprintf(w, "    %s %s\n", aC.Sprint("a:"), a)
		fmt.Fprintf(w, "    %s %s\n", bC.Sprint("b:"), b)
		fmt.Fprintf(w, "    %s\n", en.Reason)
	}
	for _, en := range e.Diffs.Items {
		a, b := diff.ShowPair(en.A.Revealed(), en.B.Revealed())
		entryOut(en, a, b)
	}
	if e.Diffs.Omitted > 0 {
		fmt.Fprintf(w, "… %d more %s not shown (--max %d; --max 0 shows all)\n",
			e.Diffs.Omitted, diffPlural(e.Diffs.Omitted, "difference"), e.Diffs.Max)
	}
	switch n := e.Diffs.Total(); {
	case n > 0:
		fmt.Fprintf(w, "%s\n", bold.Sprintf("%d %s the key", n, diffPlural2(n, "difference changes", "differences change")))
		meta, values := adviceLists(e.Diffs.Items)
		if len(meta) > 0 {
			fmt.Fprintf(w, "%s %s %s request metadata that each attempt regenerates: leaving %s out gives a call's retries one key "+
				"(pointers above are into the call record; --omit and --only take them relative to the arguments, without /args): %s\n",
				faint.Sprint("hint:"), strings.Join(meta, ", "), diffPlural2(len(meta), "looks like", "look like"),
				diffPlural2(len(meta), "it", "them"), omitFlags(meta))
		}
		if len(values) > 0 {
			fmt.Fprintf(w, "%s %s %s in value: if a and b are one call retried, the harness must send the same %s; if they are two calls, the keys are right to differ\n",
				faint.Sprint("hint:"), strings.Join(values, ", "), diffPlural2(len(values), "differs", "differ"), diffPlural2(len(values), "value", "values"))
		}
	case r.identical:
		fmt.Fprintln(w, "the two calls are byte for byte the same")
	case len(e.Warns.Items) > 0:
		fmt.Fprintln(w, "equal after canonicalization, but read the warnings: different inputs can share this key")
	default:
		fmt.Fprint(w, "equal after canonicalization")
		if !r.explain {
			fmt.Fprint(w, " (--explain shows what it absorbed)")
		}
		fmt.Fprintln(w)
	}
	for _, en := range e.Warns.Items {
		fmt.Fprintf(w, "%s %s\n", warnC.Sprint("warning:"), warningLine(en))
	}
	if e.Warns.Omitted > 0 {
		fmt.Fprintf(w, "%s %d more %s not shown\n", warnC.Sprint("warning:"), e.Warns.Omitted, diffPlural(e.Warns.Omitted, "warning"))
	}
	if r.explain {
		if len(e.Notes.Items) == 0 {
			fmt.Fprintln(w, faint.Sprint("canonicalization absorbed nothing: the texts differ only where the key does"))
		} else {
			fmt.Fprintln(w, bold.Sprint("absorbed by canonicalization (these do not change the key):"))
		}
		for _, en := range e.Notes.Items {
			a, b := diff.ShowPair(diff.Reveal([]byte(en.RawA)), diff.Reveal([]byte(en.RawB)))
			entryOut(en, a, b)
		}
		if e.Notes.Omitted > 0 {
			fmt.Fprintf(w, "… %d more not shown\n", e.Notes.Omitted)
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

// argsPointer returns an entry's pointer relative to the arguments, as
// --omit and --only take it, when it points inside them.
func argsPointer(p string) (string, bool) {
	if rest, ok := strings.CutPrefix(p, "/args/"); ok {
		return "/" + rest, true
	}
	return "", false
}

// adviceLists sorts the pointers (relative to the arguments) of the
// differences inside the arguments: request metadata that a retry
// regenerates, the only fields a hint may offer to leave out of the key,
// and values, which the harness must send the same: leaving them out would
// let distinct writes share a key.
func adviceLists(es []diff.Entry) (meta, values []string) {
	seen := map[string]bool{}
	for _, en := range es {
		p, ok := argsPointer(en.Pointer)
		if !ok || seen[p] {
			continue
		}
		seen[p] = true
		if diff.EntryRegenerated(p, en) {
			meta = append(meta, diff.RevealPointer(p))
		} else {
			values = append(values, diff.RevealPointer(p))
		}
	}
	return shortList(meta), shortList(values)
}

// shortList keeps the first three of a list and "…" for the rest.
func shortList(ps []string) []string {
	if len(ps) > 3 {
		return append(ps[:3:3], "…")
	}
	return ps
}

// omitFlags spells the --omit flags of pointers.
func omitFlags(ps []string) string {
	var flags []string
	for _, p := range ps {
		if p == "…" {
			flags = append(flags, p)
			continue
		}
		flags = append(flags, "--omit "+shellQuote(p))
	}
	return strings.Join(flags, " ")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/_.-~") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
