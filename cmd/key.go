package cmd

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/cmd/internal/input"
	"github.com/idemkey/idemkey/derive"
	"github.com/spf13/cobra"
)

type keyOptions struct {
	f        *Factory
	File     string
	Spec     *callSpec
	Format   *keyFormat
	Secret   []byte
	JSON     bool
	Batch    bool
	FailFast bool
}

func newKeyCmd(f *Factory) *cobra.Command {
	opts := &keyOptions{f: f}
	cmd := &cobra.Command{
		Use:   "key [FILE|-]",
		Short: "Print the idempotency key of a tool call",
		Long: `Print the idempotency key of a tool call: the lower-case hex SHA-256 of the
canonical JSON of [TASK, TOOL, ARGS], where ARGS is read from FILE (or
standard input when FILE is absent or -). The key equals the reference
harness's idempotencyKey(task, tool, args) byte for byte.

--from reads the call from an envelope (an MCP tools/call request, an OpenAI
tool call, an Anthropic tool_use block, or a {"task","tool","args"} record);
--from openai and --from anthropic also take an assistant message holding
one tool call (or several, with --tool naming one); --from auto reads any
of these shapes, a call record as --from call does. The task id comes from
--task unless the input is a call record (whose task must then agree with
--task, if given). Without --from, input of any of these shapes is hashed
as it is, with a warning; --from args says so and silences it.

--batch reads JSON Lines, one call a line, and writes one key a line; a
line may hold up to 64 MiB, an input up to 2 GiB.`,
		Example: `  idemkey key --task t-42 --tool open_pull_request args.json
  echo '{"b":1,"a":2}' | IDEMKEY_TASK=t-42 IDEMKEY_TOOL=pay idemkey key --json
  idemkey key --task t-42 --from openai --format uuid tool_call.json
  idemkey key --batch --from call calls.jsonl > keys.txt`,
		Args: rangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				opts.File = args[0]
			}
			var err error
			if opts.Spec, err = f.callSpec(); err != nil {
				return err
			}
			if opts.Format, err = f.keyFormat(); err != nil {
				return err
			}
			if opts.Secret, err = f.secret(); err != nil {
				return err
			}
			opts.JSON = f.Config.GetBool("json")
			opts.Batch = f.Config.GetBool("batch")
			opts.FailFast = f.Config.GetBool("fail-fast")
			if opts.Batch {
				return runKeyBatch(opts)
			}
			return runKey(opts)
		},
	}
	fl := cmd.Flags()
	addCallFlags(fl)
	addKeyFormatFlags(fl)
	fl.Bool("json", false, "print JSON: key, scheme, from, task, tool and the hashed canonical text")
	fl.Bool("batch", false, "read JSON Lines, one call a line; write one key a line")
	fl.Bool("fail-fast", false, "with --batch, stop at the first bad line")
	return cmd
}

// key derives and formats the key of a loaded call.
func (opts *keyOptions) key(dst []byte, lc loadedCall) []byte {
	if opts.Secret != nil {
		return opts.Format.Append(dst, lc.Call.HMAC(opts.Secret))
	}
	return opts.Format.Append(dst, lc.Call.Key())
}

// envelopeLook returns the text to look at, for the envelope warning, of
// input that the one pass keyed: nil unless its root is an object; for a
// large object (whose bulk is one array, see canon.InRuns), its outline
// with that array emptied, which envelopeShape reads as it reads the
// whole unless the array holds the calls or blocks it looks into.
func envelopeLook(data []byte) []byte {
	if firstByte(data) != '{' {
		return nil
	}
	if len(data) >= canon.ParallelMin {
		if outline, name, ok := canon.Outline(data); ok && name != "tool_calls" && name != "content" {
			return outline
		}
	}
	return data
}

