package step

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/proc"
	"github.com/idemkey/idemkey/cmd/internal/settings"
	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/idemkey/idemkey/derive/ledger/stores"
	"github.com/spf13/pflag"
)

// reconcile.go runs a reconcile command: a shell command line
// that asks the owner of a step's effect whether an attempt whose outcome
// is unknown made it. The decision on its answer is the ledger's
// (ledger.Reconciler); this is the process.

// ExitDuplicated is a reconcile command's answer that the effect happened
// more than once.
const ExitDuplicated = 3

// DuplicatedWarning is the warning a face gives for a reconcile that
// found the effect made more than once (empty for any other answer).
func DuplicatedWarning(key string, r *ledger.Reconciliation) string {
	if r == nil || r.Verdict != ledger.Happened || !r.Duplicated {
		return ""
	}
	return fmt.Sprintf("idemkey: warning: %s: the owner says the effect happened more than once (duplicated): recorded as succeeded, and not run again; undo the extra effect with the owner\n", key)
}

// defaultReconcileTimeout is --reconcile-timeout's default.
const defaultReconcileTimeout = 30 * time.Second

// maxReconcileNote bounds how much of a reconcile command's standard
// error is kept in the record's reason.
const maxReconcileNote = 2 << 10

// Reconcile is a reconcile command and what it is told.
type Reconcile struct {
	Command   string        // a shell command line, run by /bin/sh -c
	Timeout   time.Duration // then it is killed: the outcome stays unknown
	MaxOutput int64         // of its standard output, saved as the step's
	PassEnv   []string      // IDEMKEY_* variables it gets (--env)
	// Args returns the canonical arguments of rec's step (its standard
	// input).
	Args func(rec *ledger.Record) ([]byte, error)
	// Interrupt, if set, takes in the signals that end idemkey: one stops
	// the reconcile (unknown) and is put back for the caller to act on.
	Interrupt chan os.Signal
}

// Reconciler is the ledger's hook for the command.
func (rc *Reconcile) Reconciler() ledger.Reconciler {
	return func(ctx context.Context, rec *ledger.Record) ledger.Reconciliation {
		return rc.Run(ctx, rec)
	}
}

// Run runs the command for rec and reads its answer: exit 0 happened
// (its standard output is the step's), 1 not happened, 3 happened more
// than once (settled as happened, Duplicated), anything else (another
// exit, a timeout, a signal, a start that failed) undecided. Every
// command that reconciles (run, post, mcp, ledger reconcile) runs it.
func (rc *Reconcile) Run(ctx context.Context, rec *ledger.Record) ledger.Reconciliation {
	undecided := func(why string) ledger.Reconciliation {
		return ledger.Reconciliation{Verdict: ledger.Undecided, Note: why}
	}
	args, err := rc.Args(rec)
	if err != nil {
		return undecided(err.Error())
	}
	ctx, cancel := context.WithTimeout(ctx, rc.Timeout)
	defer cancel()
	// Under a holder that reaps what the command leaves behind: a
	// reconcile only looks, and a process it left running (setsid sleep &)
	// must not keep the key in progress. The command is not given the
	// key's lock; its holder keeps it while the command runs, also when
	// idemkey is killed meanwhile, so that no other reconcile starts.
	lock := stores.LockFile(ledger.KeyLock(ctx))
	step, err := proc.NewStep("/bin/sh", []string{"sh", "-c", rc.Command}, lock, stores.ChildFiles, true)
	if err != nil {
		return undecided("the reconcile command could not start: " + err.Error())
	}
	c := step.Cmd
	c.WaitDelay = 2 * time.Second
	c.Env = append(Env(os.Environ(), rc.PassEnv),
		"IDEMPOTENCY_KEY="+rec.Key, "IDEMPOTENCY_ATTEMPT="+strconv.FormatInt(rec.Attempt, 10),
		"IDEMKEY_TASK="+rec.Task, "IDEMKEY_TOOL="+rec.Tool)
	c.Stdin = bytes.NewReader(args)
	out := NewRecorder(rc.MaxOutput)
	errb := noteBuffer{max: maxReconcileNote}
	c.Stdout, c.Stderr = out, &errb
	if err := step.Start(); err != nil {
		return undecided("the reconcile command could not start: " + proc.UnwrapExec(err).Error())
	}
	waited := make(chan stepEnd, 1)
	go func() {
		var e stepEnd
		e.ws, e.ps, e.said, e.err = step.Wait()
		waited <- e
	}()
	interrupted, end := rc.wait(ctx, step, waited)
	if TestHooks.CrashAfterAnswer {
		_ = proc.SignalPid(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	note := errb.note()
	switch {
	case interrupted != nil:
		return undecided(fmt.Sprintf("the reconcile command was stopped: idemkey got %s", interrupted))
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return undecided(fmt.Sprintf("the reconcile command timed out after %s", rc.Timeout))
	case ctx.Err() != nil:
		return undecided("the reconcile command was stopped: the key's claim was lost")
	case !end.said:
		return undecided(fmt.Sprintf("the reconcile command's end was not seen: its holder ended with %v", end.ps))
	}
	ws, werr := end.ws, end.err
	if ws.Signaled() {
		return undecided(withNote(fmt.Sprintf("the reconcile command was killed by signal %d (%s)", int(ws.Signal()), ws.Signal()), note))
	}
	switch code := ws.ExitStatus(); {
	case code == 0 && werr == nil:
		return ledger.Reconciliation{Verdict: ledger.Happened, Output: out.Output(), Note: note}
	case code == 1:
		return ledger.Reconciliation{Verdict: ledger.NotHappened, Note: note}
	case code == ExitDuplicated && werr == nil:
		return ledger.Reconciliation{Verdict: ledger.Happened, Duplicated: true, Output: out.Output(), Note: note}
	case code == 0 || code == ExitDuplicated:
		// Exited and left a child writing to its output: not an answer.
		return undecided("the reconcile command's output did not end: " + werr.Error())
	default:
		return undecided(withNote(fmt.Sprintf("the reconcile command exited %d", code), note))
	}
}

// stepEnd is how a reconcile command ended (proc.Step.Wait).
type stepEnd struct {
	ws   syscall.WaitStatus
	ps   *os.ProcessState
	said bool
	err  error
}

// wait waits for the command, for ctx to end (a timeout, the claim lost:
// then its whole tree is killed), or for a signal in Interrupt that would
// end idemkey: then its tree is killed and the signal put back for the
// caller, who ends by it. A user signal (SIGUSR1, SIGUSR2) is for a
// step's command: the reconcile is left alone.
func (rc *Reconcile) wait(ctx context.Context, step *proc.Step, waited chan stepEnd) (os.Signal, stepEnd) {
	done := ctx.Done()
	for {
		select {
		case e := <-waited:
			return nil, e
		case <-done:
			step.Kill()
			done = nil
		case s := <-rc.Interrupt: // nil channel: never
			if slices.Contains(proc.UserSignals, s) {
				continue
			}
			step.Kill()
			e := <-waited
			rc.Interrupt <- s
			return s, e
		}
	}
}

func withNote(s, note string) string {
	if note == "" {
		return s
	}
	return s + ": " + note
}

// noteBuffer keeps the first max bytes written to it, for a note.
type noteBuffer struct {
	max  int
	buf  []byte
	more bool
}

func (c *noteBuffer) Write(p []byte) (int, error) {
	room := max(c.max-len(c.buf), 0)
	c.buf = append(c.buf, p[:min(len(p), room)]...)
	if len(p) > room {
		c.more = true
	}
	return len(p), nil
}

// note is the kept text on one line: control characters and invalid
// UTF-8 shown as U+FFFD, runs of white space as one space.
func (c *noteBuffer) note() string {
	s := strings.ToValidUTF8(string(c.buf), "\uFFFD")
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || r == ' ' }), " ")
	if c.more {
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += " …"
	}
	return s
}

