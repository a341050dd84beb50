// Package run is the face of 'idemkey run': a command run once per key,
// its outcome recorded in the ledger and replayed after (the hold's loop:
// derive/ledger/hold.go; what post and mcp share of a step:
// cmd/internal/step; the process: cmd/internal/proc).
package run

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/input"
	"github.com/idemkey/idemkey/cmd/internal/keyflags"
	"github.com/idemkey/idemkey/cmd/internal/ledgeropts"
	"github.com/idemkey/idemkey/cmd/internal/proc"
	"github.com/idemkey/idemkey/cmd/internal/settings"
	"github.com/idemkey/idemkey/cmd/internal/step"
	"github.com/idemkey/idemkey/derive"
	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/idemkey/idemkey/derive/ledger/stores"
	"github.com/spf13/cobra"
)

// Options are run's settings.
type Options struct {
	f            *cli.Factory
	ArgsFile     string
	Command      []string
	Spec         *derive.Spec
	Key          keyflags.Key
	Ledger       string
	Recover      ledger.Policy
	ReplayFailed bool
	Wait         time.Duration
	Lease        time.Duration
	OnLeaseLost  string
	MaxOutput    int64
	Retain       time.Duration
	Quiet        bool
	Verbose      bool
	// PassEnv are the IDEMKEY_* variables passed on to the command (--env).
	PassEnv []string
	// JSON is where --json writes the report (nil: nowhere).
	JSON io.WriteCloser
	// report is filled in as run goes (see runReport).
	report *runReport
	// Reconcile asks the owner about an unknown outcome (--reconcile).
	Reconcile *step.Reconcile
	// runF runs instead of run once the options are read (NewCmd's seam).
	runF func(*Options) error
}

// runFailed makes err exit 125 unless it already carries one of run's
// own codes.
func runFailed(err error) error {
	if err == nil {
		return nil
	}
	var ce *cli.CodeError
	var ee *cli.ExitError
	if errors.As(err, &ce) || errors.As(err, &ee) {
		return err
	}
	return &cli.CodeError{Code: cli.ExitRunFailed, Err: err}
}

// NewCmd builds 'idemkey run': its options, its flags, and run; with
// runF, runF instead of run, once the options are read (a test's seam for
// the flags and settings).
func NewCmd(f *cli.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{f: f, runF: runF}
	cmd := &cobra.Command{
		Use:   "run --task T --tool NAME [--args FILE|-] [flags] -- COMMAND [ARG...]",
		Short: "Run a shell step at most once per idempotency key",
		Long: `Run COMMAND at most once per idempotency key, recording in a ledger that the
step started before running it and how it ended after.

The key is derived as 'idemkey key' derives it (every key option applies),
from --args, or, without --args, from the command line as a JSON array of
strings. The command runs with IDEMPOTENCY_KEY and IDEMPOTENCY_ATTEMPT in its
environment and idemkey's standard input (with --args -, the same bytes the
arguments were read from); its output passes through untouched and is
recorded. idemkey's own settings (IDEMKEY_*: the ledger's URL and password,
a secret) are not passed on; --env NAME passes one on deliberately.

A key's record is running, succeeded, failed or unknown:
  succeeded  not run again: the recorded output and exit code are replayed
  failed     run again as the next attempt (--replay-failed replays it)
  running    exit 75 at once, or --wait for the holder to finish
  unknown    --recover fail (default): exit 76 and say how to settle it
             (idemkey ledger resolve); --recover retry: run again with the
             same key, for commands whose owner dedupes by that key

With --reconcile COMMAND, an unknown outcome is first asked of the owner:
COMMAND (a shell command line) runs under the key's claim with
IDEMPOTENCY_KEY, IDEMPOTENCY_ATTEMPT, IDEMKEY_TASK and IDEMKEY_TOOL in its
environment and the canonical arguments on its standard input. Exit 0: the
effect happened (recorded succeeded, its standard output replayed as the
step's); 1: it did not (the step runs as the next attempt); 3: it happened
more than once (recorded succeeded and replayed, with a warning); anything
else, or --reconcile-timeout: still unknown, and --recover decides.

Exit codes: the command's own (run or replayed); 75 in progress elsewhere;
76 outcome unknown; 125 idemkey failed (usage, ledger, fingerprint mismatch;
post --ledger exits 2 for these, as curl does for usage); 126 cannot
execute; 127 not found; 128+N killed by signal N (recorded as unknown).
A command's own 75, 76 or 125 passes through as it is, and reads like
idemkey's: -v's last line, --json (its "action" and "command_exit_code")
and 'idemkey ledger show KEY' say which it was.`,
		Example: `  idemkey run --task "$RUN_ID" --tool deploy -- ./deploy.sh prod
  idemkey run --task t-42 --tool pr --args call.json --recover retry -- gh pr create --fill
  idemkey run --task t-42 --tool pay --wait 2m -- ./pay.sh`,
		RunE: func(cmd *cobra.Command, args []string) error {
			rep := &runReport{Action: "error"}
			opts.report = rep
			err := runFailed(opts.setup(cmd, args))
			rep.finish(opts, err)
			return err
		},
		// The settings' errors (config file, IDEMKEY_*) exit 125 too.
		Annotations: map[string]string{cli.UsageCodeAnnotation: strconv.Itoa(cli.ExitRunFailed)},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &cli.CodeError{Code: cli.ExitRunFailed, Err: &cli.UsageError{Err: err, HintText: "run 'idemkey run --help' for usage"}}
	})
	fl := cmd.Flags()
	fl.SetInterspersed(false)
	keyflags.AddCallFlags(fl)
	keyflags.AddFormatFlags(fl)
	ledgeropts.AddFlag(fl)
	fl.String("args", "", "the call's arguments (FILE, or - for standard input); default: the command line as a JSON array")
	fl.String("recover", "fail", "an unknown outcome: fail (exit 76) or retry (run again with the same key); per tool: tools.NAME.recover in the config")
	settings.ReadPerTool(fl, "recover")
	fl.Bool("replay-failed", false, "replay a failed attempt instead of running the next one")
	ledgeropts.AddHoldFlags(fl, ledgeropts.Wait, ledgeropts.Lease)
	fl.String("on-lease-lost", "kill", "when a newer attempt took the key over: kill (the command and its descendants, exit 76) or continue")
	fl.String("max-output", "1MiB", "record at most this much of each of stdout and stderr (the full length and sha256 always)")
	ledgeropts.AddHoldFlags(fl, ledgeropts.Retain)
	fl.BoolP("quiet", "q", false, "no line on stderr when a result is replayed")
	fl.BoolP("verbose", "v", false, "diagnostics on stderr: key, attempt, ledger, outcome")
	step.AddReconcileFlags(fl, "a step")
	fl.String("json", "", "write a report of what run did as one JSON object to FILE (- for standard error; standard output is the command's)")
	fl.StringArray("env", nil, "pass idemkey's variable `NAME` (an IDEMKEY_* setting, dropped by default) on to the command (repeatable)")
	settings.CommandLineOnly(fl, "env", "json")
	cli.CompleteValues(cmd, "recover", "fail", "retry")
	cli.CompleteValues(cmd, "on-lease-lost", "kill", "continue")
	return cmd
}

