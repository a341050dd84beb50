package vectors_test

import (
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/cmd/vectors"
)

// TestVectorsOptions: vectors' scheme comes from --scheme, IDEMKEY_SCHEME
// or the config file, a flag first (read through NewCmd's runF seam,
// nothing printed); an unknown scheme is refused before anything runs.
func TestVectorsOptions(t *testing.T) {
	scheme := func(o *vectors.Options) string { return o.Scheme.String() }
	clitest.CheckOptions(t, vectors.NewCmd, scheme, []clitest.OptionsCase[string]{
		{Name: "default", Args: []string{"vectors"}, Want: "js"},
		{Name: "flag", Args: []string{"vectors", "--scheme", "jcs"}, Want: "jcs"},
		{Name: "variable", Env: map[string]string{"IDEMKEY_SCHEME": "jcs"}, Args: []string{"vectors"}, Want: "jcs"},
		{Name: "config file", Config: "scheme: jcs\n", Args: []string{"vectors"}, Want: "jcs"},
		{Name: "a flag above the config file", Config: "scheme: jcs\n", Args: []string{"vectors", "--scheme", "js"}, Want: "js"},
		{Name: "unknown scheme", Args: []string{"vectors", "--scheme", "rfc"}, Code: 2, Stderr: `unknown scheme "rfc"`},
	})
}
