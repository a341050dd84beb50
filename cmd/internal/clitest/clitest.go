// Package clitest is what the faces' tests share: the one in-process
// runner of idemkey (Run, Streams.Run), a face's options read through its
// runF seam (Streams.RunFace, CheckOptions), the test binary's TestMain that
// makes the tests hermetic and runs idemkey when the binary is called by
// that name (Main), the rule for a missing server or program (Unavailable:
// fail under CI=true, skip elsewhere), the shared stores (EachStore) and
// the rigs that run idemkey as real processes (Rig, Fleet).
package clitest

import (
	"bytes"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/cmd"
	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/spf13/cobra"
)

// Streams are what an in-process run of idemkey reads and sees: standard
// input (empty when nil), standard output (a buffer returned in Result
// when nil) and the environment (none when Env is nil).
type Streams struct {
	In  io.Reader
	Out io.Writer
	Env map[string]string
	// Getenv, when set, reads the environment instead of Env.
	Getenv func(string) string
}

// Output is what an in-process run wrote and its exit code.
type Output struct {
	Stdout, Stderr string
	Code           int
}

// Run runs idemkey in-process with args and the streams, through cmd.Main
// (the exit code is cli.ExitCode's, as for a user), and returns what it
// wrote.
func (s Streams) Run(t testing.TB, args ...string) Output {
	t.Helper()
	return s.main(func(ios *cli.IOStreams) int { return cmd.Main(args, ios) })
}

// RunFace is Run with the command called name built by build (a face's
// NewCmd with its runF seam): the root loads the settings as for a user,
// and the face's runF sees the options they give.
func (s Streams) RunFace(t testing.TB, name string, build func(*cli.Factory) *cobra.Command, args ...string) Output {
	t.Helper()
	return s.main(func(ios *cli.IOStreams) int { return cmd.MainWith(args, ios, name, build) })
}

// main runs main with the streams and returns what it wrote.
func (s Streams) main(main func(*cli.IOStreams) int) Output {
	var out, errb bytes.Buffer
	ios := &cli.IOStreams{In: s.In, Out: s.Out, Err: &errb, Getenv: s.Getenv}
	if ios.In == nil {
		ios.In = strings.NewReader("")
	}
	if ios.Out == nil {
		ios.Out = &out
	}
	if ios.Getenv == nil {
		env := s.Env
		ios.Getenv = func(k string) string { return env[k] }
	}
	code := main(ios)
	return Output{Stdout: out.String(), Stderr: errb.String(), Code: code}
}

// Run runs idemkey in-process with stdin and args, in an empty
// environment, and returns its stdout, stderr and exit code.
func Run(t testing.TB, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	o := Streams{In: strings.NewReader(stdin)}.Run(t, args...)
	return o.Stdout, o.Stderr, o.Code
}

// Allocated returns the bytes allocated while fn ran. A test using it is
// not parallel: parallel tests wait until the sequential ones are done,
// so nothing else allocates meanwhile.
func Allocated(fn func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// Values are the output's three parts, for a test that takes them apart
// at once.
func (o Output) Values() (stdout, stderr string, code int) { return o.Stdout, o.Stderr, o.Code }
