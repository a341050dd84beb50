package cmd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/fatih/color"
	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/derive/conform"
	"github.com/spf13/cobra"
)

type conformOptions struct {
	f       *Factory
	Scheme  canon.Scheme
	Output  conform.Output
	PerCase bool
	JSON    bool
	Timeout time.Duration
	Rules   []string // run only these rules' cases
	Command []string
}

func newConformCmd(f *Factory) *cobra.Command {
	opts := &conformOptions{f: f}
	cmd := &cobra.Command{
		Use:   "conform [flags] -- COMMAND [ARG...]",
		Short: "Run another implementation against the conformance suite and diagnose it",
		Long: `Run another implementation of the key derivation against the conformance
suite ('idemkey vectors') and report, for each rule, how many cases pass, an
example of each failing rule and the likely cause.

COMMAND is started once. It reads one request a line on standard input,

  {"id":…,"task":…,"tool":…,"args":<the arguments, inline>}

and writes one answer a line on standard output, in order: the lower-case
hex key (or, with --output canonical, the canonical text of
[task, tool, args]), or an empty line for a call it rejects.

With --per-case, COMMAND is run once per case instead; in its arguments
{task}, {tool} and {file} (a file holding the arguments) are replaced, and
the arguments are also on its standard input. It prints the answer, or
nothing for a rejection. Cases whose task id or tool name cannot be a
command-line argument (a lone surrogate, a NUL) are skipped.

Exit status: 0 every case passes, 1 some fail, 2 a usage error or an
implementation that misbehaves (exits early, prints too few or too many
lines, prints something that is not an answer, or hangs past --timeout).`,
		Example: `  idemkey conform -- python3 scripts/conformance/python_json.py
  idemkey conform --output canonical -- node scripts/conformance/harness.js canonical
  idemkey conform --per-case -- idemkey key --task {task} --tool {tool} {file}`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return &UsageError{Err: errors.New("missing the command to test: usage: idemkey conform [flags] -- COMMAND [ARG...]"),
					hint: "for example: idemkey conform -- python3 scripts/conformance/python_json.py"}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Command = args
			var err error
			if opts.Scheme, err = f.scheme(); err != nil {
				return err
			}
			switch o := f.Config.GetString("output"); o {
			case "key":
				opts.Output = conform.OutputKey
			case "canonical":
				opts.Output = conform.OutputCanonical
			default:
				return usageErrorf("invalid --output %q (want key or canonical)", o)
			}
			opts.PerCase = f.Config.GetBool("per-case")
			opts.JSON = f.Config.GetBool("json")
			// At least a millisecond: a bare number would be nanoseconds.
			if opts.Timeout = f.Config.GetDuration("timeout"); opts.Timeout < time.Millisecond {
				return usageErrorf("invalid --timeout %q (want a duration of at least 1ms, such as 10s)", f.Config.GetString("timeout"))
			}
			opts.Rules = f.Config.GetStringSlice("rule")
			for _, r := range opts.Rules {
				if conform.RuleTitle(r) == "" {
					return &UsageError{Err: fmt.Errorf("unknown rule %q", r), hint: "the rules are: " + ruleNames()}
				}
			}
			return runConform(opts)
		},
	}
	cmd.Flags().SetInterspersed(false) // everything from COMMAND on is COMMAND's
	cmd.Flags().String("scheme", "js", "scheme: js (the reference harness) or jcs (RFC 8785)")
	cmd.Flags().String("output", "key", "what COMMAND answers: key or canonical (the text of [task, tool, args])")
	cmd.Flags().Bool("per-case", false, "run COMMAND once per case, with {task}, {tool} and {file} in its arguments")
	cmd.Flags().Bool("json", false, "print the report as one JSON object")
	cmd.Flags().Duration("timeout", 10*time.Second, "longest wait for one answer (or, with --per-case, one run)")
	cmd.Flags().StringSlice("rule", nil, "run only the cases of this rule (repeatable)")
	return cmd
}

// misbehaviour is an implementation that broke the protocol: exit 2.
type misbehaviour struct {
	msg    string
	stderr string // the end of the implementation's standard error
}

func (e *misbehaviour) Error() string { return e.msg }
func (e *misbehaviour) ExitCode() int { return exitUsage }
func (e *misbehaviour) Hint() string {
	s := strings.TrimSpace(e.stderr)
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	return "its standard error ended with: " + strings.TrimSpace(lines[len(lines)-1])
}

func caseName(c conform.Case) string { return fmt.Sprintf("case %d (%s: %s)", c.ID, c.Rule, c.Note) }

func ruleNames() string {
	var ns []string
	for _, r := range conform.Rules {
		ns = append(ns, r.Name)
	}
	return strings.Join(ns, ", ")
}

