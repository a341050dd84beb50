// Package conform is the face of 'idemkey conform': an implementation run
// against the conformance suite, over the stream protocol or once per
// case, and diagnosed (the library: derive/conform; the processes:
// cmd/internal/proc).
package conform

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/fatih/color"
	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/keyflags"
	"github.com/idemkey/idemkey/cmd/internal/proc"
	"github.com/idemkey/idemkey/cmd/internal/settings"
	"github.com/idemkey/idemkey/derive/conform"
	"github.com/spf13/cobra"
)

// Options are conform's settings.
type Options struct {
	f       *cli.Factory
	Scheme  canon.Scheme
	Output  conform.Output
	PerCase bool
	JSON    bool
	Timeout time.Duration
	Rules   []string // run only these rules' cases
	Skip    []int    // and not these cases (--skip)
	Command []string
}

// NewCmd builds 'idemkey conform': its options, its flags, and run; with
// runF, runF instead of run, once the options are read (a test's seam for
// the flags and settings).
func NewCmd(f *cli.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{f: f}
	cmd := &cobra.Command{
		Use:   "conform [flags] -- COMMAND [ARG...]",
		Short: "Run another implementation against the conformance suite and diagnose it",
		Long: `Run another implementation of the key derivation against the conformance
suite ('idemkey vectors') and report, for each rule, how many cases pass, an
example of each failing rule and the likely cause.

COMMAND is started once. It reads one request a line on standard input,

  {"id":…,"task":…,"tool":…,"args":…,"args_text":"…"}

where args_text holds the arguments' exact text (a JSON string: parse it
as the arguments of a tool call), and args the same text inline only where
the vectors have it (I-JSON nested at most 200 levels, so that the line
itself parses alike everywhere; absent otherwise), and writes one answer a
line on standard output, in order: the lower-case hex key (or, with
--output canonical, the canonical text of [task, tool, args]), or an empty
line for a call it rejects. A reader of call records that reads args_text
where args is absent (idemkey key --batch --from call) speaks this
protocol.

With --per-case, COMMAND is run once per case instead; in its arguments
{task}, {tool} and {file} (a file holding the arguments) are replaced, and
the arguments are also on its standard input. It prints the answer, or
nothing for a rejection. Cases whose task id or tool name cannot be a
command-line argument (a lone surrogate, a NUL) are skipped. One that exits
with an error status on every case without an answer cannot run (exit 2).

An implementation that stops short (dies, hangs, answers what is not an
answer) gets the report of the cases it answered, and the error names the
case it stopped at. --skip ID (or N-M) leaves out cases: known deviations a
CI job accepts, while a new failure still fails it.

conform stops every process COMMAND started when it ends or is stopped: on
Linux the whole tree (it runs under a child subreaper, so a process in a
session of its own, started with setsid, is reached too; one left running
after COMMAND exits is an error); elsewhere COMMAND's process group.

Exit status: 0 every case passes, 1 some fail, 2 a usage error or an
implementation that misbehaves (exits early, prints too few or too many
lines, prints something that is not an answer, hangs past --timeout, or
leaves processes running).`,
		Example: `  idemkey conform -- python3 scripts/conformance/python_json.py
  idemkey conform --output canonical -- node scripts/conformance/harness.js canonical
  idemkey conform --per-case -- idemkey key --task {task} --tool {tool} {file}`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return &cli.UsageError{Err: errors.New("missing the command to test: usage: idemkey conform [flags] -- COMMAND [ARG...]"),
					HintText: "for example: idemkey conform -- python3 scripts/conformance/python_json.py"}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Command = args
			if err := opts.load(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return run(opts)
		},
	}
	cmd.Flags().SetInterspersed(false) // everything from COMMAND on is COMMAND's
	cmd.Flags().String("scheme", "js", "scheme: js (the reference harness) or jcs (RFC 8785)")
	settings.OneOf(cmd.Flags(), "scheme", canon.SchemeNames...)
	cmd.Flags().String("output", "key", "what COMMAND answers: key or canonical (the text of [task, tool, args])")
	cmd.Flags().Bool("per-case", false, "run COMMAND once per case, with {task}, {tool} and {file} in its arguments")
	cmd.Flags().Bool("json", false, "print the report as one JSON object")
	cmd.Flags().Duration("timeout", 10*time.Second, "longest wait for one answer (or, with --per-case, one run)")
	cmd.Flags().StringSlice("rule", nil, "run only the cases of this rule (repeatable)")
	cmd.Flags().StringSlice("skip", nil, "leave out the case with this id, or the ids N-M (repeatable): known deviations")
	cli.CompleteValues(cmd, "output", "key", "canonical")
	var rules []string
	for _, r := range conform.Rules {
		rules = append(rules, r.Name)
	}
	cli.CompleteValues(cmd, "rule", rules...)
	return cmd
}