// ReconcileSettings reads --reconcile and --reconcile-timeout, each from
// the flag, IDEMKEY_*, the tool's section of the config file
// (tools.NAME.reconcile) or its top level. Nil without a command.
func ReconcileSettings(f *cli.Factory, fl *pflag.FlagSet, tool string) (*Reconcile, error) {
	v := f.Config
	_, command, err := toolValue(fl, v, "reconcile", tool)
	if err != nil || command == "" {
		return nil, err
	}
	// v: where the timeout was read, for its error's position.
	v, timeout, err := toolValue(fl, v, "reconcile-timeout", tool)
	if err != nil {
		return nil, err
	}
	rc := &Reconcile{Command: command, Timeout: defaultReconcileTimeout, MaxOutput: maxReconcileOutput}
	if timeout != "" {
		if rc.Timeout, err = cli.ParseDays(timeout); err != nil {
			return nil, v.Unparsable("reconcile-timeout", err)
		}
		if rc.Timeout <= 0 {
			return nil, v.OutOfRange("reconcile-timeout", "a reconcile needs some time (at least 1ms)")
		}
	}
	return rc, nil
}

// maxReconcileOutput bounds what a reconcile command's standard output
// may be: it is recorded as the step's and replayed.
const maxReconcileOutput = 1 << 20

// toolValue is a setting's value: the flag if given, else the tool's
// section of the config file if it has it (tools.NAME.SETTING), else as
// the settings resolve it (IDEMKEY_*, the config's top level, default).
// It returns the settings it was read from (the tool's, or v).
func toolValue(fl *pflag.FlagSet, v *settings.Settings, name, tool string) (*settings.Settings, string, error) {
	if !cli.Changed(fl, name) && tool != "" && v.GetString("tools."+tool+"."+name) != "" {
		t, err := v.ForTool(tool)
		if err != nil {
			return nil, "", err
		}
		v = t
	}
	return v, v.GetString(name), nil
}

// AddReconcileFlags adds --reconcile and --reconcile-timeout, both read
// per tool too: a tools section of the config file may name a tool's
// reconcile command and its timeout (tools.NAME.reconcile), as it names
// its recovery policy.
func AddReconcileFlags(fl *pflag.FlagSet, what string) {
	fl.String("reconcile", "", "ask the owner first about "+what+" whose outcome is unknown: a shell command line, exit 0 it happened, 1 it did not, 3 it happened more than once, other: unknown (per tool: tools.NAME.reconcile)")
	fl.String("reconcile-timeout", "30s", "stop a --reconcile command after this long (the outcome stays unknown)")
	settings.ReadPerTool(fl, "reconcile", "reconcile-timeout")
}

// RequestArgs returns the canonical arguments kept in a record's request
// ({"args":…} for run, {"body":…} for post), byte for byte.
func RequestArgs(rec *ledger.Record) ([]byte, error) {
	if len(rec.Request) == 0 {
		return nil, fmt.Errorf("the record does not keep the step's arguments (a request past %d bytes is not kept): settle it with 'idemkey ledger resolve'", ledger.MaxKeptRequest)
	}
	var req struct {
		Args json.RawMessage `json:"args"`
		Body json.RawMessage `json:"body"`
	}
	if err := json.Unmarshal(rec.Request, &req); err != nil {
		return nil, fmt.Errorf("the record's request cannot be read: %v", err)
	}
	if rec.Kind == "post" {
		return req.Body, nil
	}
	return req.Args, nil
}