func runConform(opts *conformOptions) error {
	cases := conform.Cases()
	if len(opts.Rules) > 0 {
		var sel []conform.Case
		for _, c := range cases {
			if slices.Contains(opts.Rules, c.Rule) {
				sel = append(sel, c)
			}
		}
		cases = sel
	}
	// A signal stops the implementation (and what it started) before
	// conform goes: it runs in a process group of its own.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, conformSignals...)
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
		return &ExitError{Code: code}
	}
	if err != nil {
		return err
	}
	r := conform.Evaluate(opts.Scheme, opts.Output, cases, answers)
	if opts.JSON {
		err = writeConformJSON(opts.f.IO.Out, r)
	} else {
		err = writeConformText(opts, r)
	}
	if err != nil {
		return err
	}
	if r.Failed > 0 {
		return &ExitError{Code: exitNegative}
	}
	return nil
}

// capped keeps the first max bytes written to it.
type capped struct {
	bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.Len(); room < len(p) {
		c.Buffer.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return c.Buffer.Write(p)
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

func startError(argv0 string, err error) error {
	return &UsageError{Err: fmt.Errorf("cannot run %s: %v", argv0, unwrapExec(err))}
}

func unwrapExec(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// parseAnswer checks one answer line.
func parseAnswer(opts *conformOptions, c conform.Case, line string) (conform.Answer, error) {
	line = strings.TrimSuffix(line, "\r")
	if line == "" {
		return conform.Answer{Rejected: true}, nil
	}
	// Any text can be a (wrong) canonical text; a key has one form.
	if opts.Output == conform.OutputKey && !isHexKey(line) {
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

// runStream runs the implementation once, one request a line.
func runStream(parent context.Context, opts *conformOptions, cases []conform.Case) ([]conform.Answer, error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	argv := opts.Command
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	ownGroup(cmd)
	defer killGroup(cmd)
	cmd.WaitDelay = time.Second // a child that keeps the pipes open must not hang us
	stderr := &tail{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, startError(argv[0], err)
	}
	waited := false
	wait := func() error { waited = true; return cmd.Wait() }
	defer func() {
		if !waited {
			cancel()
			cmd.Wait()
		}
	}()
	go func() {
		w := bufio.NewWriterSize(stdin, 64<<10)
		var line []byte
		for _, c := range cases {
			line = append(conform.AppendRequest(line[:0], c), '\n')
			if _, err := w.Write(line); err != nil {
				break
			}
		}
		w.Flush()
		stdin.Close()
	}()
	lines := make(chan lineOrErr, 64)
	done := make(chan struct{}) // closed when runStream returns
	defer close(done)
	go func() {
		send := func(l lineOrErr) bool {
			select {
			case lines <- l:
				return true
			case <-done:
				return false
			}
		}
		rd := bufio.NewReaderSize(stdout, 64<<10)
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
	answers := make([]conform.Answer, len(cases))
	timer := time.NewTimer(opts.Timeout)
	defer timer.Stop()
	for i, c := range cases {
		timer.Reset(opts.Timeout)
		select {
		case l := <-lines:
			if l.err == errTooLong {
				return nil, &misbehaviour{stderr: string(stderr.b),
					msg: fmt.Sprintf("%s answered %s with a line longer than %d MiB", argv[0], caseName(c), maxAnswer>>20)}
			}
			if l.err != nil {
				// Its standard output is closed: it is exiting, or is
				// stopped if it does not within the timeout.
				stop := time.AfterFunc(opts.Timeout, cancel)
				werr := wait()
				stop.Stop()
				status := "exited"
				var xe *exec.ExitError
				if errors.As(werr, &xe) && xe.Exited() {
					status = fmt.Sprintf("exited with status %d", xe.ExitCode())
				} else if werr != nil {
					status = "ended (" + werr.Error() + ")"
				}
				return nil, &misbehaviour{stderr: string(stderr.b),
					msg: fmt.Sprintf("%s %s after answering %d of %d cases: no answer for %s", argv[0], status, i, len(cases), caseName(c))}
			}
			a, err := parseAnswer(opts, c, l.line)
			if err != nil {
				err.(*misbehaviour).stderr = string(stderr.b)
				return nil, err
			}
			answers[i] = a
		case <-timer.C:
			return nil, &misbehaviour{stderr: string(stderr.b),
				msg: fmt.Sprintf("%s gave no answer for %s within %s (--timeout); it was stopped", argv[0], caseName(c), opts.Timeout)}
		}
	}
	// Every case answered: the implementation should now print nothing
	// more and exit.
	timer.Reset(opts.Timeout)
	select {
	case l := <-lines:
		if l.err == nil {
			return nil, &misbehaviour{stderr: string(stderr.b),
				msg: fmt.Sprintf("%s printed more lines than there are cases (%d), the first extra one %s: %s", argv[0], len(cases), quoteShort(l.line), conform.ExtraLines(answers))}
		}
	case <-timer.C:
		return nil, &misbehaviour{stderr: string(stderr.b), msg: notExited(argv[0], opts.Timeout)}
	}
	// Its standard output is closed, but it may go on running (it closed
	// the descriptor, or handed it on): the wait is bounded too.
	stop := time.AfterFunc(opts.Timeout, cancel)
	err = wait()
	if !stop.Stop() && ctx.Err() != nil {
		return nil, &misbehaviour{stderr: string(stderr.b), msg: notExited(argv[0], opts.Timeout)}
	}
	if err != nil {
		// The answers are complete; an exit status is the implementation's
		// own affair (idemkey key --batch exits 2 when it rejected a line).
		var xe *exec.ExitError
		if errors.As(err, &xe) && xe.Exited() {
			fmt.Fprintf(opts.f.IO.Err, "idemkey: note: %s exited with status %d after answering every case\n", argv[0], xe.ExitCode())
		} else {
			fmt.Fprintf(opts.f.IO.Err, "idemkey: note: %s: %v after answering every case\n", argv[0], err)
		}
	}
	return answers, nil
}

func notExited(argv0 string, timeout time.Duration) string {
	return fmt.Sprintf("%s answered every case but did not exit within %s of the end of its input (--timeout); it was stopped", argv0, timeout)
}

// runPerCase runs the implementation once per case.
func runPerCase(ctx context.Context, opts *conformOptions, cases []conform.Case) ([]conform.Answer, error) {
	dir, err := os.MkdirTemp("", "idemkey-conform-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	file := dir + "/args.json"
	answers := make([]conform.Answer, len(cases))
	for i, c := range cases {
		if !argSafe(c.Task) || !argSafe(c.Tool) {
			answers[i] = conform.Answer{Skipped: true}
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
		a, err := runOne(ctx, opts, c, argv)
		if err != nil {
			return nil, err
		}
		answers[i] = a
	}
	return answers, nil
}

// argSafe reports whether s can be passed as a command-line argument
// unchanged: UTF-8 without NUL (a lone surrogate is not UTF-8).
func argSafe(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

func runOne(parent context.Context, opts *conformOptions, c conform.Case, argv []string) (conform.Answer, error) {
	ctx, cancel := context.WithTimeout(parent, opts.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	ownGroup(cmd)
	defer killGroup(cmd)
	cmd.WaitDelay = time.Second
	cmd.Stdin = strings.NewReader(c.Args)
	stdout := &capped{max: maxAnswer + 1}
	stderr := &tail{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	var xe *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return conform.Answer{}, &misbehaviour{stderr: string(stderr.b),
			msg: fmt.Sprintf("%s did not finish %s within %s (--timeout); it was stopped", argv[0], caseName(c), opts.Timeout)}
	case errors.Is(err, exec.ErrWaitDelay):
		// It exited, but a process it started still held its output.
		return conform.Answer{}, &misbehaviour{stderr: string(stderr.b),
			msg: fmt.Sprintf("%s exited on %s but left its standard output open (a process it started in the background?); that was stopped", argv[0], caseName(c))}
	case errors.As(err, &xe) && !xe.Exited():
		return conform.Answer{}, &misbehaviour{stderr: string(stderr.b), msg: fmt.Sprintf("%s crashed on %s: %v", argv[0], caseName(c), err)}
	case err != nil && xe == nil:
		return conform.Answer{}, startError(argv[0], err)
	}
	if stdout.Len() > maxAnswer {
		return conform.Answer{}, &misbehaviour{stderr: string(stderr.b),
			msg: fmt.Sprintf("%s answered %s with more than %d MiB", argv[0], caseName(c), maxAnswer>>20)}
	}
	out := strings.TrimSuffix(stdout.String(), "\n")
	if strings.Contains(out, "\n") {
		return conform.Answer{}, &misbehaviour{stderr: string(stderr.b),
			msg: fmt.Sprintf("%s printed more than one line for %s: %s", argv[0], caseName(c), quoteShort(stdout.String()))}
	}
	if err != nil && out != "" {
		return conform.Answer{}, &misbehaviour{stderr: string(stderr.b),
			msg: fmt.Sprintf("%s printed an answer for %s but %v", argv[0], caseName(c), err)}
	}
	return parseAnswer(opts, c, out)
}

// ---- the report ----

func writeConformText(opts *conformOptions, r *conform.Report) error {
	ios := opts.f.IO
	mode := opts.f.colorMode()
	red := ios.paint(mode, ios.Out, color.FgRed)
	green := ios.paint(mode, ios.Out, color.FgGreen)
	bold := ios.paint(mode, ios.Out, color.Bold)
	var b strings.Builder
	what := "keys"
	if r.Output == conform.OutputCanonical {
		what = "canonical texts"
	}
	fmt.Fprintf(&b, "%s: %s scheme, %s: %d passed, %d failed", strings.Join(opts.Command, " "), r.Scheme, what, r.Passed, r.Failed)
	if r.Skipped > 0 {
		fmt.Fprintf(&b, ", %d skipped (a task id or tool name that cannot be a command-line argument)", r.Skipped)
	}
	b.WriteString("\n\n")
	width := 0
	for _, rr := range r.Rules {
		width = max(width, len(rr.Rule))
	}
	fmt.Fprintf(&b, "%-*s  %6s  %5s\n", width, "rule", "passed", "total")
	for _, rr := range r.Rules {
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
			printable(string(canon.AppendQuoted(nil, f.Case.Task))), printable(string(canon.AppendQuoted(nil, f.Case.Tool))), printable(f.Case.Args))
		if r.Output == conform.OutputKey {
			fmt.Fprintf(&b, "    expected %s\n", answerText(!f.Expected.Rejected, f.Expected.Key))
			fmt.Fprintf(&b, "    got      %s\n", answerText(!f.Got.Rejected, f.Got.Text))
			if !f.Expected.Rejected {
				fmt.Fprintf(&b, "    the expected key is that of %s\n", printable(f.Expected.Canonical))
			}
			if f.Explained && f.Produced != "" && !f.Got.Rejected {
				fmt.Fprintf(&b, "    the key received is that of %s\n", printable(f.Produced))
			}
		} else {
			fmt.Fprintf(&b, "    expected %s\n", answerText(!f.Expected.Rejected, printable(f.Expected.Canonical)))
			fmt.Fprintf(&b, "    got      %s\n", answerText(!f.Got.Rejected, printable(f.Got.Text)))
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

type conformJSON struct {
	Scheme   string            `json:"scheme"`
	Output   string            `json:"output"`
	Cases    int               `json:"cases"`
	Passed   int               `json:"passed"`
	Failed   int               `json:"failed"`
	Skipped  int               `json:"skipped"`
	Rules    []conformRuleJSON `json:"rules"`
	Failures []conformFailJSON `json:"failures"`
	Causes   []string          `json:"causes"`
	Like     string            `json:"like,omitempty"`
}

type conformRuleJSON struct {
	Rule      string   `json:"rule"`
	Title     string   `json:"title"`
	Passed    int      `json:"passed"`
	Total     int      `json:"total"`
	Skipped   int      `json:"skipped"`
	Diagnosis string   `json:"diagnosis"`
	Causes    []string `json:"causes"`
}

type conformFailJSON struct {
	ID                int      `json:"id"`
	Rule              string   `json:"rule"`
	Note              string   `json:"note"`
	Expected          *string  `json:"expected"` // null: rejected
	Got               *string  `json:"got"`
	ExpectedCanonical *string  `json:"expected_canonical,omitempty"`
	Produced          *string  `json:"produced,omitempty"`
	Causes            []string `json:"causes"`
}

func writeConformJSON(w io.Writer, r *conform.Report) error {
	out := conformJSON{Scheme: r.Scheme.String(), Output: r.Output.String(), Passed: r.Passed, Failed: r.Failed, Skipped: r.Skipped,
		Cases: r.Passed + r.Failed + r.Skipped, Rules: []conformRuleJSON{}, Failures: []conformFailJSON{}, Causes: r.Causes, Like: r.Like}
	if out.Causes == nil {
		out.Causes = []string{}
	}
	for _, rr := range r.Rules {
		if rr.Total() == 0 && rr.Skipped == 0 {
			continue // not selected (--rule)
		}
		out.Rules = append(out.Rules, conformRuleJSON{Rule: rr.Rule, Title: rr.Title, Passed: rr.Passed, Total: rr.Total(), Skipped: rr.Skipped,
			Diagnosis: strings.Join(rr.Diagnosis, "; "), Causes: append([]string{}, rr.Diagnosis...)})
	}
	opt := func(ok bool, s string) *string {
		if !ok {
			return nil
		}
		return &s
	}
	for _, f := range r.Failures {
		j := conformFailJSON{ID: f.Case.ID, Rule: f.Case.Rule, Note: f.Case.Note, Causes: []string{}}
		for _, c := range f.Causes {
			j.Causes = append(j.Causes, c.String())
		}
		if r.Output == conform.OutputKey {
			j.Expected = opt(!f.Expected.Rejected, f.Expected.Key)
			j.ExpectedCanonical = opt(!f.Expected.Rejected, f.Expected.Canonical)
		} else {
			j.Expected = opt(!f.Expected.Rejected, f.Expected.Canonical)
		}
		j.Got = opt(!f.Got.Rejected, f.Got.Text)
		if f.Explained && f.Produced != "" && !f.Got.Rejected && r.Output == conform.OutputKey {
			j.Produced = opt(true, f.Produced)
		}
		out.Failures = append(out.Failures, j)
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}
