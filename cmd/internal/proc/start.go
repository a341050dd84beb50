package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/idemkey/idemkey/cmd/internal/cli"
)

// StartError is a program that could not be started, as a usage error
// naming it ("cannot run impl: no such file or directory").
func StartError(argv0 string, err error) error {
	return &cli.UsageError{Err: fmt.Errorf("cannot run %s: %v", argv0, UnwrapExec(err))}
}

// UnwrapExec is the reason under an exec or path error.
func UnwrapExec(err error) error {
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
