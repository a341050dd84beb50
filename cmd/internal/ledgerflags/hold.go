package ledgerflags

// What run, post --ledger and mcp share of a hold beyond its loop
// (derive/ledger/hold.go): the outputs recorded, the lease lost, the
// signals, the step's environment, the request kept and compared.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/proc"
	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/idemkey/idemkey/derive/ledger/stores"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// DurationSetting parses a duration setting: a Go duration, or seconds.
func DurationSetting(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	return cli.ParseDays(s)
}

// RecoverPolicy is --recover if given, else the tool's
// tools.NAME.recover in the config file, else recover from the
// environment (IDEMKEY_RECOVER) or the config, else fail.
func RecoverPolicy(f *cli.Factory, cmd *cobra.Command, tool string) (ledger.Policy, error) {
	return RecoverPolicyOf(f, cmd.Flags(), tool)
}

// RecoverPolicyOf is RecoverPolicy for the flags fl (post reads it once
// the call's tool is known).
func RecoverPolicyOf(f *cli.Factory, fl *pflag.FlagSet, tool string) (ledger.Policy, error) {
	v := f.Config
	if !cli.Changed(fl, "recover") && tool != "" && v.GetString("tools."+tool+".recover") != "" {
		t, err := v.ForTool(tool)
		if err != nil {
			return "", err
		}
		v = t
	}
	p := ledger.Policy(v.GetString("recover"))
	if !p.Valid() {
		return "", v.Invalid("recover", "want fail or retry")
	}
	return p, nil
}

// MaxRecordedOutput bounds --max-output: both streams are held in memory
// while the step runs and written as one record, and the stores limit a
// record: pgx sends a statement's parameters as text, a bytea as hex (two
// bytes a byte), in one message of at most 1 GiB, and PostgreSQL returns a
// row in one such message too. At 256MiB a stream, a completion with both
// streams full failed on PostgreSQL ("message body too large"): the
// command ran, and its outcome was lost to unknown. 128MiB a stream leaves
// half the message to the arguments.
const MaxRecordedOutput = 128 << 20

// FileLocker is a store's kernel lock per key as the hold loop takes it:
// nil and no error when another process holds it.
type FileLocker struct{ KL stores.KeyLocker }