func (opts *Options) setup(cmd *cobra.Command, args []string) error {
	f := opts.f
	v := f.Config
	if len(args) == 0 {
		return &cli.UsageError{Err: errors.New("missing command: usage: idemkey run --task T --tool NAME -- COMMAND [ARG...]"),
			HintText: "put the command after --"}
	}
	opts.Command = args
	opts.ArgsFile = v.GetString("args")
	var err error
	if opts.Spec, err = keyflags.Spec(f); err != nil {
		return err
	}
	if opts.Key, err = keyflags.KeyFrom(f); err != nil {
		return err
	}
	if opts.Ledger, err = ledgeropts.Spec(f); err != nil {
		return err
	}
	if opts.Recover, err = ledgeropts.RecoverPolicy(f, cmd, opts.Spec.Tool); err != nil {
		return err
	}
	if opts.Reconcile, err = step.ReconcileSettings(f, cmd.Flags(), opts.Spec.Tool); err != nil {
		return err
	}
	opts.ReplayFailed = v.GetBool("replay-failed")
	hold, err := ledgeropts.HoldSettings(v, ledgeropts.Wait, ledgeropts.Lease, ledgeropts.Retain)
	if err != nil {
		return err
	}
	opts.Wait, opts.Lease, opts.Retain = hold.Wait, hold.Lease, hold.Retain
	opts.OnLeaseLost = v.GetString("on-lease-lost")
	if opts.OnLeaseLost != "kill" && opts.OnLeaseLost != "continue" {
		return v.Invalid("on-lease-lost", "want kill or continue")
	}
	if opts.MaxOutput, err = cli.ParseSize(v.GetString("max-output")); err != nil {
		return v.Unparsable("max-output", err)
	}
	if opts.MaxOutput > step.MaxRecordedOutput {
		e := v.OutOfRange("max-output", "at most 128MiB a stream")
		e.HintText = "a record is one row and is held in memory while the step runs; a larger output keeps its length and sha256"
		return e
	}
	opts.Quiet = v.GetBool("quiet")
	opts.Verbose = v.GetBool("verbose")
	if opts.PassEnv, err = passEnvNames(v.GetStringSlice("env")); err != nil {
		return err
	}
	if opts.Reconcile != nil {
		opts.Reconcile.PassEnv = opts.PassEnv
	}
	if opts.JSON, err = openReport(f, v.GetString("json")); err != nil {
		return err
	}
	if opts.runF != nil {
		return opts.runF(opts)
	}
	return run(opts)
}

