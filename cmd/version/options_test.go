package version_test

import (
	"runtime"
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/cmd/version"
)

// versionView is what a test checks of version's options: whether the
// build information was read, and the Go version it names.
type versionView struct {
	HasBuild  bool
	GoVersion string
}

// TestVersionOptions: version's options hold the running binary's build
// information (read through NewCmd's runF seam, nothing printed); an
// argument is refused before anything runs.
func TestVersionOptions(t *testing.T) {
	view := func(o *version.Options) versionView {
		v := versionView{HasBuild: o.HasBuild}
		if o.Build != nil {
			v.GoVersion = o.Build.GoVersion
		}
		return v
	}
	clitest.CheckOptions(t, version.NewCmd, view, []clitest.OptionsCase[versionView]{
		{Name: "the test binary's build", Args: []string{"version"}, Want: versionView{HasBuild: true, GoVersion: runtime.Version()}},
		{Name: "a config file does not matter", Config: "format: uuid\n", Args: []string{"version"}, Want: versionView{HasBuild: true, GoVersion: runtime.Version()}},
		{Name: "a flag", Args: []string{"version", "--short"}, Code: 2, Stderr: "unknown flag: --short"},
		{Name: "an argument", Args: []string{"version", "now"}, Code: 2, Stderr: `unexpected argument "now"`},
	})
}
