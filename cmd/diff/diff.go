// Package diff is the face of 'idemkey diff': why two calls got different
// keys, or the same one (the library: derive/diff).
package diff

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/fatih/color"
	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/input"
	"github.com/idemkey/idemkey/cmd/internal/keyflags"
	"github.com/idemkey/idemkey/cmd/internal/settings"
	"github.com/idemkey/idemkey/derive"
	"github.com/idemkey/idemkey/derive/diff"
	"github.com/spf13/cobra"
)

// Options are diff's settings.
type Options struct {
	f            *cli.Factory
	FileA, FileB string
	Scheme       canon.Scheme
	Record       bool
	BareArgs     bool // --from args, or --task/--tool without --record: never read a side as a record
	Key          keyflags.Key
	Spec         *derive.Spec // with --from, --only or --omit
	JSON         bool
	Explain      bool
	Schemes      bool
	Max          int
	Lines        [2]int // with --line: the line of each side's JSON Lines log (1-based), or 0
}

// NewCmd builds 'idemkey diff': its options, its flags, and run; with
// runF, runF instead of run, once the options are read (a test's seam for
// the flags and settings).
func NewCmd(f *cli.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{f: f}
	cmd := &cobra.Command{
		Use:   "diff A B",
		Short: "Explain why two tool calls got different keys (or the same one)",
		Long:  long,
		Example: `  idemkey diff --task t-42 --tool pay before.json after.json
  idemkey diff call1.json call2.json            # call records
  curl -s $URL | idemkey diff --json --task t --tool x pinned.json -
  idemkey diff --explain --schemes a.json b.json
  idemkey diff --line 3:7 calls.jsonl calls.jsonl # two lines of one log`,
		Args: cli.RangeArgs(2, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.FileA, opts.FileB = args[0], args[1]
			if err := opts.load(cmd); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return run(opts)
		},
	}
	fl := cmd.Flags()
	fl.String("task", "", "task id for sides that are bare arguments (IDEMKEY_TASK)")
	fl.String("tool", "", "tool name for sides that are bare arguments (IDEMKEY_TOOL)")
	fl.String("scheme", "js", "canonical form: js (the reference harness) or jcs (RFC 8785)")
	settings.OneOf(fl, "scheme", canon.SchemeNames...)
	fl.Bool("record", false, `both sides are call records {"task","tool","args"}`)
	fl.String("from", derive.FromArgs, "input format of both sides: "+strings.Join(derive.FromNames, ", ")+` (args also detects call records)`)
	settings.OneOf(fl, "from", derive.FromNames...)
	fl.StringArray("only", nil, "compare just this part of the args (an RFC 6901 `POINTER`; repeatable)")
	fl.StringArray("omit", nil, "leave this part of the args out (an RFC 6901 `POINTER`; repeatable)")
	settings.ReadPerTool(fl, "only", "omit")
	fl.Bool("allow-missing", false, "let --only pointers that match nothing be ignored")
	fl.Bool("json", false, "print one JSON object for machines")
	fl.Bool("explain", false, "also list what canonicalization absorbed")
	fl.Bool("schemes", false, "also tell whether js and jcs agree about equality")
	fl.Int("max", 50, "list at most N differences (and N warnings, N absorbed); 0: all")
	fl.String("line", "", "compare line N of each side's JSON Lines log, or N:M (line N of A, line M of B)")
	settings.CommandLineOnly(fl, "line")
	keyflags.AddFormatFlags(fl)
	return cmd
}

// load reads diff's settings: the scheme, whether the sides are records
// or bare arguments, the selection (--from, --only, --omit and the tools
// sections), the key's form and the report's.
func (opts *Options) load(cmd *cobra.Command) error {
	f := opts.f
	var err error
	if opts.Scheme, err = keyflags.Scheme(f); err != nil {
		return err
	}
	opts.Record = f.Config.GetBool("record")
	fl := cmd.Flags()
	// Arguments shaped like a call record are bare arguments when
	// the user said so: --from args, or --task/--tool given.
	opts.BareArgs = !opts.Record && (cli.Changed(fl, "from") && f.Config.GetString("from") == derive.FromArgs ||
		cli.Changed(fl, "task") || cli.Changed(fl, "tool"))
	// --only and --omit resolve as for key: flag, IDEMKEY_*, config file.
	// So do a tool's only and omit in the config file's tools section.
	tools, err := keyflags.ToolSelections(f)
	if err != nil {
		return err
	}
	if cli.Changed(fl, "from") || len(f.Config.GetStringSlice("only")) > 0 || len(f.Config.GetStringSlice("omit")) > 0 ||
		f.Config.GetString("from") != derive.FromArgs || len(tools) > 0 {
		spec := &derive.Spec{
			From: f.Config.GetString("from"), Task: f.Config.GetString("task"), Tool: f.Config.GetString("tool"),
			Scheme: opts.Scheme, Only: f.Config.GetStringSlice("only"), Omit: f.Config.GetStringSlice("omit"),
			AllowMissing: f.Config.GetBool("allow-missing"), Tools: tools,
		}
		if !derive.ValidFrom(spec.From) {
			return cli.Usagef("invalid --from %q (want one of %s)", spec.From, strings.Join(derive.FromNames, ", "))
		}
		opts.Spec = spec
	}
	if opts.Key, err = keyflags.KeyFrom(f); err != nil {
		return err
	}
	opts.JSON = f.Config.GetBool("json")
	opts.Explain = f.Config.GetBool("explain")
	opts.Schemes = f.Config.GetBool("schemes")
	opts.Max = f.Config.GetInt("max")
	if opts.Max < 0 {
		return cli.Usagef("invalid --max %d (want 0 for no limit, or a positive number)", opts.Max)
	}
	if l := f.Config.GetString("line"); l != "" {
		if opts.Lines, err = parseLines(l); err != nil {
			return err
		}
	}
	return nil
}