// utf8CommandLine refuses a command line that cannot be the call's
// arguments (JSON text is UTF-8), naming the argument, rather than as the
// parser's error about a JSON text the user never wrote.
func utf8CommandLine(argv []string) error {
	for i, a := range argv {
		if utf8.ValidString(a) {
			continue
		}
		at := 0
		for at < len(a) {
			r, size := utf8.DecodeRuneInString(a[at:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			at += size
		}
		return &cli.UsageError{
			Err: fmt.Errorf("argument %d of the command line is not UTF-8 (byte 0x%02x at offset %d): without --args, the command line is the call's arguments, which must be UTF-8 text",
				i, a[at], at),
			HintText: "give the call's arguments with --args FILE; the command still gets its own as they are",
		}
	}
	return nil
}

// TestHooks are set only by the test binary.
var TestHooks struct {
	// BeforeStart runs between the claim and the command's start.
	BeforeStart func()
}

// runStep is one invocation of run: the key, the ledger and the command.
type runStep struct {
	opts        *Options
	key         string
	fingerprint string
	request     []byte
	task, tool  string
	store       ledger.Store
	locker      stores.KeyLocker
	// stdin is the command's standard input when the arguments were read
	// from idemkey's (--args -): the same bytes (nil: idemkey's own).
	stdin func() (io.Reader, func())
	// sigs takes in the signals from the claim on (see holdRequest).
	sigs chan os.Signal
	// args are the canonical arguments, as they enter the key (a
	// reconcile command's standard input).
	args []byte
	// stopped is the signal that stopped the step (0: none came).
	stopped atomic.Int32
}

// stdinOffset returns where standard input stands, if the arguments are
// to be read from it and it is a file that can be read again from there;
// -1 otherwise.
func stdinOffset(in io.Reader, argsFile string) int64 {
	fh, ok := in.(*os.File)
	if !ok || argsFile != "-" {
		return -1
	}
	if fi, err := fh.Stat(); err != nil || !fi.Mode().IsRegular() {
		return -1
	}
	off, err := fh.Seek(0, io.SeekCurrent)
	if err != nil {
		return -1
	}
	return off
}

// passStdin gives the command the standard input idemkey read the
// arguments from, as it would have had it without idemkey: a file
// rewound to where it stood, else the bytes read, through a pipe (written
// by a goroutine that nobody waits for: a command that does not read
// them, or leaves them to a process it started, holds nothing up).
func passStdin(in io.Reader, rewind int64, data []byte) func() (io.Reader, func()) {
	return func() (io.Reader, func()) {
		if fh, ok := in.(*os.File); ok && rewind >= 0 {
			if _, err := fh.Seek(rewind, io.SeekStart); err == nil {
				return fh, func() {}
			}
		}
		pr, pw, err := os.Pipe()
		if err != nil {
			return bytes.NewReader(data), func() {}
		}
		go func() {
			_, _ = pw.Write(data)
			pw.Close()
		}()
		return pr, func() { pr.Close() }
	}
}

func (opts *Options) logf(format string, args ...any) {
	if opts.Verbose {
		fmt.Fprintf(opts.f.IO.Err, "idemkey: "+format+"\n", args...)
	}
}

func run(opts *Options) error {
	f := opts.f
	ctx := context.Background()
	st := &runStep{opts: opts}

	// The key, as idemkey key derives it.
	var data []byte
	name := "<command line>"
	if opts.ArgsFile != "" {
		rewind := stdinOffset(f.IO.In, opts.ArgsFile)
		var err error
		if data, name, err = input.Read(f, opts.ArgsFile); err != nil {
			return err
		}
		if name == input.StdinName {
			st.stdin = passStdin(f.IO.In, rewind, data)
		}
	} else {
		if opts.Spec.From != derive.FromArgs {
			return &cli.UsageError{Err: fmt.Errorf("--from %s needs --args FILE: the command line is not an envelope", opts.Spec.From)}
		}
		if err := utf8CommandLine(opts.Command); err != nil {
			return err
		}
		data = cli.StringsJSON(opts.Command)
	}
	lc, err := keyflags.Load(opts.Spec, data)
	if err != nil {
		return cli.InputErr(name, 0, err)
	}
	st.key = string(opts.Key.Append(nil, lc.Call))
	st.args = lc.Call.Args.Append(nil)
	st.task, st.tool = lc.Call.Task, lc.Call.Tool
	// The fingerprint: the canonical arguments (as they enter the key)
	// and the command line.
	req := []byte(`{"args":`)
	req = lc.Call.Args.Append(req)
	req = append(req, `,"command":`...)
	req = append(req, cli.StringsJSON(opts.Command)...)
	st.request = append(req, '}')
	sum := sha256.Sum256(st.request)
	st.fingerprint = hex.EncodeToString(sum[:])

	store, err := ledgeropts.Open(ctx, f, opts.Ledger)
	if err != nil {
		return err
	}
	defer store.Close()
	st.store = store
	st.locker, _ = store.(stores.KeyLocker)
	if r := opts.report; r != nil {
		r.Key, r.Task, r.Tool, r.Ledger = st.key, st.task, st.tool, stores.Redact(opts.Ledger)
	}
	opts.logf("key %s, ledger %s", st.key, stores.Redact(opts.Ledger))
	return st.run(ctx)
}

func (st *runStep) claimRequest() ledger.ClaimRequest {
	return ledger.ClaimRequest{
		Record: ledger.Record{
			Key: st.key, Task: st.task, Tool: st.tool, Kind: "run",
			Fingerprint: st.fingerprint, Request: ledger.KeptRequest(st.request), Holder: stores.Holder(),
		},
		Lease:        st.opts.Lease,
		Recover:      st.opts.Recover,
		ReplayFailed: st.opts.ReplayFailed,
		Retain:       st.opts.Retain,
		HolderAlive:  stores.HolderCheck(st.store),
	}
}

// holdRequest is the hold of the step's key: the claim, the wait, the
// store's lock, and the events run reports.
func (st *runStep) holdRequest() ledger.HoldRequest {
	opts := st.opts
	req := ledger.HoldRequest{
		Claim: st.claimRequest(),
		Wait:  opts.Wait,
		// Whether the command can run at all, before any claim (a record
		// that can be replayed still is).
		Prepare: func() error { return step.LookCommand(opts.Command[0]) },
		// A signal from the claim on is taken in, not left to kill
		// idemkey with the attempt claimed and its command not started
		// (unknown, for a person to settle).
		Guard: func() func(bool) {
			sigs := make(chan os.Signal, 4)
			notifyUnignored(sigs, stepSignals...)
			st.sigs = sigs
			return func(held bool) {
				if !held {
					step.StopSignals(sigs)
				}
			}
		},
		Events: ledger.HoldEvents{
			Waiting:     func(*ledger.Record) { opts.logf("%s is running elsewhere: waiting up to %s", st.key, opts.Wait) },
			RenewFailed: func(err error) { opts.logf("renewing the lease: %v", err) },
		},
	}
	if st.locker != nil {
		req.Locker = stores.FileLocker{KL: st.locker}
	}
	if rc := opts.Reconcile; rc != nil {
		rc.Args = func(*ledger.Record) ([]byte, error) { return st.args, nil }
		req.Reconcile = func(ctx context.Context, rec *ledger.Record) ledger.Reconciliation {
			rc.Interrupt = st.sigs // a signal stops the reconcile, then idemkey
			return rc.Run(ctx, rec)
		}
		req.Events.Reconciling = func(rec *ledger.Record) {
			opts.logf("the outcome of attempt %d of %s is unknown: asking the owner (--reconcile)", rec.Attempt, st.key)
		}
	}
	return req
}

func (st *runStep) run(ctx context.Context) error {
	opts := st.opts
	held, err := ledger.Hold(ctx, st.store, st.holdRequest())
	if err != nil {
		var se *ledger.StoreError
		if errors.As(err, &se) && errors.Is(err, ledger.ErrNotDurable) {
			// Withdrawn, not started: a later try may find the replicas.
			opts.report.record("busy", nil)
			return &cli.CodeError{Code: cli.ExitBusy, Err: &ledgeropts.Unavailable{Spec: opts.Ledger, Err: se.Err}}
		}
		if errors.As(err, &se) {
			return &ledgeropts.Unavailable{Spec: opts.Ledger, Err: se.Err}
		}
		return err
	}
	rep := opts.report
	if rep != nil {
		rep.Waited, rep.Reconcile = held.Waited, newReconcileReport(held.Reconciled)
	}
	st.sayReconciled(held)
	switch held.Action {
	case ledger.ActRun:
		rep.record("ran", held.Record)
		return st.execute(ctx, held, st.sigs)
	case ledger.ActReplay:
		rep.record("replayed", held.Record)
		if rep != nil {
			rep.CommandExitCode = &held.Record.ExitCode
		}
		return st.replay(held.Record)
	case ledger.ActMismatch:
		rep.record("mismatch", held.Record)
		return st.mismatch(held.Record)
	case ledger.ActUnknown:
		rep.record("unknown", held.Record)
		return st.unknown(held)
	}
	rep.record("busy", held.Record)
	return st.busy(held.Record)
}

func closeFile(f *os.File) {
	if f != nil {
		f.Close()
	}
}

// sayReconciled says what a reconcile that ran in this hold answered and
// what follows from it (an undecided one with --recover fail is said by
// unknown's report).
func (st *runStep) sayReconciled(held *ledger.Held) {
	r := held.Reconciled
	w := st.opts.f.IO.Err
	fmt.Fprint(w, step.DuplicatedWarning(st.key, r))
	if r == nil || st.opts.Quiet && r.Verdict == ledger.Happened {
		return
	}
	note := ""
	if r.Note != "" {
		note = ": " + cli.DiagLine(r.Note)
	}
	switch {
	case r.Verdict == ledger.Happened:
		fmt.Fprintf(w, "idemkey: reconciled %s: %s%s; recorded as succeeded, its answer replayed\n", st.key, r.Said(), note)
	case r.Verdict == ledger.NotHappened && held.Action == ledger.ActRun:
		fmt.Fprintf(w, "idemkey: reconciled %s: the owner says the effect did not happen%s; running it as attempt %d\n", st.key, note, held.Hold.Attempt())
	case held.Action == ledger.ActRun:
		fmt.Fprintf(w, "idemkey: the reconcile of %s could not tell%s; --recover retry: running it as attempt %d\n", st.key, note, held.Hold.Attempt())
	}
}

// replay writes a recorded result again and returns its exit code.
func (st *runStep) replay(rec *ledger.Record) error {
	ios := st.opts.f.IO
	if !st.opts.Quiet {
		fmt.Fprintf(ios.Err, "idemkey: replayed %s: attempt %d, %s at %s, exit %d\n",
			st.key, rec.Attempt, rec.State, cli.Stamp(rec.EndedAt), rec.ExitCode)
	}
	// An empty stream is not written (a write of nothing fails on
	// /dev/full and a closed stdout): as the command did not write it.
	for _, o := range []struct {
		w    io.Writer
		data []byte
	}{{ios.Out, rec.Stdout.Data}, {ios.Err, rec.Stderr.Data}} {
		if len(o.data) == 0 {
			continue
		}
		if _, err := o.w.Write(o.data); err != nil {
			return err
		}
	}
	for _, o := range []struct {
		name string
		out  ledger.Output
	}{{"stdout", rec.Stdout}, {"stderr", rec.Stderr}} {
		// A stream of no bytes was not truncated, whatever was kept.
		if o.out.Truncated && o.out.Length > 0 {
			fmt.Fprintf(ios.Err, "idemkey: the recorded %s was truncated: replayed %d of its %d bytes (sha256 %s)\n",
				o.name, len(o.out.Data), o.out.Length, o.out.SHA256)
		}
	}
	if rec.ExitCode != 0 {
		return &cli.ExitError{Code: rec.ExitCode}
	}
	return nil
}

func (st *runStep) busy(rec *ledger.Record) error {
	ios := st.opts.f.IO
	waited := ""
	if st.opts.Wait > 0 {
		waited = fmt.Sprintf("; waited %s for it", st.opts.Wait)
	}
	if rec != nil && rec.State == ledger.Running {
		by := ledger.HolderName(rec.Holder)
		if stores.HolderGone(rec.Holder) {
			// The lock is held by what the holder left: its step.
			by += ", which has died; its step still runs (it holds the key's lock)"
		}
		fmt.Fprintf(ios.Err, "idemkey: %s is in progress elsewhere: attempt %d started at %s by %s%s\n",
			st.key, rec.Attempt, cli.Stamp(rec.StartedAt), by, waited)
	} else {
		fmt.Fprintf(ios.Err, "idemkey: %s is in progress elsewhere (its lock is held)%s\n", st.key, waited)
	}
	if st.opts.Wait == 0 {
		fmt.Fprintf(ios.Err, "hint: --wait DURATION waits for it to end and then acts on its outcome\n")
	}
	return &cli.ExitError{Code: cli.ExitBusy}
}

// unknown reports an attempt whose outcome is unknown and how to settle it.
func (st *runStep) unknown(held *ledger.Held) error {
	ios := st.opts.f.IO
	rec := held.Record
	fmt.Fprintf(ios.Err, "idemkey: outcome unknown: %s\n", st.key)
	fmt.Fprintf(ios.Err, "  attempt %d of task %q, tool %q, started at %s by %s\n", rec.Attempt, rec.Task, rec.Tool, cli.Stamp(rec.StartedAt), ledger.HolderName(rec.Holder))
	how := rec.Reason
	if rec.ExitCode >= cli.ExitSignalStart {
		how = fmt.Sprintf("%s (exit %d)", how, rec.ExitCode)
	}
	fmt.Fprintf(ios.Err, "  how it ended: %s (recorded at %s)\n", how, cli.Stamp(rec.EndedAt))
	if r := held.Reconciled; r != nil {
		fmt.Fprintf(ios.Err, "  reconcile: the owner could not tell: %s\n", cli.DiagLine(r.Note))
	}
	fmt.Fprintf(ios.Err, "hint: check whether the effect happened, then settle it: idemkey ledger resolve %s --as succeeded (replay from now on) or --as failed (run again); --recover retry runs it again with the same key, for a command whose owner dedupes by IDEMPOTENCY_KEY\n", st.key)
	return &cli.ExitError{Code: cli.ExitUnknown}
}

// mismatch refuses a key recorded for another step.
func (st *runStep) mismatch(rec *ledger.Record) error {
	what := ledger.DescribeDifference(rec.Request, st.request)
	return &cli.CodeError{Code: cli.ExitRunFailed, Err: &cli.UsageError{
		Err:      fmt.Errorf("key %s was recorded for another step (attempt %d, %s): %s", st.key, rec.Attempt, rec.State, what),
		HintText: fmt.Sprintf("the same key must mean the same step; give this one its own --task or --tool, or drop the record with 'idemkey ledger forget %s'", st.key),
	}}
}

// tee copies a pipe to w (live) and to the recorder. When w fails (a
// reader that went away: "| head -1"), the pipe is closed, so that the
// command sees the broken pipe it would have seen without idemkey; what
// the command wrote before, which the pipe still holds, is its output and
// is recorded. A read deadline (stopReading) ends it, once what the pipe
// holds has been passed on.
func tee(wg *sync.WaitGroup, r *os.File, w io.Writer, rec *step.Recorder) {
	defer wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			rec.Write(buf[:n])
			if _, werr := w.Write(buf[:n]); werr != nil {
				if !errors.Is(werr, syscall.EPIPE) {
					rec.Lost = werr
				}
				drainPending(r, buf, io.Discard, rec)
				r.Close()
				return
			}
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				drainPending(r, buf, w, rec)
			}
			return
		}
	}
}