func runKey(opts *keyOptions) error {
	out := opts.f.IO.Out
	var data []byte
	var name string
	var err error
	if spec := opts.Spec.forTool(opts.Spec.Tool); !opts.JSON && spec.From == fromArgs && len(spec.Only) == 0 && len(spec.Omit) == 0 {
		// Nothing but the key of the whole input is asked for: validate
		// and canonicalize in one pass (derive.Text), without the parsed
		// document, from the file mapped into memory.
		var key []byte
		if key, data, name, err = opts.onePassKey(spec); err != nil || key != nil {
			if err == nil {
				_, err = out.Write(append(key, '\n'))
			}
			return err
		}
	} else if data, name, err = opts.f.readJSON(opts.File); err != nil {
		return err
	}
	lc, err := opts.Spec.load(data)
	if err != nil {
		return inputErr(name, 0, err)
	}
	key := opts.key(nil, lc)
	if !opts.JSON {
		_, err = out.Write(append(key, '\n'))
		return err
	}
	_, err = out.Write(opts.keyJSON(key, lc))
	return err
}

// onePassKey derives the key of the whole input, read as bare arguments,
// in one pass, and warns when it has a known shape. When the one pass is
// not the way (a large object, or invalid input, which load reports as
// every command does), key is nil and data is a copy of the input to load.
func (opts *keyOptions) onePassKey(spec *callSpec) (key, data []byte, name string, err error) {
	var release func()
	data, name, release, err = opts.f.readMapped(opts.File)
	if err != nil {
		return nil, nil, name, err
	}
	shape, shapeWhat := fromArgs, ""
	// keep copies mapped data that load will read: release unmaps it. It
	// runs inside guardFaults, as every read of the mapping does.
	keep := func() {
		if release != nil {
			data = bytes.Clone(data)
			tuneGC(len(data))
		}
	}
	err = guardFaults(name, func() error {
		if len(data) >= canon.ParallelMin && !rootIsArray(data) && !canon.InRuns(data) {
			// A large object that the one pass would write on one core,
			// holding the canonical text of the root's largest child
			// about twice: the indexed path needs less memory (see
			// onePassFits). An object whose bulk is one array is written
			// in runs on every core, as an array is.
			keep()
			return nil
		}
		t := derive.Text{Task: spec.Task, Tool: spec.Tool, Args: data, Scheme: spec.Scheme}
		var k [32]byte
		var err error
		if opts.Secret != nil {
			k, err = t.HMAC(opts.Secret)
		} else {
			k, err = t.Key()
		}
		if err != nil {
			keep() // load finds the same problem, from a copy it can trust
			return nil
		}
		key = opts.Format.Append(nil, k)
		if look := envelopeLook(data); !spec.FromSet && look != nil && derive.MayHaveShape(look) {
			shape, shapeWhat = spec.d().ShapeOf(look) // shaped like an envelope?
		}
		return nil
	})
	if release != nil {
		release() // data is a copy now, if it is still needed
	}
	if err != nil {
		return nil, nil, name, err
	}
	if key != nil && shape != fromArgs {
		spec.Warn(derive.ShapeWarning(shape, shapeWhat, "the input looks like"))
	}
	return key, data, name, nil
}

// keyJSON is key --json's line for a loaded call.
func (opts *keyOptions) keyJSON(key []byte, lc loadedCall) []byte {
	o := &jsonObject{}
	o.Str("key", string(key)).Str(
		"format", opts.Format.Name).Str(

		"scheme", opts.Spec.Scheme.String()).Str(

		"from", lc.From).Str(

		"task", lc.Call.Task).Str(

		"tool", lc.Call.Tool)

	if opts.Secret != nil {
		o.Str("hash", "hmac-sha256")
	} else {
		o.Str("hash", "sha256")
	}
	if lc.Selected {
		// The selection applied: the tool's section's, if it has one.
		if len(lc.Only) > 0 {
			o.Raw("only", stringsJSON(lc.Only))
		}
		if len(lc.Omit) > 0 {
			o.Raw("omit", stringsJSON(lc.Omit))
		}
		o.Raw("selected", lc.Call.Args.Append(nil))
	}
	return o.Str("canonical", string(lc.Call.AppendText(nil))).Line()
}

