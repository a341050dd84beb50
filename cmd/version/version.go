// Package version is the face of 'idemkey version': which build this is.
package version

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/spf13/cobra"
)

// Line says which build this is, so that a CI job that pins
// canonicalization can record which build made its keys: the module
// version (go install …@v1.2.3), or else the VCS revision and whether the
// tree had uncommitted changes, and the Go version and platform.
func Line(bi *debug.BuildInfo, ok bool) string {
	v := "dev"
	rev, modified, when := "", false, ""
	if ok {
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			case "vcs.time":
				when = s.Value
			}
		}
	}
	if linked := cli.Linked(); linked != "" {
		v = linked
	}
	line := "idemkey version " + v
	// Go 1.24 and later stamp a build from a clone with a pseudo-version
	// (v0.0.0-20261201091928-cd38d8e8ea6d+dirty) holding 12 digits of the
	// revision: the whole revision and the tree's state are still said.
	pseudo := len(rev) >= 12 && strings.Contains(v, "-"+rev[:12])
	if rev != "" && (v == "dev" || pseudo) {
		line += " revision " + rev
		if when != "" {
			line += " " + when
		}
		if modified {
			line += " (modified)"
		}
	}
	goVersion := runtime.Version()
	if ok && bi.GoVersion != "" {
		goVersion = bi.GoVersion
	}
	return fmt.Sprintf("%s %s %s/%s", line, goVersion, runtime.GOOS, runtime.GOARCH)
}

// Print writes the version line (also for the root's --version).
func Print(w io.Writer) error {
	bi, ok := debug.ReadBuildInfo()
	_, err := fmt.Fprintln(w, Line(bi, ok))
	return err
}

// Options are version's settings: the build it describes.
type Options struct {
	f *cli.Factory
	// Build is the running binary's build information (debug.ReadBuildInfo);
	// HasBuild is false when it has none.
	Build    *debug.BuildInfo
	HasBuild bool
}

// NewCmd builds 'idemkey version': its options and run; with runF, runF
// instead of run, once the options are read (a test's seam for the
// arguments).
func NewCmd(f *cli.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{f: f}
	return &cobra.Command{
		Use:   "version",
		Short: "Print idemkey's version, its VCS revision and the Go version",
		Long: `Print idemkey's module version (a release installed with go install), or
else the VCS revision it was built from and "(modified)" when the tree had
uncommitted changes, then the Go version and platform.`,
		Args: cli.RangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Build, opts.HasBuild = debug.ReadBuildInfo()
			if runF != nil {
				return runF(opts)
			}
			return run(opts)
		},
	}
}

// run writes the version line of the options' build.
func run(opts *Options) error {
	_, err := fmt.Fprintln(opts.f.IO.Out, Line(opts.Build, opts.HasBuild))
	return err
}
