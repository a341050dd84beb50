package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/cmd/internal/settings"
)

// Exit codes shared by every command. Transfer failures in post use curl's
// own codes (see post.go).
const (
	ExitOK       = 0
	ExitNegative = 1 // a negative answer: keys differ, not canonical, mismatch
	ExitUsage    = 2 // usage or input error
)

// ExitCoder is implemented by every error that decides the exit code; Run
// maps errors to codes in one place with errors.As.
type ExitCoder interface{ ExitCode() int }

// Hinter is implemented by errors that carry a suggestion for the reader.
type Hinter interface{ Hint() string }

// UsageError is a mistake on the command line, in IDEMKEY_* or in the
// config file: a missing flag, a bad value (exit 2). It is defined with
// the settings (settings.UsageError), where most usage errors start.
type UsageError = settings.UsageError

// Usagef is a UsageError with a formatted message.
func Usagef(format string, args ...any) *UsageError { return settings.Usagef(format, args...) }

// InputError is input that cannot be used: a missing file, invalid JSON.
// Its message starts with the input's name and, for JSON errors, the line
// and column: "args.json:3:7: invalid escape".
type InputError struct {
	Name string // file name, or "<stdin>"
	Line int    // when > 0, overrides the line of a *canon.Error (JSON Lines input)
	Err  error
}

func (e *InputError) Error() string {
	var ce *canon.Error
	if errors.As(e.Err, &ce) {
		line := ce.Line
		if e.Line > 0 {
			line = e.Line + ce.Line - 1
		}
		msg := fmt.Sprintf("%s:%d:%d: %s", e.Name, line, ce.Column, ce.Msg)
		if ce.Pointer != "" {
			msg += " (at " + ShortPointer(ce.Pointer) + ")"
		}
		return msg
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Name, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Name, e.Err)
}

func (e *InputError) Unwrap() error { return e.Err }
func (e *InputError) ExitCode() int { return ExitUsage }
func (e *InputError) Hint() string {
	var h Hinter
	if errors.As(e.Err, &h) {
		return h.Hint()
	}
	var ce *canon.Error
	if errors.As(e.Err, &ce) {
		if e.Line > 0 && ce.RelatedLine > 0 {
			// The hint names a place in the same JSON Lines line: give
			// its line in the file.
			return strings.Replace(ce.Hint, fmt.Sprintf("line %d,", ce.RelatedLine), fmt.Sprintf("line %d,", e.Line+ce.RelatedLine-1), 1)
		}
		return ce.Hint
	}
	return ""
}

// ExitError ends a command with a code and no further message: the
// command has already said what it had to (a negative answer).
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }
func (e *ExitError) ExitCode() int { return e.Code }

// OutputError is a result that could not be written to standard output
// (a full disk, a closed stream): exit 2, since the reader did not get it.
type OutputError struct{ Err error }

func (e *OutputError) Error() string {
	err := e.Err
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Sprintf("cannot write the result to standard output: %v", err)
}
func (e *OutputError) Unwrap() error { return e.Err }
func (e *OutputError) ExitCode() int { return ExitUsage }

// ExitCode maps an error to the process's exit code.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ec ExitCoder
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	// Errors cobra produces itself (unknown command, bad arguments) are
	// usage errors.
	return ExitUsage
}

// Exit codes of run (and mcp), as timeout(1) and env(1) have them.
const (
	ExitBusy        = 75  // in progress elsewhere (EX_TEMPFAIL)
	ExitUnknown     = 76  // outcome unknown
	ExitRunFailed   = 125 // idemkey itself failed
	ExitCannotExec  = 126 // the command cannot be executed
	ExitNotFound    = 127 // the command was not found
	ExitSignalStart = 128 // + N: killed by signal N
)

// CodeError is an error with its own exit code and the wrapped error's
// message and hint: run's 125 for a usage error (as env has it), 76 for an
// unknown outcome, a ledger command's negative answer.
type CodeError struct {
	Code int
	Err  error
}

func (e *CodeError) Error() string { return e.Err.Error() }

func (e *CodeError) Unwrap() error { return e.Err }

func (e *CodeError) ExitCode() int { return e.Code }

// UsageFrom turns a library's error about a setting into a usage error
// that keeps its hint.
func UsageFrom(err error) error {
	ue := &UsageError{Err: err}
	var h Hinter
	if errors.As(err, &h) {
		ue.HintText = h.Hint()
	}
	return ue
}

// InputErr attaches the input's name (and line) to an error from load.
func InputErr(name string, line int, err error) error {
	var ue *UsageError
	if errors.As(err, &ue) {
		return err
	}
	return &InputError{Name: name, Line: line, Err: err}
}

// HintedError is an error with a hint line and no exit code of its own:
// input that parsed but is not what a command expected.
type HintedError struct{ Msg, HintText string }

func (e *HintedError) Error() string { return e.Msg }
func (e *HintedError) Hint() string  { return e.HintText }