// runKeyBatch derives one key per line of JSON Lines input. Output line N
// belongs to input line N: a blank input line (see blankLine) gives an
// empty output line, with --json too, and is no error; a bad input line
// gives an empty output line (with --json, an object with "error") and is
// reported on standard error with its line number. Chunks of lines are
// derived in parallel on every core and written in input order.
func runKeyBatch(opts *keyOptions) error {
	in, name, size, closeIn, err := opts.batchInput()
	if err != nil {
		return err
	}
	defer closeIn()
	workers := runtime.GOMAXPROCS(0)
	b := &batch{
		name:  name,
		todo:  make(chan *batchChunk, 2*workers),
		order: make(chan *batchChunk, 2*workers),
		quit:  make(chan struct{}),
		// The chunks read and not yet written hold at most this many MiB
		// (or one chunk, if it is larger), whatever the lengths of the lines.
		mem: make(chan struct{}, 4*workers+2*input.LineLimit>>20),
	}
	// Chunks written out come back to the reader, so that their buffers
	// are reused while they are warm in the cache.
	b.free = make(chan *batchChunk, cap(b.mem)+1)
	defer close(b.quit)
	go b.read(in)
	for i := 0; i < workers; i++ {
		bw := opts.newBatchWorker()
		go func() {
			for c := range b.todo {
				c.split()
				opts.deriveChunk(bw, c, name)
				close(c.done)
			}
		}()
	}
	return opts.writeBatch(b, size)
}

// batchInput opens a batch's input: the file, or standard input (also for
// -), with its size when it is a file.
func (opts *keyOptions) batchInput() (in io.Reader, name string, size int64, closeIn func(), err error) {
	in, name, closeIn = opts.f.IO.In, stdinName, func() {}
	if opts.File == "" || opts.File == "-" {
		if fh, ok := in.(*os.File); ok {
			opts.f.noteTerminalStdin(fh)
		}
		return in, name, 0, closeIn, nil
	}
	fh, err := os.Open(opts.File)
	if err != nil {
		return nil, "", 0, nil, &InputError{Name: opts.File, Err: fileErr(err)}
	}
	if st, err := fh.Stat(); err == nil {
		if st.IsDir() {
			fh.Close()
			return nil, "", 0, nil, &InputError{Name: opts.File, Err: errors.New("is a directory, not a file")}
		}
		size = st.Size()
	}
	return fh, opts.File, size, func() { fh.Close() }, nil
}

// batch is the pipeline of a key --batch: a reader splits the input into
// chunks of whole lines (todo, and order for the writer), workers derive
// their keys, the writer writes them in input order.
type batch struct {
	name        string
	todo, order chan *batchChunk
	free        chan *batchChunk // written out: their buffers are reused
	quit        chan struct{}
	mem         chan struct{} // a MiB of the memory budget a chunk holds
	readErr     error
	tooLong     int // the line past input.LineLimit, where reading stopped
}

// read splits in into chunks of whole lines, hands them to the workers
// and the writer, and closes both channels at the end of the input, a
// read error or a line over input.LineLimit.
func (b *batch) read(in io.Reader) {
	defer close(b.todo)
	defer close(b.order)
	r := input.NewChunkReader(in)
	for {
		var c *batchChunk
		select {
		case c = <-b.free: // written out: its buffers are free
			*c = batchChunk{data: c.data[:0], lines: c.lines[:0], out: c.out[:0]}
		default:
			c = &batchChunk{data: make([]byte, 0, batchChunkSize+64<<10)}
		}
		c.first, c.done = r.LineNo+1, make(chan struct{})
		c.data = r.Next(c.data)
		c.read = int64(len(c.data))
		b.tooLong, b.readErr = r.TooLong, r.Failure(b.name)
		if len(c.data) > 0 && !b.send(c) {
			return
		}
		if r.Done {
			return
		}
	}
}

// send takes c's share of the memory budget and hands c on; false when the
// batch is given up.
func (b *batch) send(c *batchChunk) bool {
	c.mib = min(1+cap(c.data)>>20, cap(b.mem))
	for range c.mib {
		select {
		case b.mem <- struct{}{}:
		case <-b.quit:
			return false
		}
	}
	for _, ch := range []chan *batchChunk{b.order, b.todo} {
		select {
		case ch <- c:
		case <-b.quit:
			return false
		}
	}
	return true
}