const long = `Compare two tool calls and explain, difference by difference, why their
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
retry regenerates (a request, trace, span or correlation id, a nonce, the
attempt's send time or number; judged by the name the pointer ends in,
never by the look of the values; tenant, account, user, customer, key and
authorization names are identity, never offered). Any other difference (a title, a flag, a recipient, a
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

Exit status: 0 when the keys are equal, 1 when they differ, 2 on bad input.`

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
			return lines, &cli.UsageError{Err: fmt.Errorf("invalid --line %q", text), HintText: "give a line number from 1, or two as N:M (line N of A, line M of B)"}
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
				return in, &cli.InputError{Name: in.name, Line: n, Err: errors.New("the line is empty: no call to compare")}
			}
			return diffInput{data: line, name: in.name, line: n}, nil
		}
		if i < 0 || i == len(data)-1 {
			return in, &cli.InputError{Name: in.name, Err: fmt.Errorf("no line %d: the log has %d %s", n, k, cli.Plural(k, "line", "lines"))}
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

func run(opts *Options) error {
	if opts.FileA == "-" && opts.FileB == "-" || opts.FileA == "" && opts.FileB == "" {
		return cli.Usagef("only one of A and B can be - (standard input)")
	}
	var in [2]diffInput
	for k, file := range []string{opts.FileA, opts.FileB} {
		data, name, err := input.Read(opts.f, file)
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
		return &cli.ExitError{Code: cli.ExitNegative}
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

func compareSides(opts *Options, a, b *diff.Side, s canon.Scheme) *diffResult {
	return &diffResult{a: a, b: b, scheme: s, explain: opts.Explain,
		keyA: opts.key(a), keyB: opts.key(b),
		Result: diff.Compare(a, b, diff.Options{Scheme: s, Max: opts.Max, Explain: opts.Explain})}
}

// key formats a side's key as key would print it (--format, --prefix,
// --secret-env), so that it matches what a server logs.
func (opts *Options) key(s *diff.Side) string {
	return string(opts.Key.Append(nil, derive.Call{Task: s.Task, Tool: s.Tool, Args: s.Args}))
}

// loadSides parses both inputs under scheme s.
func loadSides(opts *Options, in [2]diffInput, s canon.Scheme) (*diff.Side, *diff.Side, error) {
	var task, tool string
	var ttErr error
	ttDone := false
	taskTool := func() (string, string, error) {
		if !ttDone {
			ttDone = true
			task, tool, ttErr = keyflags.TaskTool(opts.f)
			var ue *cli.UsageError
			if errors.As(ttErr, &ue) && strings.HasPrefix(ue.Error(), "missing") {
				ue.HintText = `give --task and --tool for bare arguments, or compare call records {"task":…,"tool":…,"args":…}`
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
			return nil, nil, &cli.InputError{Name: in[k].name, Line: in[k].line, Err: err}
		}
		side := &diff.Side{Name: in[k].name, Doc: doc}
		root := doc.Root()
		if opts.Record || !opts.BareArgs && diff.IsRecord(root) {
			if err := side.FromRecord(root); err != nil {
				return nil, nil, &cli.InputError{Name: in[k].name, Line: in[k].line, Err: err}
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
func loadSpecSide(opts *Options, in diffInput, s canon.Scheme) (*diff.Side, error) {
	spec := *opts.Spec
	spec.Scheme = s
	if spec.From == derive.FromArgs && !opts.BareArgs {
		if doc, err := canon.Parse(in.data, s); err == nil && (opts.Record || diff.IsRecord(doc.Root())) {
			spec.From = derive.FromCall
		}
	}
	if spec.From == derive.FromArgs && (spec.Task == "" || spec.Tool == "") {
		if _, _, err := keyflags.TaskTool(opts.f); err != nil {
			return nil, err
		}
	}
	lc, err := keyflags.Load(&spec, in.data)
	if err != nil {
		return nil, cli.InputErr(in.name, in.line, err)
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

func schemeVerdicts(opts *Options, in [2]diffInput, res *diffResult) []schemeVerdict {
	var out []schemeVerdict
	for _, s := range []canon.Scheme{canon.JS, canon.JCS} {
		v := schemeVerdict{scheme: s}
		if s == res.scheme {
			v.keyA, v.keyB = res.keyA, res.keyB
			v.verdict = map[bool]string{true: "equal", false: "differ"}[res.Equal]
		} else if a, b, err := loadSides(opts, in, s); err != nil {
			v.verdict, v.err = "rejected", cli.OneLine(err.Error())
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
	o := &cli.JSONObject{}
	o.Bool("equal", r.Equal).
		Str("key_a", r.keyA).
		Str("key_b", r.keyB).
		Str("scheme", r.scheme.String()).
		Str("a", r.a.Name).
		Str("b", r.b.Name)
	e := r.Result
	o.Raw("differences", entriesJSON(e.Diffs.Items, false))
	o.Int("omitted", e.Diffs.Omitted)
	o.Raw("warnings", entriesJSON(e.Warns.Items, true))
	o.Int("warnings_omitted", e.Warns.Omitted)
	if r.explain {
		o.Raw("absorbed", entriesJSON(e.Notes.Items, true))
		o.Int("absorbed_omitted", e.Notes.Omitted)
	}
	if r.schemes != nil {
		s := &cli.JSONObject{}
		for _, v := range r.schemes {
			vo := &cli.JSONObject{}
			vo.Str("verdict", v.verdict)
			if v.err != "" {
				vo.Str("error", v.err)
			} else {
				vo.Str("key_a", v.keyA).Str("key_b", v.keyB)
			}
			s.Raw(v.scheme.String(), cli.TrimNL(vo.Line()))
		}
		s.Bool("agree", r.schemesAgree).Str("reason", r.schemesReason())
		o.Raw("schemes", cli.TrimNL(s.Line()))
	}
	return o.Line()
}

func entriesJSON(es []diff.Entry, raw bool) []byte {
	b := []byte{'['}
	for k, en := range es {
		if k > 0 {
			b = append(b, ',')
		}
		o := &cli.JSONObject{}
		o.Str("pointer", en.Pointer)
		if en.PointerB != "" {
			o.Str("pointer_b", en.PointerB)
		}
		o.Str("kind", en.Kind)
		switch {
		case en.Kind == diff.WarnDuplicate:
			o.Str("side", en.RawA)
		case raw:
			o.Str("a", en.RawA).Str("b", en.RawB)
		default:
			if en.A.Has() {
				o.Raw("a", en.A.Canonical())
			}
			if en.B.Has() {
				o.Raw("b", en.B.Canonical())
			}
		}
		if raw {
			o.Str("message", en.Reason)
		} else {
			o.Str("reason", en.Reason)
		}
		if p, ok := argsPointer(en.Pointer); ok && !raw && diff.EntryRegenerated(p, en) {
			o.Str("omit", p) // request metadata, the pointer as --omit takes it
		}
		b = append(b, cli.TrimNL(o.Line())...)
	}
	return append(b, ']')
}

// human writes the report for people: the verdict with both keys, the
// differences and what to do about them, the warnings, and with
// --explain and --schemes what canonicalization absorbed and whether the
// schemes agree.
func (r *diffResult) human(f *cli.Factory) {
	h := newHumanOut(f)
	r.humanVerdict(h)
	r.humanDiffs(h)
	for _, en := range r.Warns.Items {
		fmt.Fprintf(h.w, "%s %s\n", h.warn.Sprint("warning:"), warningLine(en))
	}
	if r.Warns.Omitted > 0 {
		fmt.Fprintf(h.w, "%s %d more %s not shown\n", h.warn.Sprint("warning:"), r.Warns.Omitted, cli.Plural(r.Warns.Omitted, "warning", "warnings"))
	}
	if r.explain {
		r.humanAbsorbed(h)
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
		fmt.Fprintf(h.w, "%s %s; %s\n", h.bold.Sprint("schemes:"), strings.Join(parts, ", "), r.schemesReason())
	}
}

// humanOut is where the human report goes, and its colours (as --color
// says, for standard output).
type humanOut struct {
	w                                  io.Writer
	paint                              func(attrs ...color.Attribute) *color.Color
	bold, ptr, kind, a, b, faint, warn *color.Color
}

func newHumanOut(f *cli.Factory) *humanOut {
	w, mode := f.IO.Out, f.ColorMode()
	paint := func(attrs ...color.Attribute) *color.Color { return f.IO.Paint(mode, w, attrs...) }
	return &humanOut{w: w, paint: paint, bold: paint(color.Bold), ptr: paint(color.FgCyan, color.Bold), kind: paint(color.FgYellow),
		a: paint(color.FgRed), b: paint(color.FgGreen), faint: paint(color.Faint), warn: paint(color.FgRed, color.Bold)}
}

// entry writes one difference (or absorbed difference): its pointer (and
// b's), its kind, both values and the reason.
func (h *humanOut) entry(en diff.Entry, a, b string) {
	ptr := diff.RevealPointer(en.Pointer)
	if ptr == "" {
		ptr = "(top)"
	}
	fmt.Fprintf(h.w, "%s", h.ptr.Sprint(ptr))
	if en.PointerB != "" {
		fmt.Fprintf(h.w, " (b: %s)", h.ptr.Sprint(diff.RevealPointer(en.PointerB)))
	}
	fmt.Fprintf(h.w, "  %s\n", h.kind.Sprint(en.Kind))
	fmt.Fprintf(h.w, "    %s %s\n", h.a.Sprint("a:"), a)
	fmt.Fprintf(h.w, "    %s %s\n", h.b.Sprint("b:"), b)
	fmt.Fprintf(h.w, "    %s\n", en.Reason)
}

// humanVerdict is the first line: equal or not, with both keys (green
// only when nothing says different inputs can share the key).
func (r *diffResult) humanVerdict(h *humanOut) {
	verdict := h.paint(color.FgRed, color.Bold)
	sep := "!="
	if r.Equal {
		verdict = h.paint(color.FgGreen, color.Bold)
		if r.Warns.Total() > 0 {
			verdict = h.paint(color.FgYellow, color.Bold)
		}
		sep = "=="
	}
	fmt.Fprintf(h.w, "%s (%s): %s %s %s %s %s\n", verdict.Sprint(r.verdictWord()), r.scheme,
		r.a.Name, r.keyA, sep, r.b.Name, r.keyB)
}

// humanDiffs writes the differences that change the key and the hints on
// what to do, or why the keys are equal.
func (r *diffResult) humanDiffs(h *humanOut) {
	w, e := h.w, r.Result
	for _, en := range e.Diffs.Items {
		a, b := diff.ShowPair(en.A.Revealed(), en.B.Revealed())
		h.entry(en, a, b)
	}
	if e.Diffs.Omitted > 0 {
		fmt.Fprintf(w, "… %d more %s not shown (--max %d; --max 0 shows all)\n",
			e.Diffs.Omitted, cli.Plural(e.Diffs.Omitted, "difference", "differences"), e.Diffs.Max)
	}
	switch n := e.Diffs.Total(); {
	case n > 0:
		fmt.Fprintf(w, "%s\n", h.bold.Sprintf("%d %s the key", n, cli.Plural(n, "difference changes", "differences change")))
		meta, values := adviceLists(e.Diffs.Items)
		if len(meta) > 0 {
			fmt.Fprintf(w, "%s %s %s request metadata that each attempt regenerates: leaving %s out gives a call's retries one key "+
				"(pointers above are into the call record; --omit and --only take them relative to the arguments, without /args): %s; %s\n",
				h.faint.Sprint("hint:"), strings.Join(meta, ", "), cli.Plural(len(meta), "looks like", "look like"),
				cli.Plural(len(meta), "it", "them"), omitFlags(meta), diff.RekeyNote(diff.RevealPointer(r.a.Tool)))
		}
		if len(values) > 0 {
			fmt.Fprintf(w, "%s %s %s in value: if a and b are one call retried, the harness must send the same %s; if they are two calls, the keys are right to differ\n",
				h.faint.Sprint("hint:"), strings.Join(values, ", "), cli.Plural(len(values), "differs", "differ"), cli.Plural(len(values), "value", "values"))
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
}

// humanAbsorbed lists what canonicalization absorbed (--explain).
func (r *diffResult) humanAbsorbed(h *humanOut) {
	e := r.Result
	if len(e.Notes.Items) == 0 {
		fmt.Fprintln(h.w, h.faint.Sprint("canonicalization absorbed nothing: the texts differ only where the key does"))
	} else {
		fmt.Fprintln(h.w, h.bold.Sprint("absorbed by canonicalization (these do not change the key):"))
	}
	for _, en := range e.Notes.Items {
		a, b := diff.ShowPair(diff.Reveal([]byte(en.RawA)), diff.Reveal([]byte(en.RawB)))
		h.entry(en, a, b)
	}
	if e.Notes.Omitted > 0 {
		fmt.Fprintf(h.w, "… %d more not shown\n", e.Notes.Omitted)
	}
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
		flags = append(flags, "--omit "+cli.ShellQuote(p))
	}
	return strings.Join(flags, " ")
}
