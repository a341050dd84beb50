package cmd

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X …/cmd.version=v1.2.3";
// otherwise the module version from the build info is used.
var version = ""

// versionString is the short version, for the User-Agent: the module
// version, or "dev".
func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// versionLine says which build this is, so that a CI job that pins
// canonicalization can record which build made its keys: the module
// version (go install …@v1.2.3), or else the VCS revision and whether the
// tree had uncommitted changes, and the Go version and platform.
func versionLine(bi *debug.BuildInfo, ok bool) string {
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
	if version != "" {
		v = version
	}
	line := "idemkey version " + v
	if rev != "" && v == "dev" {
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

func printVersion(w io.Writer) error {
	bi, ok := debug.ReadBuildInfo()
	_, err := fmt.Fprintln(w, versionLine(bi, ok))
	return err
}

func newVersionCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print idemkey's version, its VCS revision and the Go version",
		Long: `Print idemkey's module version (a release installed with go install), or
else the VCS revision it was built from and "(modified)" when the tree had
uncommitted changes, then the Go version and platform.`,
		Args: rangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return printVersion(f.IO.Out)
		},
	}
}