// load reads conform's settings.
func (opts *Options) load() error {
	f := opts.f
	var err error
	if opts.Scheme, err = keyflags.Scheme(f); err != nil {
		return err
	}
	switch o := f.Config.GetString("output"); o {
	case "key":
		opts.Output = conform.OutputKey
	case "canonical":
		opts.Output = conform.OutputCanonical
	default:
		return cli.Usagef("invalid --output %q (want key or canonical)", o)
	}
	opts.PerCase = f.Config.GetBool("per-case")
	opts.JSON = f.Config.GetBool("json")
	// At least a millisecond: a bare number would be nanoseconds.
	if opts.Timeout = f.Config.GetDuration("timeout"); opts.Timeout < time.Millisecond {
		return cli.Usagef("invalid --timeout %q (want a duration of at least 1ms, such as 10s)", f.Config.GetString("timeout"))
	}
	opts.Rules = f.Config.GetStringSlice("rule")
	for _, r := range opts.Rules {
		if conform.RuleTitle(r) == "" {
			return &cli.UsageError{Err: fmt.Errorf("unknown rule %q", r), HintText: "the rules are: " + ruleNames()}
		}
	}
	opts.Skip, err = parseCaseIDs(f.Config.Source("skip"), f.Config.GetStringSlice("skip"))
	return err
}

// misbehaviour is an implementation that broke the protocol: exit 2.
type misbehaviour struct {
	msg    string
	stderr string // the end of the implementation's standard error
	hint   string // what to do, instead of the standard error's end
}

func (e *misbehaviour) Error() string { return e.msg }
func (e *misbehaviour) ExitCode() int { return cli.ExitUsage }
func (e *misbehaviour) Hint() string {
	s := strings.TrimSpace(e.stderr)
	if s == "" {
		return e.hint
	}
	lines := strings.Split(s, "\n")
	h := "its standard error ended with: " + strings.TrimSpace(lines[len(lines)-1])
	if e.hint != "" {
		h += "; " + e.hint
	}
	return h
}