// stopReading ends tee's wait for more output on r, without losing what
// r already holds: the command's last output, written before it exited,
// that a slow reader has not taken yet. Where a pipe has no deadlines, r
// is closed.
func stopReading(r *os.File) {
	if r.SetReadDeadline(time.Now()) != nil {
		r.Close()
	}
}

// drainPending passes on to w and records the bytes the pipe r holds now,
// and no more (processes the command left behind may write for ever).
func drainPending(r *os.File, buf []byte, w io.Writer, rec *step.Recorder) {
	left := proc.PipeBuffered(r)
	if left <= 0 || r.SetReadDeadline(time.Time{}) != nil {
		return
	}
	for left > 0 {
		// The bytes are there: this read does not wait.
		n, err := r.Read(buf[:min(len(buf), left)])
		if n > 0 {
			left -= n
			rec.Write(buf[:n])
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// execute runs the claimed attempt: the command with the key in its
// environment, its output streamed and recorded, the lease renewed (by
// the hold), the outcome completed.
func (st *runStep) execute(ctx context.Context, held *ledger.Held, sigs chan os.Signal) error {
	opts := st.opts
	h := held.Hold
	defer h.Close()
	defer signal.Stop(sigs)
	if TestHooks.BeforeStart != nil {
		TestHooks.BeforeStart()
	}
	attempt := h.Attempt()
	if d := held.Previous; d != nil {
		opts.logf("attempt %d of %s (attempt %d was %s)", attempt, st.key, d.Attempt, d.State)
	} else {
		opts.logf("attempt %d of %s", attempt, st.key)
	}
	lock := stores.LockFile(h.Lock())
	child, started, err := st.command(attempt, lock)
	if err != nil {
		return st.notStarted(ctx, h, err)
	}
	defer started()
	c := child.Cmd
	outR, outW, errR, errW, err := outputPipes()
	if err != nil {
		return st.notStarted(ctx, h, err)
	}
	c.Stdout, c.Stderr = outW, errW
	outRec, errRec := step.NewRecorder(opts.MaxOutput), step.NewRecorder(opts.MaxOutput)

	// A write to a closed standard output returns an error (tee passes the
	// broken pipe on to the command) instead of killing idemkey before it
	// records the outcome.
	pipes := make(chan os.Signal, 1)
	notifyUnignored(pipes, syscall.SIGPIPE)
	defer signal.Stop(pipes)

	if sig := pendingStop(sigs); sig != 0 {
		closeFiles(outR, outW, errR, errW)
		return st.stoppedBeforeStart(ctx, h, sig)
	}
	if err = child.Start(); err != nil {
		closeFiles(outR, outW, errR, errW)
		return st.notStarted(ctx, h, err)
	}
	closeFiles(outW, errW)
	// The step's holder holds the lock now too; this process keeps its
	// copy until the outcome is recorded.
	var copies sync.WaitGroup
	copies.Add(2)
	// The command's own output is the command's business (a broken pipe
	// reaches the command, and its exit code stays idemkey's), not a
	// failure of idemkey to write a result: write beneath the watcher.
	go tee(&copies, outR, cli.Underlying(opts.f.IO.Out), outRec)
	go tee(&copies, errR, cli.Underlying(opts.f.IO.Err), errRec)

	exited := make(chan struct{})
	lost := st.watch(ctx, h, child, sigs, exited)
	ws, ps, said, _ := child.Wait()
	close(exited)
	drainOutput(&copies, outR, errR)

	code, state, reason := exitOutcome(ws, ps, said)
	if step.TestHooks.CrashAfterExit != nil && step.TestHooks.CrashAfterExit() {
		_ = proc.SignalPid(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	if h.LostErr() != nil {
		if r := opts.report; r != nil {
			r.LeaseLost = true
		}
		if opts.OnLeaseLost == "kill" {
			lost() // said once, even when the loss came after the command's exit
			opts.report.ran(code, state, reason, false)
			return &cli.ExitError{Code: cli.ExitUnknown}
		}
	}
	o := ledger.Outcome{State: state, ExitCode: code, Reason: reason, Stdout: outRec.Output(), Stderr: errRec.Output()}
	return st.finish(ctx, h, o, outRec, errRec)
}

// outputPipes are the pipes the command's standard output and error are
// copied (and recorded) through.
func outputPipes() (outR, outW, errR, errW *os.File, err error) {
	if outR, outW, err = os.Pipe(); err != nil {
		return nil, nil, nil, nil, err
	}
	if errR, errW, err = os.Pipe(); err != nil {
		closeFiles(outR, outW)
		return nil, nil, nil, nil, err
	}
	return outR, outW, errR, errW, nil
}

// drainOutput waits for the copies of the command's output: output
// written by processes the command left behind may never end, so what
// arrived by shortly after the command's exit is what is recorded.
func drainOutput(copies *sync.WaitGroup, outR, errR *os.File) {
	drained := make(chan struct{})
	go func() { copies.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(2 * time.Second):
		stopReading(outR)
		stopReading(errR)
		<-drained
	}
	closeFiles(outR, errR)
}

// command builds the attempt's command under its holder (proc.Step): the
// key in its environment, its standard input, and the key's lock kept by
// the holder (nil on a lease store). started is to be called once the
// command has started (or failed to).
func (st *runStep) command(attempt int64, lock *os.File) (child *proc.Step, started func(), err error) {
	opts := st.opts
	c := exec.Command(opts.Command[0], opts.Command[1:]...)
	if filepath.Base(opts.Command[0]) == opts.Command[0] {
		if p, err := exec.LookPath(opts.Command[0]); err == nil || errors.Is(err, exec.ErrDot) {
			c.Path = p
		}
	}
	if errors.Is(c.Err, exec.ErrDot) {
		c.Err = nil // see step.LookCommand
	}
	if c.Err != nil {
		return nil, nil, c.Err
	}
	// The command (and its holder) stay in idemkey's process group, as a
	// plain command would be: whatever kills idemkey's group (a CI runner
	// cancelling the job, a shell's job control) reaches the command too,
	// while a signal to idemkey alone is passed on.
	if child, err = proc.NewStep(c.Path, c.Args, lock, stores.ChildFiles, false); err != nil {
		return nil, nil, err
	}
	child.Cmd.Env = append(step.Env(os.Environ(), opts.PassEnv),
		"IDEMPOTENCY_KEY="+st.key, "IDEMPOTENCY_ATTEMPT="+strconv.FormatInt(attempt, 10))
	child.Cmd.Stdin = opts.f.IO.In
	started = func() {}
	if st.stdin != nil {
		child.Cmd.Stdin, started = st.stdin()
	}
	return child, started, nil
}

func closeFiles(fs ...*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// notStarted completes an attempt whose command never started: it failed
// as a shell reports it (126), and may run again.
func (st *runStep) notStarted(ctx context.Context, h *ledger.Holding, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) && pe.Op == "fork/exec" {
		// Found, yet not executable: ENOENT here is a missing #!
		// interpreter or loader, not a missing file.
		if errors.Is(pe.Err, syscall.ENOENT) {
			err = fmt.Errorf("%s: cannot execute: its #! interpreter (or loader) was not found", pe.Path)
		} else {
			err = fmt.Errorf("%s: cannot execute: %v", pe.Path, pe.Err)
		}
	}
	o := ledger.Outcome{State: ledger.Failed, ExitCode: cli.ExitCannotExec, Reason: "could not start: " + err.Error()}
	c := h.Complete(ctx, o)
	st.opts.report.ran(o.ExitCode, o.State, o.Reason, c.Err == nil)
	if c.Err != nil {
		st.warnNotRecorded(h.Attempt(), c)
	}
	return &cli.CodeError{Code: cli.ExitCannotExec, Err: err}
}

// stoppedBeforeStart completes an attempt stopped by sig before its
// command started: it did nothing, and may run again.
func (st *runStep) stoppedBeforeStart(ctx context.Context, h *ledger.Holding, sig syscall.Signal) error {
	o := ledger.Outcome{State: ledger.Failed, ExitCode: cli.ExitSignalStart + int(sig),
		Reason: fmt.Sprintf("stopped by signal %d (%s) before the command started", int(sig), sig)}
	c := h.Complete(ctx, o)
	st.opts.report.ran(o.ExitCode, o.State, o.Reason, c.Err == nil)
	if c.Err != nil {
		st.warnNotRecorded(h.Attempt(), c)
	}
	return &cli.ExitError{Code: o.ExitCode}
}

// watch passes the signals idemkey takes in on to the command (in a loop
// of its own: nothing waits on the store there), and acts on a lost hold:
// the loss is said, and with --on-lease-lost kill the command and its
// descendants are killed. A signal that would have ended idemkey stops
// the step's whole tree: its processes are sent it, and what is left once
// the command exited is killed, before the outcome is recorded. The
// returned function says the loss, once.
func (st *runStep) watch(ctx context.Context, h *ledger.Holding, child *proc.Step, sigs chan os.Signal, exited chan struct{}) (sayLost func()) {
	opts := st.opts
	forward := func(sig syscall.Signal) {
		if slices.Contains(proc.UserSignals, os.Signal(sig)) {
			child.Signal(sig)
			return
		}
		st.stopped.Store(int32(sig))
		if (sig == syscall.SIGINT || sig == syscall.SIGQUIT || sig == syscall.SIGHUP) && proc.InTerminalForeground() {
			child.Stop(0) // the terminal sent it to the whole group: the command has it
			return
		}
		child.Stop(sig)
	}
	go func() {
		for {
			select {
			case <-exited:
				return
			case s := <-sigs:
				forward(s.(syscall.Signal))
			}
		}
	}()
	var once sync.Once
	sayLost = func() {
		once.Do(func() {
			fmt.Fprintf(opts.f.IO.Err, "idemkey: %s\n", step.LossLine(ctx, st.store, h, st.key, opts.Lease))
		})
	}
	go func() {
		select {
		case <-exited:
			return
		case <-h.Lost():
		}
		sayLost()
		if opts.OnLeaseLost == "kill" {
			child.Kill() // the command and everything it started
		}
	}()
	return sayLost
}

// finish records the attempt's outcome and returns the command's exit
// code (125 when idemkey lost the command's output on the way).
func (st *runStep) finish(ctx context.Context, h *ledger.Holding, o ledger.Outcome, outRec, errRec *step.Recorder) error {
	opts := st.opts
	attempt := h.Attempt()
	c := h.Complete(ctx, o)
	opts.report.ran(o.ExitCode, o.State, o.Reason, c.Err == nil)
	step.WarnOutputsDropped(opts.f.IO.Err, st.key, c)
	if c.Err != nil {
		st.warnNotRecorded(attempt, c)
	} else {
		opts.logf("recorded %s (exit %d) for attempt %d of %s", o.State, o.ExitCode, attempt, st.key)
		if o.State == ledger.Unknown {
			st.sayRecordedUnknown(attempt, o)
		}
		if step.TestHooks.CrashAfterComplete {
			_ = proc.SignalPid(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
	for _, s := range []struct {
		name string
		rec  *step.Recorder
	}{{"standard output", outRec}, {"standard error", errRec}} {
		if s.rec.Lost == nil {
			continue
		}
		// The command's writes went into idemkey's pipe and succeeded:
		// only idemkey knows that its output was lost.
		why := s.rec.Lost
		var pe *os.PathError
		if errors.As(why, &pe) {
			why = pe.Err
		}
		recorded := "was not recorded either"
		if c.Err == nil {
			recorded = fmt.Sprintf("is recorded as %s (exit %d)", o.State, o.ExitCode)
			if o.State == ledger.Succeeded {
				recorded += ": a later run replays its output"
			}
		}
		return &cli.CodeError{Code: cli.ExitRunFailed, Err: fmt.Errorf("writing the command's %s: %v; attempt %d %s",
			s.name, why, attempt, recorded)}
	}
	if o.ExitCode != 0 {
		return &cli.ExitError{Code: o.ExitCode}
	}
	return nil
}

// sayRecordedUnknown says that this run recorded its attempt as unknown
// (the command was killed by a signal: Ctrl-C, a SIGTERM passed on), and
// how to settle it, as for any unknown outcome.
func (st *runStep) sayRecordedUnknown(attempt int64, o ledger.Outcome) {
	w := st.opts.f.IO.Err
	why := o.Reason
	if sig := syscall.Signal(st.stopped.Load()); sig != 0 {
		why = fmt.Sprintf("idemkey got signal %d (%s) and stopped the command: %s", int(sig), sig, o.Reason)
	}
	fmt.Fprintf(w, "idemkey: outcome unknown: attempt %d of %s recorded as unknown (%s)\n", attempt, st.key, why)
	fmt.Fprintf(w, "hint: check whether the effect happened, then settle it: idemkey ledger resolve %s --as succeeded or --as failed\n", st.key)
}

// stepSignals are the signals a step takes in and forwards to its command.
// Those idemkey was started with ignored (nohup, a script's background
// job) are left alone: caught, they would reach the command at their
// defaults instead of ignored.
var stepSignals = append([]os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}, proc.UserSignals...)

// pendingStop returns the first signal in c that would have stopped
// idemkey (0 if none). A user signal, which would not have, is dropped:
// it came before the command existed.
func pendingStop(c chan os.Signal) syscall.Signal {
	for {
		select {
		case s := <-c:
			if !slices.Contains(proc.UserSignals, s) {
				return s.(syscall.Signal)
			}
		default:
			return 0
		}
	}
}

// warnNotRecorded says that an attempt's outcome was not recorded, why,
// and what the key's record is now.
func (st *runStep) warnNotRecorded(attempt int64, c ledger.CompleteResult) {
	fmt.Fprintf(st.opts.f.IO.Err, "idemkey: warning: the outcome of attempt %d of %s was not recorded: %s\n",
		attempt, st.key, step.NotRecordedWhy(c))
}

// notifyUnignored relays to c those of sigs that are not ignored.
func notifyUnignored(c chan<- os.Signal, sigs ...os.Signal) {
	var caught []os.Signal
	for _, s := range sigs {
		if !signal.Ignored(s) {
			caught = append(caught, s)
		}
	}
	if len(caught) > 0 {
		signal.Notify(c, caught...)
	}
}

// exitOutcome maps how the command ended (its wait status, as its holder
// said it; the holder's own ps when it could not) to an exit code and a
// state: killed by a signal is unknown (the command may have done part of
// its effect), 128+N.
func exitOutcome(ws syscall.WaitStatus, ps *os.ProcessState, said bool) (int, ledger.State, string) {
	if !said {
		if ps != nil {
			if hw, ok := ps.Sys().(syscall.WaitStatus); ok && hw.Signaled() {
				ws, said = hw, true
			}
		}
		if !said {
			return cli.ExitRunFailed, ledger.Unknown, fmt.Sprintf("the command's end was not seen: its holder ended with %v", ps)
		}
	}
	if ws.Signaled() {
		sig := ws.Signal()
		return cli.ExitSignalStart + int(sig), ledger.Unknown, fmt.Sprintf("killed by signal %d (%s)", int(sig), sig)
	}
	code := ws.ExitStatus()
	if code == 0 {
		return 0, ledger.Succeeded, ""
	}
	return code, ledger.Failed, fmt.Sprintf("exit status %d", code)
}

// passEnvNames checks --env's names: a variable's name, never NAME=VALUE
// (the value is idemkey's own).
func passEnvNames(names []string) ([]string, error) {
	for _, n := range names {
		if n == "" || strings.ContainsAny(n, "=\x00") {
			return nil, &cli.UsageError{Err: fmt.Errorf("invalid --env %q: want the name of one of idemkey's variables", n),
				HintText: "--env IDEMKEY_LEDGER passes idemkey's own value on; to give the command another value, run it as: env NAME=VALUE COMMAND"}
		}
	}
	return names, nil
}
