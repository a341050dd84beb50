// Package step is what run, post --ledger and mcp share of a step beyond
// the ledger's hold loop (ledger.Hold): running its command (the command
// looked up, its environment, the signals that stop it), recording its
// outputs, asking a reconcile command about an unknown outcome, and the
// lines that report a step's record (a lease lost, an outcome not
// recorded).
package step

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/proc"
	"github.com/idemkey/idemkey/derive/ledger"
)

// TestHooks are set only by the test binary (clitest.Main), from
// environment variables that an installed idemkey ignores.
var TestHooks struct {
	// CrashAfterExit kills idemkey between the command's exit and the
	// record of its outcome.
	CrashAfterExit func() bool
	// CrashAfterComplete, if set, kills idemkey right after the outcome's
	// lazy commit (no close of the store, no checkpoint).
	CrashAfterComplete bool
	// CrashAfterAnswer kills idemkey once a reconcile command answered,
	// before its answer is recorded.
	CrashAfterAnswer bool
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
//
// From reserveAtLeast bytes up, the room for them is allocated at once:
// the pages of a fresh allocation are taken only as output fills them,
// where a slice grown as it fills would copy 128 MiB of output four times
// over and take 2.7 times its size in fresh pages. The room also counts
// toward the heap from the start, so the buffers that a store's write
// grows next set off few collections.
func NewRecorder(max int64) *Recorder {
	r := &Recorder{max: max, h: sha256.New()}
	if max >= reserveAtLeast {
		r.data = make([]byte, 0, max)
	}
	return r
}

// reserveAtLeast is the smallest room NewRecorder allocates at once:
// below it, a slice's growth costs little.
const reserveAtLeast = 4 << 20

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

// Env is the environment a step's command (or a reconcile command) gets
// from idemkey's: without IDEMPOTENCY_KEY and IDEMPOTENCY_ATTEMPT
// (the caller sets its own), and without idemkey's own settings, IDEMKEY_*
// (a ledger URL's password, an HMAC secret, a policy meant for idemkey),
// which a command could echo into its output and so into the record;
// those named in pass (--env NAME) are kept.
func Env(env, pass []string) []string {
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