// writeBatch writes the chunks' output in input order as they are done,
// reports their bad lines and, at the end, what went wrong. size is the
// input's, for the progress line.
func (opts *keyOptions) writeBatch(b *batch, size int64) error {
	ios := opts.f.IO
	w := bufio.NewWriterSize(ios.Out, 64<<10)
	prog := newProgress(ios, size)
	failed, lines := 0, 0
	var read int64
	// Each omit pointer in the order given: --omit first, then each
	// tool's, as lines show them.
	var sum batchWarnings
	for _, p := range opts.Spec.Omit {
		sum.omit("", p)
	}
	defer func() { sum.print(opts.f, b.name) }()
	for c := range b.order {
		<-c.done
		sum.add(&c.warns)
		for _, err := range c.errs {
			prog.clear()
			opts.f.printError(err)
		}
		failed += len(c.errs)
		lines += c.n
		read += c.read
		if _, err := w.Write(c.out); err != nil {
			return err
		}
		for range c.mib {
			<-b.mem
		}
		if cap(c.data) <= 2<<20 {
			select {
			case b.free <- c:
			default:
			}
		}
		if opts.FailFast && len(c.errs) > 0 {
			w.Flush()
			return &ExitError{Code: exitUsage}
		}
		prog.update(lines, read)
	}
	prog.clear()
	return opts.endBatch(b, w, failed, lines)
}