func (l FileLocker) TryLock(key string) (io.Closer, error) {
	f, err := l.KL.LockKey(key)
	if stores.IsLocked(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// LookCommand checks that the command can be found and executed: 127 or
// 126 otherwise, as a shell reports them.
func LookCommand(name string) error {
	_, err := exec.LookPath(name)
	if err == nil || errors.Is(err, exec.ErrDot) {
		// Found through a relative PATH entry: the user put it there, and
		// env and timeout run it (Go refuses it unless told).
		return nil
	}
	if strings.Contains(name, "/") {
		fi, serr := os.Stat(name)
		if serr != nil {
			return &cli.CodeError{Code: cli.ExitNotFound, Err: fmt.Errorf("%s: no such file", name)}
		}
		if fi.IsDir() {
			return &cli.CodeError{Code: cli.ExitCannotExec, Err: fmt.Errorf("%s: is a directory", name)}
		}
		return &cli.CodeError{Code: cli.ExitCannotExec, Err: fmt.Errorf("%s: permission denied (not executable)", name)}
	}
	if errors.Is(err, exec.ErrNotFound) {
		if p := notExecutableOnPath(name); p != "" {
			// As execvp reports it: found, not executable.
			return &cli.CodeError{Code: cli.ExitCannotExec, Err: fmt.Errorf("%s: permission denied (%s is not executable)", name, p)}
		}
		return &cli.CodeError{Code: cli.ExitNotFound, Err: fmt.Errorf("%s: command not found", name)}
	}
	return &cli.CodeError{Code: cli.ExitCannotExec, Err: fmt.Errorf("%s: %v", name, err)}
}

// notExecutableOnPath returns the first regular file called name in the
// PATH's directories (where LookPath found none that is executable), or "".
func notExecutableOnPath(name string) string {
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// Recorder keeps the first max bytes of a stream, its length and sha256.
type Recorder struct {
	max  int64
	data []byte
	n    int64
	h    hash.Hash
	// Lost is the error that stopped tee passing the stream on, unless it
	// was a broken pipe (a reader that went away, passed on to the
	// command): the output did not reach its destination.
	Lost error
}

// NewRecorder keeps at most max bytes.
func NewRecorder(max int64) *Recorder { return &Recorder{max: max, h: sha256.New()} }

func (r *Recorder) Write(p []byte) (int, error) {
	r.h.Write(p)
	r.n += int64(len(p))
	if room := r.max - int64(len(r.data)); room > 0 {
		r.data = append(r.data, p[:min(int64(len(p)), room)]...)
	}
	return len(p), nil
}

func (r *Recorder) Output() ledger.Output {
	return ledger.Output{Data: r.data, Length: r.n, SHA256: hex.EncodeToString(r.h.Sum(nil)), Truncated: r.n > int64(len(r.data))}
}

// StopSignals stops relaying to c and ends idemkey by a signal that came
// meanwhile, as that signal would have ended it.
func StopSignals(c chan os.Signal) {
	signal.Stop(c)
	select {
	case s := <-c:
		_ = proc.SignalPid(os.Getpid(), s.(syscall.Signal))
	default:
	}
}

// WarnOutputsDropped says that an outcome was recorded without its
// outputs' bytes (the store refused it for its size).
func WarnOutputsDropped(w io.Writer, key string, c ledger.CompleteResult) {
	if c.Err == nil && c.OutputsDropped {
		fmt.Fprintf(w, "idemkey: warning: the outcome of attempt %d of %s was recorded without its output (the ledger refused it for its size: %v); a replay returns no output, only its length and sha256\n",
			c.Attempt, key, c.Cause)
	}
}

// NotRecordedWhy says why a completion failed and what the key's record
// is now.
func NotRecordedWhy(c ledger.CompleteResult) string {
	if !errors.Is(c.Err, ledger.ErrLeaseLost) {
		s := fmt.Sprintf("%v; the next attempt will find it unknown", c.Err)
		switch {
		case c.Released:
			s += " (the claim was released: at once)"
		case c.ReleaseErr != nil:
			s += fmt.Sprintf(" once the lease runs out (releasing the claim failed too: %v)", c.ReleaseErr)
		}
		return s
	}
	cur := c.Current
	switch {
	case cur != nil && cur.Attempt != c.Attempt:
		return fmt.Sprintf("attempt %d holds the key now; its record stands (%s)", cur.Attempt, RecordNow(cur))
	case errors.Is(c.Err, ledger.ErrAttemptEnded) && cur != nil:
		return fmt.Sprintf("the attempt was recorded as %s by someone else meanwhile (its lease ran out, or a person resolved it); that record stands", cur.State)
	}
	return strings.TrimPrefix(c.Err.Error(), "lease lost: ")
}

// LossLine says that a hold was lost and why: the ledger's word for what
// happened to the key's record (a newer attempt, a record gone, an
// attempt ended by someone else), with who holds the key now; or that the
// ledger refused every renewal for a whole lease (it answered, with an
// error); or that it did not answer for a whole lease.
func LossLine(ctx context.Context, s ledger.Store, h *ledger.Holding, key string, lease time.Duration) string {
	err := h.LostErr()
	if !errors.Is(err, ledger.ErrLeaseLost) {
		what := "did not answer"
		if Answered(err) {
			what = "answered every renewal with an error"
		}
		return fmt.Sprintf("lease lost: the ledger %s for a whole lease (%s): %v; attempt %d of %s is no longer sure to hold the key, and another worker may take it over",
			what, lease, err, h.Attempt(), key)
	}
	msg := fmt.Sprintf("%v: attempt %d of %s is no longer the key's holder", err, h.Attempt(), key)
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	cur, _, gerr := s.Get(rctx, key)
	cancel()
	switch {
	case gerr != nil || cur == nil:
	case cur.Attempt != h.Attempt():
		msg += fmt.Sprintf(" (attempt %d holds it now: %s)", cur.Attempt, RecordNow(cur))
	case cur.State != ledger.Running:
		msg += fmt.Sprintf(" (its record says %s now)", cur.State)
	}
	return msg
}

// Answered reports whether err is a ledger server's own answer (it was
// reached, and refused the statement or script: a missing table, a
// permission, a read-only server), rather than a connection that failed
// or timed out. PostgreSQL's answers carry a SQLSTATE (those of classes
// 08 and 57P are the connection's end: no answer); Redis's are reply
// errors.
func Answered(err error) bool {
	var pg interface{ SQLState() string }
	if errors.As(err, &pg) {
		c := pg.SQLState()
		return !strings.HasPrefix(c, "08") && !strings.HasPrefix(c, "57P")
	}
	var rd interface{ RedisError() }
	return errors.As(err, &rd)
}

// StepEnv is the environment a step's command (or a reconcile command)
// gets from idemkey's: without IDEMPOTENCY_KEY and IDEMPOTENCY_ATTEMPT
// (the caller sets its own), and without idemkey's own settings, IDEMKEY_*
// (a ledger URL's password, an HMAC secret, a policy meant for idemkey),
// which a command could echo into its output and so into the record;
// those named in pass (--env NAME) are kept.
func StepEnv(env, pass []string) []string {
	out := WithoutEnv(env, "IDEMPOTENCY_KEY", "IDEMPOTENCY_ATTEMPT")
	kept := out[:0]
	for _, kv := range out {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "IDEMKEY_") && !slices.Contains(pass, name) {
			continue
		}
		kept = append(kept, kv)
	}
	return kept
}

// HolderGone reports whether a recorded holder ("HOST pid N …") is a
// process of this host that no longer runs (a pid reused since reads as
// running: the error is on the side of naming it).
func HolderGone(holder string) bool {
	f := strings.Fields(holder)
	if len(f) < 3 || f[1] != "pid" {
		return false
	}
	host, _ := os.Hostname()
	pid, err := strconv.Atoi(f[2])
	if err != nil || pid <= 0 || f[0] != strings.Join(strings.Fields(host), "-") {
		return false
	}
	return !proc.Alive(pid)
}

// RecordNow says whose a key's record is: its state, start and holder.
func RecordNow(cur *ledger.Record) string {
	return fmt.Sprintf("%s, started at %s by %s", cur.State, cli.Stamp(cur.StartedAt), ledger.HolderName(cur.Holder))
}

// WithoutEnv is env less the variables names.
func WithoutEnv(env []string, names ...string) []string {
	out := env[:0:0]
outer:
	for _, kv := range env {
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				continue outer
			}
		}
		out = append(out, kv)
	}
	return out
}
