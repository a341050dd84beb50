package man_test

import (
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/cmd/man"
)

// TestManOptions: man's directory is its argument (read through NewCmd's
// runF seam, nothing written); an empty one, or none, is refused before
// anything runs.
func TestManOptions(t *testing.T) {
	dir := func(o *man.Options) string { return o.Dir }
	clitest.CheckOptions(t, man.NewCmd, dir, []clitest.OptionsCase[string]{
		{Name: "a directory", Args: []string{"man", "./share/man1"}, Want: "./share/man1"},
		{Name: "with a config file", Config: "scheme: jcs\n", Args: []string{"man", "/usr/local/share/man/man1"}, Want: "/usr/local/share/man/man1"},
		{Name: "empty", Args: []string{"man", ""}, Code: 2, Stderr: "DIR is empty"},
		{Name: "none", Args: []string{"man"}, Code: 2, Stderr: "missing argument"},
	})
}
