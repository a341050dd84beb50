// Package drift is the face of 'idemkey drift': retries that got a new
// key, and distinct writes that share one, in a log of tool calls (the
// library: derive/drift).
package drift

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/input"
	"github.com/idemkey/idemkey/cmd/internal/keyflags"
	"github.com/idemkey/idemkey/cmd/internal/settings"
	"github.com/idemkey/idemkey/derive"
	"github.com/idemkey/idemkey/derive/diff"
	"github.com/idemkey/idemkey/derive/drift"
	"github.com/spf13/cobra"
)

const fromOTel = "otel" // OTLP JSON traces with GenAI execute_tool spans

// Options are drift's settings.
type Options struct {
	f           *cli.Factory
	Files       []string
	Spec        *derive.Spec
	TaskPointer string
	TaskAttr    string
	Key         keyflags.Key
	JSON        bool
	Analysis    drift.Options
}

// NewCmd builds 'idemkey drift': its options, its flags, and run; with
// runF, runF instead of run, once the options are read (a test's seam for
// the flags and settings).
func NewCmd(f *cli.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{f: f}
	d := drift.Defaults
	cmd := &cobra.Command{
		Use:   "drift [LOG...|-]",
		Short: "Find retries that got a new key, and distinct writes that share one",
		Long:  long,
		Example: `  idemkey drift calls.jsonl
  idemkey drift --json --from openai --task-pointer /task_id tool_calls.jsonl
  idemkey drift --from otel --task-attr gen_ai.conversation.id traces.json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Files = args
			if len(args) == 0 {
				opts.Files = []string{"-"}
			}
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
	fl.String("from", derive.FromCall, "shape of each line: "+strings.Join(derive.FromNames, ", ")+", or otel (OTLP JSON)")
	settings.OneOf(fl, "from", append(slices.Clip(derive.FromNames), "otel")...)
	fl.String("task", "", "task id of calls whose shape carries none (IDEMKEY_TASK)")
	fl.String("task-pointer", "", "read each line's task id from this member (RFC 6901 pointer into the line)")
	fl.String("task-attr", "", "with --from otel: the attribute that holds the task id (default: the trace id)")
	fl.String("tool", "", "tool name of calls whose shape carries none (IDEMKEY_TOOL)")
	fl.String("scheme", "js", "canonical form: js (the reference harness) or jcs (RFC 8785)")
	settings.OneOf(fl, "scheme", canon.SchemeNames...)
	fl.StringArray("only", nil, "derive keys from just this part of the args (an RFC 6901 `POINTER`; repeatable)")
	fl.StringArray("omit", nil, "leave this part of the args out of the keys (an RFC 6901 `POINTER`; repeatable)")
	settings.ReadPerTool(fl, "only", "omit")
	fl.Bool("allow-missing", false, "let --only pointers that match nothing in a line be ignored (else the line is bad)")
	keyflags.AddFormatFlags(fl)
	fl.Bool("json", false, "print one JSON object for machines")
	fl.Int("window", d.Window, "how many lines back the search for a call's retries looks")
	fl.Int("max-between", d.MaxBetween, "a retry comes back with at most this many other calls of its task between; a key shared farther apart is a collapse")
	fl.Duration("window-time", d.WindowTime, "retries lie at most this far apart in time, when the log has times")
	fl.Int("max-leaves", d.MaxLeaves, "a retry differs at no more leaves than this")
	fl.Float64("max-fraction", d.MaxFraction, "nor at more than this share of the leaves")
	fl.Float64("min-fresh", d.MinFresh, "timestamps and ids are volatile at a pointer that differs in this share of a tool's near-duplicate pairs")
	fl.Duration("time-gap", d.TimeGap, "timestamps of one call's attempts differ by at most this")
	fl.Float64("float-tolerance", d.FloatTolerance, "relative difference of float noise")
	fl.Int("max-step", d.MaxStep, "a counter grows by at most this between attempts")
	fl.Float64("text-similarity", d.TextSimilarity, "share of words a reworded text keeps")
	fl.Float64("share", d.Share, "suggest the metadata pointers that vary in at least this share of a tool's drift clusters")
	// --from takes otel besides the shapes key takes: the completion the
	// tree gives every --from would leave it out.
	_ = cmd.RegisterFlagCompletionFunc("from", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return append(slices.Clone(derive.FromNames), fromOTel), cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// load reads drift's settings: the calls' shape and selection (as key
// reads them), the task's place in a line, the key's form and the
// analysis's (see analysis).
func (opts *Options) load(cmd *cobra.Command) error {
	f := opts.f
	v := f.Config
	spec := &derive.Spec{
		From: v.GetString("from"), Task: v.GetString("task"), Tool: v.GetString("tool"),
		Only: v.GetStringSlice("only"), Omit: v.GetStringSlice("omit"), AllowMissing: v.GetBool("allow-missing"),
	}
	if spec.From == derive.FromCall && !cli.Changed(cmd.Flags(), "task") {
		// Records carry their tasks: a log holds many, and an
		// IDEMKEY_TASK meant for key must not contradict them all.
		spec.Task = ""
	}
	var err error
	if spec.Scheme, err = keyflags.Scheme(f); err != nil {
		return err
	}
	if spec.From != fromOTel && !derive.ValidFrom(spec.From) {
		return cli.Usagef("invalid --from %q (want one of %s, %s)", spec.From, strings.Join(derive.FromNames, ", "), fromOTel)
	}
	// Pointers are checked as key checks them (canon.ParsePointer).
	for _, fp := range []struct {
		flag string
		ps   []string
	}{{"--only", spec.Only}, {"--omit", spec.Omit}} {
		for _, p := range fp.ps {
			if err := keyflags.PointerFlag(fp.flag, p); err != nil {
				return err
			}
		}
	}
	for _, p := range spec.Omit {
		if p == "" {
			return cli.Usagef("--omit '' would drop the whole arguments value")
		}
	}
	if spec.Tools, err = keyflags.ToolSelections(f); err != nil {
		return err
	}
	opts.Spec = spec
	opts.TaskPointer = v.GetString("task-pointer")
	opts.TaskAttr = v.GetString("task-attr")
	if opts.TaskPointer != "" {
		if err := keyflags.PointerFlag("--task-pointer", opts.TaskPointer); err != nil {
			return err
		}
	}
	if opts.Key, err = keyflags.KeyFrom(f); err != nil {
		return err
	}
	opts.JSON = v.GetBool("json")
	opts.Analysis, err = analysis(v, spec)
	return err
}

// analysis reads the retry rule's settings, each checked.
func analysis(v *settings.Settings, spec *derive.Spec) (drift.Options, error) {
	a := drift.Options{
		Window: v.GetInt("window"), MaxBetween: v.GetInt("max-between"), WindowTime: v.GetDuration("window-time"), MaxLeaves: v.GetInt("max-leaves"),
		MaxFraction: v.GetFloat64("max-fraction"), MinFresh: v.GetFloat64("min-fresh"), TimeGap: v.GetDuration("time-gap"),
		FloatTolerance: v.GetFloat64("float-tolerance"), MaxStep: v.GetInt("max-step"), TextSimilarity: v.GetFloat64("text-similarity"),
		Share: v.GetFloat64("share"), Scheme: spec.Scheme, Omit: spec.Omit, Only: spec.Only,
	}
	for name, bad := range map[string]bool{
		"window": a.Window <= 0, "max-between": a.MaxBetween < 0, "window-time": a.WindowTime <= 0, "max-leaves": a.MaxLeaves <= 0,
		"max-fraction": a.MaxFraction <= 0 || a.MaxFraction > 1, "min-fresh": a.MinFresh <= 0 || a.MinFresh > 1,
		"time-gap": a.TimeGap <= 0, "float-tolerance": a.FloatTolerance <= 0, "max-step": a.MaxStep <= 0,
		"text-similarity": a.TextSimilarity <= 0 || a.TextSimilarity > 1, "share": a.Share <= 0 || a.Share > 1,
	} {
		if bad {
			return a, cli.Usagef("invalid --%s %s", name, v.GetString(name))
		}
	}
	if a.MaxBetween == 0 {
		a.MaxBetween = -1 // none between: the analysis reads 0 as its default
	}
	return a, nil
}

const long = `Read a log of tool calls and find:

  - drift: calls that look like one call retried but got more than one key,
    with the pointers whose values vary, the kind of each variation, and the
    --omit flags that give them one key (checked by deriving the keys again);
  - collapsed writes: one key shared by calls that the retry rule would not
    join as one call retried (far apart, or under different call ids where
    the log keeps call ids across attempts): possibly distinct writes, the
    later swallowed;
  - for each tool, the request metadata that varies in most of its drift
    clusters: the --omit flags (or config lines) to adopt.

The log is JSON Lines, one call a line, in any --from shape (default call:
{"task","tool","args"} records); for envelopes the task comes from --task or
from the member named by --task-pointer. A call id is read from a top-level
"call_id" member, or the "id" of an OpenAI tool call or Anthropic tool_use
block (never an MCP request id, which is per attempt). --from otel reads
OTLP JSON traces (one export request per line, as the OpenTelemetry file
exporter writes them, or one document): every execute_tool span (OpenTelemetry
GenAI semantic conventions, as of v1.41.0) is a call, with the tool from
gen_ai.tool.name, the arguments from gen_ai.tool.call.arguments (a JSON
string or a structured value), the call id from gen_ai.tool.call.id, the
time from the span's start, and the task from the trace id or from the
attribute named by --task-attr (span first, then resource), e.g.
gen_ai.conversation.id. Several logs are read as one, their lines numbered
on from file to file.

Pointers are RFC 6901, relative to the arguments, exactly as --omit takes
them. --omit and --only (flags, IDEMKEY_*, config) apply as for key: keys
are derived with them, and what they leave out is not a variation.

Two calls are one call retried when they have the same task and tool, lie
close (at most --max-between other calls of their task between them that
are not themselves repeats, and at most --window-time apart when times are
known; lines of other tasks do not count), differ at no more than
--max-leaves leaves (and no more than --max-fraction of them), and every
difference is volatile: a reordered array; float noise (relative
difference up to --float-tolerance); timestamps at most --time-gap apart,
or random-looking ids (UUIDs, ULIDs, trace ids, prefixed tokens), at a
pointer that differs in at least --min-fresh of the tool's near-duplicate
pairs; a counter that steps up by 1 to --max-step at such a pointer, where
most differences are such steps; a text reworded with the same numbers and
at least --text-similarity of its words. Where the log keeps call ids
across attempts (most retry-like pairs share theirs), two call ids are two
calls. Amounts, e-mail addresses, other ids and every other difference make
calls distinct. A retry is searched for among the --window lines before it.
One key shared by two calls that this rule would not join is a collapse.

The advice is safe: --omit is suggested only for request metadata that a
retry regenerates (the attempt's send time, request, trace, span and
correlation ids, nonces, attempt counters), judged by the name the pointer
ends in, never by the look of the values; tenant, account, user, customer,
key and authorization names are identity and never left out. Any other
variation (float noise, a reordered array, reworded text, a time or id
whose name does not say it is metadata) is a value: leaving it out would
let distinct writes share a key, so drift says what differs and that the
harness must send the same value. Adopting an --omit re-keys every step of
the tool: a step retried across the change runs again.

--json prints one object: {"findings":[{"kind":"drift"|"collapse","task",
"tool","lines","keys","pointers"?,"variations"?:[{"pointer","kind",
"regenerated","advice"?}],"omit"?,"send_same"?,"verified"?,"call_ids"?,
"reason"?}],"suggestions":[{"tool","omit","clusters"}],"calls",
"bad_lines"}: "omit" holds only regenerated metadata, "send_same" the
values the harness must send the same, "verified" says the omit flags give
the cluster one key (never while a value varies).

Exit status: 1 when anything was found, 0 when nothing was, 2 on bad input
(a bad line is reported with its line number and skipped).`

// driftChunk is a run of lines of one log and, once done is closed, the
// calls prepared from them.
type driftChunk struct {
	name  string
	first int // line number (across the logs) of the first line
	local int // and within its own log, for messages (FILE:LINE)
	data  []byte
	lines [][2]int
	done  chan struct{}
	calls []*drift.Prepared
	errs  []error
}

func run(opts *Options) error {
	// The analysis keeps what it needs of the calls that have near
	// duplicates; a soft limit makes the collector work harder instead of
	// letting the heap grow to twice that.
	if debug.SetMemoryLimit(-1) == math.MaxInt64 {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(driftMemoryLimit))
	}
	ios := opts.f.IO
	an := opts.Analysis
	an.Rekey = opts.rekey
	a := drift.New(an)
	var bad int
	var err error
	if opts.Spec.From == fromOTel {
		bad, err = opts.readOTel(a)
	} else {
		bad, err = opts.readLines(a)
	}
	if err != nil {
		a.Finish()
		return err
	}
	rep := a.Finish()
	if opts.JSON {
		if err := opts.reportJSON(rep, bad); err != nil {
			return err
		}
	} else if err := opts.reportHuman(rep, bad); err != nil {
		return err
	}
	switch {
	case bad > 0:
		fmt.Fprintf(ios.Err, "idemkey: %d bad %s skipped\n", bad, cli.Plural(bad, "line", "lines"))
		return &cli.ExitError{Code: cli.ExitUsage}
	case len(rep.Findings) > 0:
		return &cli.ExitError{Code: cli.ExitNegative}
	}
	return nil
}

// driftMemoryLimit is the soft memory limit while drift runs.
const driftMemoryLimit = 768 << 20

// canonicalKey is Key.SumText of arguments already in canonical form: the
// canonical form is a fixed point (canon's FuzzCanonical checks it), so
// the key is the hash of the call's canonical text written around them,
// without writing them again.
func (opts *Options) canonicalKey(t derive.Text) ([32]byte, error) {
	var k [32]byte
	if err := t.Validate(); err != nil {
		return k, err
	}
	h := opts.Key.Hash256()
	var pre [256]byte
	b := append(pre[:0], '[')
	b = canon.AppendQuoted(b, t.Task)
	b = append(b, ',')
	b = canon.AppendQuoted(b, t.Tool)
	h.Write(append(b, ','))
	h.Write(t.Args)
	h.Write([]byte{']'})
	h.Sum(k[:0])
	return k, nil
}

// rekey derives the key of full arguments with the user's --only and
// --omit and the extra pointers omitted, through the loader key uses.
func (opts *Options) rekey(task, tool string, args canon.Node, omit []string) ([32]byte, error) {
	spec := opts.Spec.ForTool(tool).Copy()
	spec.Omit = append(append([]string{}, spec.Omit...), omit...)
	if len(spec.Only) == 0 {
		// --omit alone: the selection key applies (derive.AppendOmitted),
		// from the parsed canonical arguments.
		return opts.Key.SumText(derive.Text{Task: task, Tool: tool, Args: derive.AppendOmitted(nil, args, spec.Omit), Scheme: spec.Scheme})
	}
	sel, _, err := spec.SelectArgs(args)
	if err != nil {
		return [32]byte{}, err
	}
	return opts.Key.Sum(derive.Call{Task: task, Tool: tool, Args: sel}), nil
}

// readLines reads the JSON Lines logs, preparing calls on every core and
// adding them in log order.
func (opts *Options) readLines(a *drift.Analyzer) (bad int, err error) {
	workers := runtime.GOMAXPROCS(0)
	todo := make(chan *driftChunk, 2*workers)
	order := make(chan *driftChunk, 2*workers)
	quit := make(chan struct{})
	defer close(quit)
	var readErr error
	go func() {
		defer close(todo)
		defer close(order)
		lineNo := 0
		for _, file := range opts.Files {
			// A bad line is named by its place in its own file; reports
			// number the lines on across the logs.
			if readErr = opts.chunkFile(file, &lineNo, order, todo, quit); readErr != nil {
				return
			}
		}
	}()
	for range workers {
		spec := opts.Spec.Copy()
		go func() {
			var sc drift.Scratch
			var root canon.Parser
			for c := range todo {
				opts.prepareChunk(spec, &root, &sc, c)
				close(c.done)
			}
		}()
	}
	for c := range order {
		<-c.done
		for _, e := range c.errs {
			opts.f.PrintError(e)
		}
		bad += len(c.errs)
		for _, p := range c.calls {
			a.Add(p)
		}
	}
	if readErr != nil {
		return bad, readErr
	}
	return bad, nil
}

// chunkFile splits one log into chunks of whole lines.
func (opts *Options) chunkFile(file string, lineNo *int, order, todo chan<- *driftChunk, quit <-chan struct{}) error {
	in, name, _, closeIn, err := input.OpenLines(opts.f, file)
	if err != nil {
		return err
	}
	defer closeIn()
	// Chunks of whole lines, read by the one JSON Lines reader (key
	// --batch's): a line may be as long as a document may.
	r := &input.ChunkReader{In: in, Limit: int(canon.MaxSize)}
	start := *lineNo
	for !r.Done {
		// Each chunk its own buffer: the workers hold it until it is done.
		c := &driftChunk{name: name, first: *lineNo + 1, local: *lineNo - start + 1, done: make(chan struct{})}
		c.data = r.Next(make([]byte, 0, input.ChunkSize+64<<10))
		for rest, off := c.data, 0; len(rest) > 0; {
			l := len(rest)
			if i := bytes.IndexByte(rest, '\n'); i >= 0 {
				l = i + 1
			}
			c.lines = append(c.lines, [2]int{off, len(input.TrimEOL(rest[:l]))})
			rest, off = rest[l:], off+l
			*lineNo++
		}
		if len(c.lines) > 0 {
			select {
			case order <- c:
			case <-quit:
				return nil
			}
			select {
			case todo <- c:
			case <-quit:
				return nil
			}
		}
	}
	return r.Failure(name)
}

// prepareChunk loads, keys and prepares each call of a chunk.
func (opts *Options) prepareChunk(spec *derive.Spec, root *canon.Parser, sc *drift.Scratch, c *driftChunk) {
	for i, ln := range c.lines {
		lineNo := c.first + i
		body := c.data[ln[0] : ln[0]+ln[1]]
		if len(bytes.TrimSpace(body)) == 0 {
			continue
		}
		call, err := opts.loadLine(spec, root, body)
		if err != nil {
			c.errs = append(c.errs, cli.InputErr(c.name, c.local+i, err))
			continue
		}
		call.Line = lineNo
		c.calls = append(c.calls, drift.Prepare(call, sc))
	}
}

// loadLine reads one line of a JSON Lines log.
func (opts *Options) loadLine(spec *derive.Spec, root *canon.Parser, body []byte) (drift.Call, error) {
	var top canon.Node
	var haveTop bool
	if opts.TaskPointer != "" || spec.From == derive.FromOpenAI || spec.From == derive.FromAuto {
		doc, err := root.Parse(body, spec.Scheme)
		if err != nil {
			return drift.Call{}, err
		}
		top, haveTop = doc.Root(), true
		if opts.TaskPointer != "" {
			v, ok := top.At(opts.TaskPointer)
			if !ok || v.Kind() != canon.String {
				return drift.Call{}, &cli.HintedError{Msg: fmt.Sprintf("--task-pointer %s: no task id (a string) in this line", opts.TaskPointer)}
			}
			spec.Task = v.Text() // spec is this worker's own
		}
	}
	lc, err := keyflags.Load(spec, body)
	if err != nil {
		return drift.Call{}, err
	}
	// The canonical text, once, by the one-pass writer; without --only
	// or --omit the key is derived from it.
	raw := lc.Args.Raw()
	text, err := canon.AppendCanonical(make([]byte, 0, len(raw)+len(raw)/8+16), raw, spec.Scheme)
	if err != nil {
		return drift.Call{}, err
	}
	var key [32]byte
	if lc.Selected {
		key = opts.Key.Sum(lc.Call)
	} else if key, err = opts.canonicalKey(derive.Text{Task: lc.Call.Task, Tool: lc.Call.Tool, Args: text, Scheme: spec.Scheme}); err != nil {
		return drift.Call{}, err
	}
	if !haveTop {
		if d := lc.Args.Document(); d != nil {
			top = d.Root() // the record or envelope the arguments are in
		}
	}
	return drift.Call{Task: lc.Call.Task, Tool: lc.Call.Tool, CallID: callID(top, lc.From, lc.Call.Tool), Args: lc.Args, Text: text, Key: key}, nil
}

// callID returns the model's tool call id of a logged call, or "": a
// top-level "call_id", or the "id" of an OpenAI tool call or an Anthropic
// tool_use block — in a message, of the block or tool call the arguments
// came from, never the message's own id, which is per response. An MCP
// request id is per attempt, never a call id.
func callID(top canon.Node, from, tool string) string {
	if top.Kind() != canon.Object {
		return ""
	}
	if id := derive.StringAt(top, "call_id"); id != "" {
		return id
	}
	// A message: the tool call the loader picked (the only one, or the
	// only one of the tool).
	inner := func(list canon.Node, isCall func(canon.Node) bool, name func(canon.Node) (string, string)) string {
		var ids, named []string
		for _, e := range list.Elements() {
			if isCall(e) {
				n, id := name(e)
				ids = append(ids, id)
				if n == tool {
					named = append(named, id)
				}
			}
		}
		switch {
		case len(ids) == 1:
			return ids[0]
		case len(named) == 1:
			return named[0]
		}
		return ""
	}
	switch from {
	case derive.FromOpenAI:
		if calls, ok := top.Get("tool_calls"); ok && calls.Kind() == canon.Array {
			return inner(calls, func(canon.Node) bool { return true }, derive.OpenAICallName)
		}
		if output, ok := top.Get("output"); ok && output.Kind() == canon.Array && !derive.IsType(top, "function_call") {
			return inner(output, derive.IsOpenAICall, derive.OpenAICallName)
		}
		return derive.StringAt(top, "id")
	case derive.FromAnthropic:
		if content, ok := top.Get("content"); ok && content.Kind() == canon.Array && !derive.IsType(top, "tool_use") {
			return inner(content, derive.IsToolUse, derive.AnthropicBlockName)
		}
		return derive.StringAt(top, "id")
	case derive.FromCall:
		return derive.StringAt(top, "id")
	}
	return ""
}

// ---- output ----

func (opts *Options) fmtKey(k [32]byte) string { return opts.Key.Text(k) }

func (opts *Options) reportJSON(rep *drift.Report, bad int) error {
	w := bufio.NewWriterSize(opts.f.IO.Out, 64<<10)
	w.WriteString(`{"findings":[`)
	var b []byte
	for k, f := range rep.Findings {
		b = b[:0]
		if k > 0 {
			b = append(b, ',')
		}
		o := &cli.JSONObject{}
		o.Str("kind", f.Kind).Str("task", f.Task).Str("tool", f.Tool)
		o.Raw("lines", cli.IntsJSON(f.Lines))
		keys := make([]string, len(f.Keys))
		for i, key := range f.Keys {
			keys[i] = opts.fmtKey(key)
		}
		o.Raw("keys", cli.StringsJSON(keys))
		if f.Kind == drift.FindingDrift {
			o.Raw("pointers", cli.StringsJSON(f.Pointers()))
			vs := []byte{'['}
			for i, v := range f.Variations {
				if i > 0 {
					vs = append(vs, ',')
				}
				vo := &cli.JSONObject{}
				vo.Str("pointer", v.Pointer).Str("kind", v.Kind).Bool("regenerated", v.Regenerated)
				if v.Advice != "" {
					vo.Str("advice", v.Advice)
				}
				vs = append(vs, cli.TrimNL(vo.Line())...)
			}
			o.Raw("variations", append(vs, ']'))
			o.Raw("omit", cli.StringsJSON(f.Omit))
			o.Raw("send_same", cli.StringsJSON(f.SendSame))
			o.Bool("verified", f.Verified)
		} else {
			o.Raw("call_ids", cli.StringsJSON(f.CallIDs))
			o.Str("reason", f.Reason)
		}
		b = append(b, cli.TrimNL(o.Line())...)
		w.Write(b)
	}
	w.WriteString(`],"suggestions":[`)
	for k, s := range rep.Suggestions {
		if k > 0 {
			w.WriteByte(',')
		}
		o := &cli.JSONObject{}
		o.Str("tool", s.Tool).Raw("omit", cli.StringsJSON(s.Omit)).Int("clusters", s.Clusters)
		w.Write(cli.TrimNL(o.Line()))
	}
	w.WriteString("],")
	o := &cli.JSONObject{}
	o.Int("calls", rep.Calls).Int("bad_lines", bad)
	w.Write(o.Line()[1:])
	return w.Flush()
}

func omitArgs(ps []string) string {
	var parts []string
	for _, p := range ps {
		parts = append(parts, "--omit "+cli.ShellQuote(p))
	}
	return strings.Join(parts, " ")
}

func linesList(ls []int) string {
	var parts []string
	for k, l := range ls {
		if k == 12 {
			parts = append(parts, fmt.Sprintf("… (%d in all)", len(ls)))
			break
		}
		parts = append(parts, fmt.Sprint(l))
	}
	return strings.Join(parts, ", ")
}

// driftAdvice says what gives a drift cluster one key: the metadata left
// out (as flags, when that alone does it) and the values the harness must
// send the same (never as flags: leaving them out would merge distinct
// writes).
func (opts *Options) driftAdvice(w io.Writer, f *drift.Finding) {
	var same []string
	for _, p := range f.SendSame {
		if p == "" {
			p = "(top)"
		}
		same = append(same, revealText(p))
	}
	switch {
	case len(f.SendSame) == 0 && f.Verified:
		fmt.Fprintf(w, "  one key with: %s\n  %s\n", omitArgs(f.Omit), diff.RekeyNote(revealText(f.Tool)))
	case len(f.SendSame) == 0:
		fmt.Fprintf(w, "  not one key even with: %s\n", omitArgs(f.Omit))
	case len(f.Omit) > 0:
		fmt.Fprintf(w, "  leave out the metadata (%s) and send the same %s on every attempt: no --omit flag may stand in for that\n",
			omitArgs(f.Omit), strings.Join(same, ", "))
	default:
		fmt.Fprintf(w, "  send the same %s on every attempt: no --omit flag may stand in for that\n", strings.Join(same, ", "))
	}
}

func (opts *Options) reportHuman(rep *drift.Report, bad int) error {
	w := bufio.NewWriter(opts.f.IO.Out)
	drifts, collapses := 0, 0
	for _, f := range rep.Findings {
		task, tool := revealText(f.Task), revealText(f.Tool)
		if f.Kind == drift.FindingDrift {
			drifts++
			fmt.Fprintf(w, "drift: task %s, tool %s: lines %s got %d keys\n", task, tool, linesList(f.Lines), len(f.Keys))
			for _, v := range f.Variations {
				p := revealText(v.Pointer)
				if p == "" {
					p = "(top)" // the whole arguments, as diff says
				}
				what := "request metadata, regenerated by each attempt"
				if !v.Regenerated {
					what = v.Advice
				}
				fmt.Fprintf(w, "  %-24s %-16s %s\n", p, v.Kind, what)
			}
			opts.driftAdvice(w, &f)
			for _, k := range f.Keys {
				fmt.Fprintf(w, "  key %s\n", opts.fmtKey(k))
			}
			continue
		}
		collapses++
		fmt.Fprintf(w, "collapse: task %s, tool %s: lines %s share the key %s: %s", task, tool, linesList(f.Lines), opts.fmtKey(f.Keys[0]), f.Reason)
		if len(f.CallIDs) > 1 {
			fmt.Fprintf(w, " (%s)", revealText(strings.Join(f.CallIDs, ", ")))
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, "  possibly distinct writes swallowed; add a discriminator such as a step id")
	}
	if len(rep.Suggestions) > 0 {
		fmt.Fprintln(w, "suggestions (the request metadata that varies in most drift clusters of a tool):")
		for _, s := range rep.Suggestions {
			quoted := make([]string, len(s.Omit))
			for k, p := range s.Omit {
				quoted[k] = string(canon.AppendQuoted(nil, p))
			}
			fmt.Fprintf(w, "  %s (%d %s): %s\n", revealText(s.Tool), s.Clusters, cli.Plural(s.Clusters, "cluster", "clusters"), omitArgs(s.Omit))
			fmt.Fprintf(w, "    config: tools: {%s: {omit: [%s]}}\n", settings.YAMLKey(s.Tool), strings.Join(quoted, ", "))
			fmt.Fprintf(w, "    %s\n", diff.RekeyNote(revealText(s.Tool)))
		}
	}
	fmt.Fprintf(w, "%d calls: %d drift %s, %d collapsed %s", rep.Calls, drifts, cli.Plural(drifts, "cluster", "clusters"), collapses, cli.Plural(collapses, "key", "keys"))
	if bad > 0 {
		fmt.Fprintf(w, ", %d bad %s skipped", bad, cli.Plural(bad, "line", "lines"))
	}
	fmt.Fprintln(w)
	return w.Flush()
}

// revealText makes a task, tool or pointer from the log safe to print.
func revealText(s string) string { return diff.RevealPointer(s) }

// readOTel reads OTLP JSON traces and adds their execute_tool spans in
// the order of their lines.
func (opts *Options) readOTel(a *drift.Analyzer) (bad int, err error) {
	spec := opts.Spec.Copy()
	offset := 0
	var sc drift.Scratch
	for _, file := range opts.Files {
		data, name, err := input.Read(opts.f, file)
		if err != nil {
			return bad, err
		}
		spans, errs := drift.OTLPSpans(data, opts.TaskAttr)
		for _, e := range errs {
			opts.f.PrintError(&cli.InputError{Name: name, Line: e.Line, Err: e.Err})
		}
		bad += len(errs)
		slices.SortStableFunc(spans, func(x, y drift.Span) int { return cmp.Compare(x.Line, y.Line) })
		for _, sp := range spans {
			doc, err := canon.Parse(sp.Args, spec.Scheme)
			if err != nil {
				opts.f.PrintError(&cli.InputError{Name: name, Line: sp.Line,
					Err: fmt.Errorf("gen_ai.tool.call.arguments of the %s span is not JSON: %s", sp.Tool, cli.OneLine(err.Error()))})
				bad++
				continue
			}
			c := derive.Call{Task: sp.Task, Tool: sp.Tool, Args: doc.Root()}
			if err := c.Validate(); err != nil {
				opts.f.PrintError(&cli.InputError{Name: name, Line: sp.Line, Err: err})
				bad++
				continue
			}
			if ts := spec.ForTool(c.Tool); len(ts.Only) > 0 || len(ts.Omit) > 0 {
				sel, _, err := ts.SelectArgs(c.Args)
				if err != nil {
					opts.f.PrintError(&cli.InputError{Name: name, Line: sp.Line, Err: err})
					bad++
					continue
				}
				c.Args = sel
			}
			call := drift.Call{Line: offset + sp.Line, Task: sp.Task, Tool: sp.Tool, CallID: sp.CallID, Time: sp.Time,
				Args: doc.Root(), Key: opts.Key.Sum(c)}
			a.Add(drift.Prepare(call, &sc))
		}
		offset += bytes.Count(data, []byte{'\n'})
		if len(data) > 0 && data[len(data)-1] != '\n' {
			offset++
		}
	}
	return bad, nil
}