// endBatch ends a batch whose chunks are all written: the line too long to
// read, a read error, the count of the bad lines.
func (opts *keyOptions) endBatch(b *batch, w *bufio.Writer, failed, lines int) error {
	ios := opts.f.IO
	if b.tooLong > 0 {
		// The long line's output line, then the report: reading stopped.
		if opts.JSON {
			w.Write((&jsonObject{}).Int("line", b.tooLong).Str("error", oneLine(b.readErr.Error())).Line())
		} else {
			w.WriteByte('\n')
		}
		if err := w.Flush(); err != nil {
			return err
		}
		opts.f.printError(b.readErr)
		fmt.Fprintf(ios.Err, "idemkey: %d of %d lines failed; the lines after line %d were not read\n", failed+1, lines+1, b.tooLong)
		return &ExitError{Code: exitUsage}
	}
	if b.readErr != nil {
		return b.readErr
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if failed > 0 {
		fmt.Fprintf(ios.Err, "idemkey: %d of %d lines failed\n", failed, lines)
		return &ExitError{Code: exitUsage}
	}
	return nil
}

// batchChunk is a run of input lines and, once done is closed, their output.
type batchChunk struct {
	first int      // line number of the first line
	data  []byte   // the lines' bytes
	lines [][2]int // start and length (without the line end) of each line
	read  int64    // input bytes, line ends included
	done  chan struct{}
	out   []byte  // one output line per input line
	errs  []error // the bad lines' errors, in order
	n     int     // lines processed (fewer than len(lines) after --fail-fast)
	mib   int     // MiB of the batch's memory budget it holds
	warns batchWarnings
}

// split finds the lines of c.data.
func (c *batchChunk) split() {
	for i := 0; i < len(c.data); {
		j := bytes.IndexByte(c.data[i:], '\n') + 1
		if j == 0 {
			j = len(c.data) - i
		}
		c.lines = append(c.lines, [2]int{i, len(trimEOL(c.data[i : i+j]))})
		i += j
	}
}

// batchWarnings sums up, over the lines of a batch, what single inputs
// get a warning for: an omit pointer that matches nothing on any line it
// applies to, lines shaped like an envelope read as bare arguments. It is
// said once at the end, not on every line.
type batchWarnings struct {
	loaded int         // lines loaded
	omits  []omitCount // each omit pointer applied (top-level or a tool's), first seen first
	shapes []shapeCount
}

// omitCount is how one omit pointer fared over the lines it applied to.
type omitCount struct {
	name, p     string // name: "" (--omit) or the tools section it is from
	lines, hits int    // the lines it applied to, and matched on
	hint        string // the hint for the first line it missed on
}

type shapeCount struct {
	from, what  string
	first, more int // the first line of that shape, and how many more
}

func (b *batchWarnings) omit(name, p string) *omitCount {
	for k := range b.omits {
		if o := &b.omits[k]; o.name == name && o.p == p {
			return o
		}
	}
	b.omits = append(b.omits, omitCount{name: name, p: p})
	return &b.omits[len(b.omits)-1]
}

func (b *batchWarnings) note(lc loadedCall, lineNo int) {
	b.loaded++
	missed := 0
	for i, p := range lc.Omit {
		o := b.omit(lc.OmitName, p)
		o.lines++
		if missed < len(lc.OmitMissed) && lc.OmitMissed[missed] == i {
			missed++
			if o.hint == "" {
				o.hint = derive.OmitWarning(lc.OmitName, p, lc.Args).Hint
			}
			continue
		}
		o.hits++
	}
	if lc.Shape != "" {
		for k := range b.shapes {
			if b.shapes[k].what == lc.ShapeWhat {
				b.shapes[k].more++
				return
			}
		}
		b.shapes = append(b.shapes, shapeCount{from: lc.Shape, what: lc.ShapeWhat, first: lineNo})
	}
}

// add sums up a later chunk's warnings.
func (b *batchWarnings) add(c *batchWarnings) {
	b.loaded += c.loaded
	for _, co := range c.omits {
		o := b.omit(co.name, co.p)
		o.lines += co.lines
		o.hits += co.hits
		if o.hint == "" {
			o.hint = co.hint
		}
	}
	for _, s := range c.shapes {
		found := false
		for k := range b.shapes {
			if b.shapes[k].what == s.what {
				b.shapes[k].more += s.more + 1
				found = true
			}
		}
		if !found {
			b.shapes = append(b.shapes, s)
		}
	}
}

func (b *batchWarnings) print(f *Factory, name string) {
	for _, s := range b.shapes {
		lead := fmt.Sprintf("%s:%d: the line looks like", name, s.first)
		if s.more > 0 {
			lead = fmt.Sprintf("%s:%d: this line and %d more look like", name, s.first, s.more)
		}
		f.printWarning(warningFrom(derive.ShapeWarning(s.from, s.what, lead)))
	}
	for _, o := range b.omits {
		if o.hits == 0 && o.lines > 0 {
			f.printWarning(warning{
				msg:  fmt.Sprintf("%s: %s %s matches nothing in the arguments of any of the %d lines: the keys are derived as if it were not given", name, orFlag(o.name, "--omit"), o.p, o.lines),
				hint: o.hint,
			})
		}
	}
}

// batchWorker is what one goroutine of a batch reuses from line to line.
type batchWorker struct {
	spec       *callSpec
	pass       canon.Pass // for quickKey
	keyer      *derive.Keyer
	quick      bool   // lines may take quickKey
	task, tool []byte // --task and --tool quoted, for --from args
}

func (opts *keyOptions) newBatchWorker() *batchWorker {
	w := &batchWorker{spec: opts.Spec.fresh(), keyer: derive.NewKeyer(opts.Secret)}
	s := w.spec
	s.Warn = nil // summed up by runKeyBatch
	w.quick = !opts.JSON && len(s.Only) == 0 && len(s.Omit) == 0
	switch s.From {
	case fromCall:
	case fromArgs:
		t := derive.Text{Task: s.Task, Tool: s.Tool, Scheme: s.Scheme}
		_, perTool := s.Tools[s.Tool]
		w.quick = w.quick && !perTool && t.Validate() == nil
		w.task, w.tool = canon.AppendQuoted(nil, s.Task), canon.AppendQuoted(nil, s.Tool)
	default:
		w.quick = false
	}
	return w
}

// quickKey derives the key of a line as load and key would, in one pass
// over it (canon.Pass) without a parsed document, for the common lines: a
// call record whose task and tool are plain strings (no escapes) that
// agree with --task and --tool, or bare arguments that are not shaped like
// an envelope. ok is false for any other line, and for an invalid one:
// load then reads it and says what is wrong, or what to warn about.
func (w *batchWorker) quickKey(body []byte) (key [32]byte, ok bool) {
	s := w.spec
	if s.From == fromArgs {
		if !s.FromSet && derive.MayHaveShape(body) {
			return key, false
		}
		return w.keyer.KeyText(w.task, w.tool, &w.pass, body, s.Scheme)
	}
	mems, ok := w.pass.Members(body, s.Scheme)
	if !ok {
		return key, false
	}
	var task, tool, args []byte
	for _, m := range mems {
		switch string(m.Name) {
		case "task":
			task = m.Value
		case "tool":
			tool = m.Value
		case "args":
			args = m.Value
		}
	}
	if args == nil || !plainString(task, s.Task) || !plainString(tool, s.Tool) {
		return key, false
	}
	if _, perTool := s.Tools[string(tool[1:len(tool)-1])]; perTool {
		return key, false // the tool's own --only and --omit apply: load does it
	}
	return w.keyer.Key(task, tool, args), true
}

// plainString reports whether v, a canonical JSON value, is a non-empty
// string written without escapes, equal to want unless want is empty. Its
// text is then valid UTF-8 without lone surrogates (canon escapes those),
// which derive.Call.Validate accepts.
func plainString(v []byte, want string) bool {
	if len(v) < 3 || v[0] != '"' || bytes.IndexByte(v, '\\') >= 0 {
		return false
	}
	return want == "" || string(v[1:len(v)-1]) == want
}

func (opts *keyOptions) deriveChunk(w *batchWorker, c *batchChunk, name string) {
	spec := w.spec
	for i, ln := range c.lines {
		lineNo := c.first + i
		c.n++
		body := c.data[ln[0] : ln[0]+ln[1]]
		if blankLine(body) {
			c.out = append(c.out, '\n')
			continue
		}
		if w.quick {
			if k, ok := w.quickKey(body); ok {
				c.warns.loaded++
				c.out = append(opts.Format.Append(c.out, k), '\n')
				continue
			}
		}
		lc, err := spec.load(body)
		if err == nil {
			c.warns.note(lc, lineNo)
		}
		if err != nil {
			err = inputErr(name, lineNo, err)
			c.errs = append(c.errs, err)
			if opts.JSON {
				o := &jsonObject{Buf: c.out[len(c.out):]}
				c.out = append(c.out, o.Int("line", lineNo).Str("error", oneLine(err.Error())).Line()...)
			} else {
				c.out = append(c.out, '\n')
			}
			if opts.FailFast {
				return
			}
			continue
		}
		if !opts.JSON {
			c.out = append(opts.key(c.out, lc), '\n')
			continue
		}
		o := &jsonObject{}
		o.Int("line", lineNo)
		o.Key("key")
		o.Buf = append(o.Buf, '"')
		o.Buf = opts.key(o.Buf, lc)
		o.Buf = append(o.Buf, '"')
		o.Str("from", lc.From).Str("task", lc.Call.Task).Str("tool", lc.Call.Tool)
		c.out = append(c.out, o.Line()...)
	}
}

// progress draws a one-line progress report on standard error for long
// batches, only when standard error is a terminal.
type progress struct {
	w     io.Writer
	on    bool
	size  int64
	start time.Time
	last  time.Time
	drawn bool
}

func newProgress(ios *IOStreams, size int64) *progress {
	now := time.Now()
	return &progress{w: ios.Err, on: isTerminal(ios.Err), size: size, start: now, last: now}
}

func (p *progress) update(lines int, read int64) {
	if !p.on {
		return
	}
	now := time.Now()
	if now.Sub(p.start) < time.Second || now.Sub(p.last) < 200*time.Millisecond {
		return
	}
	p.last = now
	rate := float64(lines) / now.Sub(p.start).Seconds()
	if p.size > 0 {
		pct := float64(read) * 100 / float64(p.size)
		const width = 30
		bar := make([]byte, width)
		for i := range bar {
			if float64(i) < pct*width/100 {
				bar[i] = '#'
			} else {
				bar[i] = '.'
			}
		}
		fmt.Fprintf(p.w, "\r[%s] %5.1f%% %d lines, %.0f keys/s", bar, pct, lines, rate)
	} else {
		fmt.Fprintf(p.w, "\r%d lines, %.0f keys/s", lines, rate)
	}
	p.drawn = true
}

func (p *progress) clear() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}