// parseCaseIDs reads --skip: case ids and ranges of ids (N-M) of the
// suite, named src in errors.
func parseCaseIDs(src string, items []string) ([]int, error) {
	n := len(conform.Cases())
	var ids []int
	for _, item := range items {
		lo, hi, isRange := strings.Cut(item, "-")
		if !isRange {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || a < 1 || b < a {
			return nil, &cli.UsageError{Err: fmt.Errorf("invalid %s %q (want a case id, or ids N-M)", src, item),
				HintText: "the ids are those of idemkey vectors and of conform's report"}
		}
		if b > n {
			return nil, cli.Usagef("invalid %s %q: the suite has %d cases", src, item, n)
		}
		for id := a; id <= b; id++ {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

func caseName(c conform.Case) string { return fmt.Sprintf("case %d (%s: %s)", c.ID, c.Rule, c.Note) }

func ruleNames() string {
	var ns []string
	for _, r := range conform.Rules {
		ns = append(ns, r.Name)
	}
	return strings.Join(ns, ", ")
}

func run(opts *Options) error {
	cases := selectCases(opts)
	// A signal stops the implementation (and what it started) before
	// conform goes: it runs in a process group of its own.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, proc.StopSignals...)
	defer signal.Stop(sigc)
	var caught atomic.Value
	go func() {
		select {
		case sig := <-sigc:
			caught.Store(sig)
			cancel()
		case <-ctx.Done():
		}
	}()
	var answers []conform.Answer
	var err error
	if opts.PerCase {
		answers, err = runPerCase(ctx, opts, cases)
	} else {
		answers, err = runStream(ctx, opts, cases)
	}
	if sig, ok := caught.Load().(os.Signal); ok {
		code := 130
		if s, ok := sig.(syscall.Signal); ok {
			code = 128 + int(s)
		}
		fmt.Fprintf(opts.f.IO.Err, "idemkey: %v: the implementation was stopped\n", sig)
		return &cli.ExitError{Code: code}
	}
	var mb *misbehaviour
	stopped := err != nil && errors.As(err, &mb) && len(answers) > 0 && len(answers) < len(cases)
	if err != nil && !stopped {
		return err
	}
	// Stopped short: the report covers the cases answered, and the error
	// names the case it stopped at.
	r := conform.Evaluate(opts.Scheme, opts.Output, cases[:len(answers)], answers)
	rep := &conformRun{Report: r, NotRun: len(cases) - len(answers), Skip: opts.Skip, notRunIn: map[string]int{}}
	for _, c := range cases[len(answers):] {
		rep.notRunIn[c.Rule]++
	}
	if stopped {
		c := cases[len(answers)]
		rep.StoppedAt, rep.StopError = &c, err.Error()
		mb.hint = fmt.Sprintf("the report covers the %d cases answered; --skip %d runs the others without it", len(answers), c.ID)
	}
	if opts.JSON {
		err = writeJSON(opts.f.IO.Out, rep)
	} else {
		err = writeConformText(opts, rep)
	}
	switch {
	case err != nil:
		return err
	case stopped:
		return mb
	case r.Failed > 0:
		return &cli.ExitError{Code: cli.ExitNegative}
	}
	return nil
}

// selectCases returns the cases of the rules --rule names (all without
// it), less those --skip names.
func selectCases(opts *Options) []conform.Case {
	var sel []conform.Case
	for _, c := range conform.Cases() {
		if (len(opts.Rules) == 0 || slices.Contains(opts.Rules, c.Rule)) && !slices.Contains(opts.Skip, c.ID) {
			sel = append(sel, c)
		}
	}
	return sel
}

// conformRun is a report and how the run went: the cases --skip left
// out, and where it stopped short.
type conformRun struct {
	*conform.Report
	Skip      []int         // --skip
	NotRun    int           // cases not answered: the run stopped short
	StoppedAt *conform.Case // the case it stopped at, or nil
	StopError string
	notRunIn  map[string]int // the cases not run, by rule
}

// tail keeps the last bytes written to it.
type tail struct{ b []byte }

func (t *tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

// parseAnswer checks one answer line.
func parseAnswer(opts *Options, c conform.Case, line string) (conform.Answer, error) {
	line = strings.TrimSuffix(line, "\r")
	if line == "" {
		return conform.Answer{Rejected: true}, nil
	}
	// Any text can be a (wrong) canonical text; a key has one form.
	if opts.Output == conform.OutputKey && !keyflags.IsHexKey(line) {
		what := "which is not a key (64 lower-case hex digits)"
		if form := conform.NotAKey(line, conform.Expected(c, opts.Scheme)); form != "" {
			what = "which is not a key: " + form
		}
		return conform.Answer{}, &misbehaviour{msg: fmt.Sprintf("%s answered %s for %s, %s", opts.Command[0], quoteShort(line), caseName(c), what)}
	}
	return conform.Answer{Text: line}, nil
}

func quoteShort(s string) string {
	if len(s) > 80 {
		return fmt.Sprintf("%q…", s[:77])
	}
	return fmt.Sprintf("%q", s)
}

// maxAnswer bounds an answer line: the longest canonical text of the
// suite is about 20 KB.
const maxAnswer = 16 << 20

var errTooLong = errors.New("answer line too long")

type lineOrErr struct {
	line string
	err  error
}

// runStream runs the implementation once, one request a line. When it
// stops short (dies, hangs, answers what is not an answer), the answers it
// gave before are returned with the error, which names the case.
func runStream(parent context.Context, opts *Options, cases []conform.Case) ([]conform.Answer, error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	argv := opts.Command
	impl, err := proc.ImplCommand(ctx, argv)
	if err != nil {
		return nil, err
	}
	defer impl.Close()
	cmd := impl.Cmd
	cmd.WaitDelay = time.Second // a child that keeps the pipes open must not hang us
	st := &stream{opts: opts, proc: impl, cancel: cancel, stderr: &tail{}}
	cmd.Stderr = st.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := impl.Start(argv[0]); err != nil {
		return nil, err
	}
	defer func() {
		if !st.waited {
			cancel()
			cmd.Wait()
		}
	}()
	go writeRequests(stdin, cases)
	done := make(chan struct{}) // closed when runStream returns
	defer close(done)
	st.lines = readAnswerLines(stdout, done)
	answers := make([]conform.Answer, 0, len(cases))
	timer := time.NewTimer(opts.Timeout)
	defer timer.Stop()
	for i, c := range cases {
		timer.Reset(opts.Timeout)
		a, err := st.answer(timer, c, i, len(cases))
		if err != nil {
			return answers, err
		}
		answers = append(answers, a)
	}
	return answers, st.finish(timer, answers)
}

// stream is a running implementation of the stream protocol.
type stream struct {
	opts   *Options
	proc   *proc.Impl
	cancel context.CancelFunc
	stderr *tail
	lines  <-chan lineOrErr
	waited bool
}

func (st *stream) wait() error { st.waited = true; return st.proc.Cmd.Wait() }

func (st *stream) fail(msg string) error {
	return &misbehaviour{stderr: string(st.stderr.b), msg: msg}
}

// answer reads the answer for case c, the i-th of n.
func (st *stream) answer(timer *time.Timer, c conform.Case, i, n int) (conform.Answer, error) {
	argv0 := st.opts.Command[0]
	select {
	case l := <-st.lines:
		if l.err == errTooLong {
			return conform.Answer{}, st.fail(fmt.Sprintf("%s answered %s with a line longer than %d MiB", argv0, caseName(c), maxAnswer>>20))
		}
		if l.err != nil {
			// Its standard output is closed: it is exiting, or is
			// stopped if it does not within the timeout.
			stop := time.AfterFunc(st.opts.Timeout, st.cancel)
			werr := st.wait()
			stop.Stop()
			if _, err := st.proc.Result(argv0); err != nil {
				return conform.Answer{}, err
			}
			return conform.Answer{}, st.fail(fmt.Sprintf("%s %s after answering %d of %d cases: no answer for %s", argv0, endStatus(werr), i, n, caseName(c)))
		}
		a, err := parseAnswer(st.opts, c, l.line)
		if err != nil {
			err.(*misbehaviour).stderr = string(st.stderr.b)
		}
		return a, err
	case <-timer.C:
		return conform.Answer{}, st.fail(fmt.Sprintf("%s gave no answer for %s within %s (--timeout); it was stopped", argv0, caseName(c), st.opts.Timeout))
	}
}

// endStatus says how a process that was waited for ended.
func endStatus(werr error) string {
	var xe *exec.ExitError
	switch {
	case errors.As(werr, &xe) && xe.Exited():
		return fmt.Sprintf("exited with status %d", xe.ExitCode())
	case werr != nil:
		return "ended (" + werr.Error() + ")"
	}
	return "exited"
}

// finish checks that an implementation that answered every case prints
// nothing more, exits, and leaves no process behind.
func (st *stream) finish(timer *time.Timer, answers []conform.Answer) error {
	argv0 := st.opts.Command[0]
	timer.Reset(st.opts.Timeout)
	select {
	case l := <-st.lines:
		if l.err == nil {
			return st.fail(fmt.Sprintf("%s printed more lines than there are cases (%d), the first extra one %s: %s", argv0, len(answers), quoteShort(l.line), conform.ExtraLines(answers)))
		}
	case <-timer.C:
		return st.fail(notExited(argv0, st.opts.Timeout))
	}
	// Its standard output is closed, but it may go on running (it closed
	// the descriptor, or handed it on): the wait is bounded too.
	stop := time.AfterFunc(st.opts.Timeout, st.cancel)
	err := st.wait()
	ctxDone := !stop.Stop()
	left, rerr := st.proc.Result(argv0)
	switch {
	case ctxDone:
		return st.fail(notExited(argv0, st.opts.Timeout))
	case rerr != nil:
		return rerr
	case left > 0:
		return st.fail(fmt.Sprintf("%s exited after answering every case but left %s running (started in the background, or with setsid); %s stopped", argv0, processes(left), itThey(left)))
	}
	if err != nil {
		// The answers are complete; an exit status is the implementation's
		// own affair (idemkey key --batch exits 2 when it rejected a line).
		fmt.Fprintf(st.opts.f.IO.Err, "idemkey: note: %s %s after answering every case\n", argv0, endStatus(err))
	}
	return nil
}

func processes(n int) string { return fmt.Sprintf("%d %s", n, cli.Plural(n, "process", "processes")) }

func itThey(n int) string { return cli.Plural(n, "it was", "they were") }

// writeRequests writes one request a line for each case, then closes w.
func writeRequests(w io.WriteCloser, cases []conform.Case) {
	bw := bufio.NewWriterSize(w, 64<<10)
	var line []byte
	for _, c := range cases {
		line = append(conform.AppendRequest(line[:0], c), '\n')
		if _, err := bw.Write(line); err != nil {
			break
		}
	}
	bw.Flush()
	w.Close()
}

// readAnswerLines sends the lines of r, each at most maxAnswer bytes, then
// the error that ended them, until done is closed.
func readAnswerLines(r io.Reader, done <-chan struct{}) <-chan lineOrErr {
	lines := make(chan lineOrErr, 64)
	go func() {
		send := func(l lineOrErr) bool {
			select {
			case lines <- l:
				return true
			case <-done:
				return false
			}
		}
		rd := bufio.NewReaderSize(r, 64<<10)
		var buf []byte
		for {
			chunk, err := rd.ReadSlice('\n')
			buf = append(buf, chunk...)
			switch {
			case err == bufio.ErrBufferFull && len(buf) <= maxAnswer:
				continue
			case err == bufio.ErrBufferFull:
				send(lineOrErr{err: errTooLong})
				return
			case err == nil:
				if !send(lineOrErr{line: string(buf[:len(buf)-1])}) {
					return
				}
				buf = buf[:0]
				continue
			}
			if len(buf) > 0 && !send(lineOrErr{line: string(buf)}) { // a last line without its newline
				return
			}
			send(lineOrErr{err: err})
			return
		}
	}()
	return lines
}

func notExited(argv0 string, timeout time.Duration) string {
	return fmt.Sprintf("%s answered every case but did not exit within %s of the end of its input (--timeout); it was stopped", argv0, timeout)
}

// runPerCase runs the implementation once per case. As runStream, it
// returns the answers given before a case it misbehaved on, with the error.
// An implementation that exits with an error status on every case without
// answering cannot run (a missing program: 127 each time), and that is an
// error too, not a suite of rejections.
func runPerCase(ctx context.Context, opts *Options, cases []conform.Case) ([]conform.Answer, error) {
	dir, err := os.MkdirTemp("", "idemkey-conform-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	file := dir + "/args.json"
	answers := make([]conform.Answer, 0, len(cases))
	var fails runFailures
	for _, c := range cases {
		if !argSafe(c.Task) || !argSafe(c.Tool) {
			answers = append(answers, conform.Answer{Skipped: true})
			continue
		}
		if err := os.WriteFile(file, []byte(c.Args), 0o600); err != nil {
			return nil, err
		}
		rep := strings.NewReplacer("{task}", c.Task, "{tool}", c.Tool, "{file}", file)
		argv := make([]string, len(opts.Command))
		for j, a := range opts.Command {
			argv[j] = rep.Replace(a)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		a, run, err := runOne(ctx, opts, c, argv)
		if err != nil {
			return answers, err
		}
		fails.add(c, run, opts.Scheme)
		answers = append(answers, a)
	}
	if err := fails.cannotRun(opts.Command[0]); err != nil {
		return nil, err
	}
	return answers, nil
}

// caseRun is how one per-case run ended: its exit status (0 for success)
// and whether it printed an answer.
type caseRun struct {
	status   int
	answered bool
	stderr   string
}

// runFailures counts the per-case runs that ended in an error status
// without an answer.
type runFailures struct {
	runs, failed int
	statuses     []int  // the distinct error statuses, first seen first
	mustAccept   bool   // a failed case is one the scheme accepts
	stderr       string // the last failed run's standard error
}

func (rf *runFailures) add(c conform.Case, run caseRun, s canon.Scheme) {
	rf.runs++
	if run.status == 0 || run.answered {
		return
	}
	rf.failed++
	rf.stderr = run.stderr
	if !slices.Contains(rf.statuses, run.status) {
		rf.statuses = append(rf.statuses, run.status)
	}
	if !conform.Expected(c, s).Rejected {
		rf.mustAccept = true
	}
}

// cannotRun is the error for an implementation that failed on every case
// it was run for: all with 126 or 127 (the shell's "cannot execute" and
// "not found"), or also on cases the scheme accepts. A run of rejections
// only (--rule invalid-json, an implementation that exits 2 to reject) is
// not.
func (rf *runFailures) cannotRun(argv0 string) error {
	if rf.runs == 0 || rf.failed < rf.runs {
		return nil
	}
	notFound := true
	for _, st := range rf.statuses {
		notFound = notFound && (st == 126 || st == 127)
	}
	if !notFound && !rf.mustAccept {
		return nil
	}
	var sts []string
	for _, st := range rf.statuses {
		sts = append(sts, strconv.Itoa(st))
	}
	return &misbehaviour{stderr: rf.stderr,
		msg: fmt.Sprintf("%s exited with status %s on every case (%d of %d) without an answer: it cannot run", argv0, strings.Join(sts, ", "), rf.failed, rf.runs)}
}

// argSafe reports whether s can be passed as a command-line argument
// unchanged: UTF-8 without NUL (a lone surrogate is not UTF-8).
func argSafe(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

func runOne(parent context.Context, opts *Options, c conform.Case, argv []string) (conform.Answer, caseRun, error) {
	ctx, cancel := context.WithTimeout(parent, opts.Timeout)
	defer cancel()
	var run caseRun
	impl, err := proc.ImplCommand(ctx, argv)
	if err != nil {
		return conform.Answer{}, run, err
	}
	defer impl.Close()
	cmd := impl.Cmd
	cmd.WaitDelay = time.Second
	cmd.Stdin = strings.NewReader(c.Args)
	stdout := &proc.Capped{Max: maxAnswer + 1}
	stderr := &tail{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := impl.Start(argv[0]); err != nil {
		return conform.Answer{}, run, err
	}
	err = cmd.Wait()
	left, rerr := impl.Result(argv[0])
	run.stderr = string(stderr.b)
	fail := func(format string, args ...any) (conform.Answer, caseRun, error) {
		return conform.Answer{}, run, &misbehaviour{stderr: run.stderr, msg: fmt.Sprintf(format, args...)}
	}
	var xe *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return fail("%s did not finish %s within %s (--timeout); it was stopped", argv[0], caseName(c), opts.Timeout)
	case rerr != nil:
		return conform.Answer{}, run, rerr
	case left > 0:
		return fail("%s exited on %s but left %s running (started in the background, or with setsid); %s stopped", argv[0], caseName(c), processes(left), itThey(left))
	case errors.Is(err, exec.ErrWaitDelay):
		// It exited, but a process it started still held its output.
		return fail("%s exited on %s but left its standard output open (a process it started in the background?); that was stopped", argv[0], caseName(c))
	case errors.As(err, &xe) && !xe.Exited():
		return fail("%s crashed on %s: %v", argv[0], caseName(c), err)
	case err != nil && xe == nil:
		return conform.Answer{}, run, proc.StartError(argv[0], err)
	case xe != nil:
		run.status = xe.ExitCode()
	}
	if stdout.Len() > maxAnswer {
		return fail("%s answered %s with more than %d MiB", argv[0], caseName(c), maxAnswer>>20)
	}
	out := strings.TrimSuffix(stdout.String(), "\n")
	if strings.Contains(out, "\n") {
		return fail("%s printed more than one line for %s: %s", argv[0], caseName(c), quoteShort(stdout.String()))
	}
	if err != nil && out != "" {
		return fail("%s printed an answer for %s but %v", argv[0], caseName(c), err)
	}
	run.answered = out != ""
	a, err := parseAnswer(opts, c, out)
	return a, run, err
}

// ---- the report ----

// conformHeader writes the report's first line: the counts, the cases
// left out, and where the run stopped short.
func conformHeader(b *strings.Builder, opts *Options, run *conformRun) {
	r := run.Report
	what := "keys"
	if r.Output == conform.OutputCanonical {
		what = "canonical texts"
	}
	fmt.Fprintf(b, "%s: %s scheme, %s: %d passed, %d failed", strings.Join(opts.Command, " "), r.Scheme, what, r.Passed, r.Failed)
	if r.Skipped > 0 {
		fmt.Fprintf(b, ", %d skipped (a task id or tool name that cannot be a command-line argument)", r.Skipped)
	}
	if len(run.Skip) > 0 {
		fmt.Fprintf(b, ", %d left out (--skip)", len(run.Skip))
	}
	if c := run.StoppedAt; c != nil {
		fmt.Fprintf(b, ", %d not run: it stopped at %s", run.NotRun, caseName(*c))
	}
	b.WriteString("\n\n")
}

func writeConformText(opts *Options, run *conformRun) error {
	ios := opts.f.IO
	mode := opts.f.ColorMode()
	red := ios.Paint(mode, ios.Out, color.FgRed)
	green := ios.Paint(mode, ios.Out, color.FgGreen)
	bold := ios.Paint(mode, ios.Out, color.Bold)
	r := run.Report
	var b strings.Builder
	conformHeader(&b, opts, run)
	width := 0
	for _, rr := range r.Rules {
		width = max(width, len(rr.Rule))
	}
	fmt.Fprintf(&b, "%-*s  %6s  %5s\n", width, "rule", "passed", "total")
	for _, rr := range r.Rules {
		if n := run.notRunIn[rr.Rule]; rr.Total() == 0 && rr.Skipped == 0 && n > 0 {
			fmt.Fprintf(&b, "%-*s  %6s  %5s  not run (%d)\n", width, rr.Rule, "-", "-", n)
			continue
		}
		if rr.Total() == 0 && rr.Skipped == 0 {
			continue // not selected (--rule)
		}
		if rr.Total() == 0 {
			fmt.Fprintf(&b, "%-*s  %6s  %5s  skipped\n", width, rr.Rule, "-", "-")
			continue
		}
		mark := green.Sprint("ok")
		if rr.Failed > 0 {
			mark = red.Sprint("FAIL")
		}
		if n := run.notRunIn[rr.Rule]; n > 0 {
			mark += fmt.Sprintf(" (%d more not run)", n)
		}
		fmt.Fprintf(&b, "%-*s  %6d  %5d  %s\n", width, rr.Rule, rr.Passed, rr.Total(), mark)
	}
	for _, rr := range r.Rules {
		if rr.Failed == 0 {
			continue
		}
		f := rr.Example
		fmt.Fprintf(&b, "\n%s (%s): %d of %d failed\n", bold.Sprint(rr.Rule), rr.Title, rr.Failed, rr.Total())
		for _, d := range rr.Diagnosis {
			fmt.Fprintf(&b, "  cause: %s\n", d)
		}
		fmt.Fprintf(&b, "  e.g. case %d, %s: task %s, tool %s, args %s\n", f.Case.ID, f.Case.Note,
			cli.Printable(string(canon.AppendQuoted(nil, f.Case.Task))), cli.Printable(string(canon.AppendQuoted(nil, f.Case.Tool))), cli.Printable(f.Case.Args))
		if r.Output == conform.OutputKey {
			fmt.Fprintf(&b, "    expected %s\n", answerText(!f.Expected.Rejected, f.Expected.Key))
			fmt.Fprintf(&b, "    got      %s\n", answerText(!f.Got.Rejected, f.Got.Text))
			if !f.Expected.Rejected {
				fmt.Fprintf(&b, "    the expected key is that of %s\n", cli.Printable(f.Expected.Canonical))
			}
			if f.Explained && f.Produced != "" && !f.Got.Rejected {
				fmt.Fprintf(&b, "    the key received is that of %s\n", cli.Printable(f.Produced))
			}
		} else {
			fmt.Fprintf(&b, "    expected %s\n", answerText(!f.Expected.Rejected, cli.Printable(f.Expected.Canonical)))
			fmt.Fprintf(&b, "    got      %s\n", answerText(!f.Got.Rejected, cli.Printable(f.Got.Text)))
		}
	}
	if r.Failed > 0 {
		b.WriteString("\nlikely causes:\n")
		for _, c := range r.Causes {
			fmt.Fprintf(&b, "  - %s\n", c)
		}
		if r.Like != "" {
			fmt.Fprintf(&b, "every answer is what %s computes\n", r.Like)
		}
	}
	_, err := io.WriteString(ios.Out, b.String())
	return err
}

func answerText(ok bool, s string) string {
	if !ok {
		return "(rejected)"
	}
	return s
}

// writeJSON writes the report as one JSON object on one line:
//
//	{"scheme","output","cases","passed","failed","skipped",
//	 "rules":[{"rule","title","passed","total","skipped","diagnosis","causes"}],
//	 "failures":[{"id","rule","note","expected","got","expected_canonical"?,
//	   "produced"?,"causes"}],
//	 "causes","like"?,"skipped_ids","not_run","stopped_at"}
//
// with cli.JSONObject, the writer of every result: an answer holding a
// lone surrogate is shown as the implementation gave it (\udxxx), not
// replaced as encoding/json would replace it.
func writeJSON(w io.Writer, run *conformRun) error {
	r := run.Report
	o := &cli.JSONObject{}
	o.Str("scheme", r.Scheme.String()).Str("output", r.Output.String()).
		Int("cases", r.Passed+r.Failed+r.Skipped).Int("passed", r.Passed).Int("failed", r.Failed).Int("skipped", r.Skipped)
	var rules [][]byte
	for _, rr := range r.Rules {
		if rr.Total() == 0 && rr.Skipped == 0 {
			continue // not selected (--rule)
		}
		j := &cli.JSONObject{}
		j.Str("rule", rr.Rule).Str("title", rr.Title).Int("passed", rr.Passed).Int("total", rr.Total()).Int("skipped", rr.Skipped).
			Str("diagnosis", strings.Join(rr.Diagnosis, "; ")).Raw("causes", cli.StringsJSON(rr.Diagnosis))
		rules = append(rules, j.Object())
	}
	o.Raw("rules", cli.ArrayJSON(rules))
	var fails [][]byte
	for _, f := range r.Failures {
		fails = append(fails, failureJSON(r.Output, f))
	}
	o.Raw("failures", cli.ArrayJSON(fails)).Raw("causes", cli.StringsJSON(r.Causes))
	if r.Like != "" {
		o.Str("like", r.Like)
	}
	o.Raw("skipped_ids", cli.IntsJSON(run.Skip)).Int("not_run", run.NotRun)
	if c := run.StoppedAt; c != nil {
		stop := &cli.JSONObject{}
		stop.Int("id", c.ID).Str("rule", c.Rule).Str("note", c.Note).Str("error", run.StopError)
		o.Raw("stopped_at", stop.Object())
	} else {
		o.Raw("stopped_at", []byte("null"))
	}
	_, err := w.Write(o.Line())
	return err
}

// failureJSON is one failed case of the JSON report: "expected" and "got"
// are null where that side rejected the input.
func failureJSON(output conform.Output, f conform.Failure) []byte {
	j := &cli.JSONObject{}
	j.Int("id", f.Case.ID).Str("rule", f.Case.Rule).Str("note", f.Case.Note)
	if output == conform.OutputKey {
		j.StrOrNull("expected", f.Expected.Key, !f.Expected.Rejected)
	} else {
		j.StrOrNull("expected", f.Expected.Canonical, !f.Expected.Rejected)
	}
	j.StrOrNull("got", f.Got.Text, !f.Got.Rejected)
	if output == conform.OutputKey && !f.Expected.Rejected {
		j.Str("expected_canonical", f.Expected.Canonical)
	}
	if f.Explained && f.Produced != "" && !f.Got.Rejected && output == conform.OutputKey {
		j.Str("produced", f.Produced)
	}
	causes := make([]string, 0, len(f.Causes))
	for _, c := range f.Causes {
		causes = append(causes, c.String())
	}
	return j.Raw("causes", cli.StringsJSON(causes)).Object()
}
