package settings

import "fmt"

// UsageError is a mistake in what the user gave: a flag on the command
// line, an IDEMKEY_* variable, a config file's value, a missing argument.
// It exits 2 (cli.ExitUsage). It is defined here, the lowest of the
// command line's packages, because a setting that does not fit is where
// most usage errors start; the commands name it cli.UsageError.
type UsageError struct {
	Err      error
	HintText string // the hint line under the error, if any
}

// Usagef is a UsageError with a formatted message and no hint.
func Usagef(format string, args ...any) *UsageError {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }
func (e *UsageError) ExitCode() int { return 2 }
func (e *UsageError) Hint() string  { return e.HintText }
