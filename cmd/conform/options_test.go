package conform_test

import (
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd/conform"
	"github.com/idemkey/idemkey/cmd/internal/clitest"
)

// conformView is what a test checks of conform's options.
type conformView struct {
	Scheme, Output string
	PerCase, JSON  bool
	Timeout        time.Duration
	Rules          []string
	Skip           []int
	Command        []string
}

// TestConformOptions: conform's flags, IDEMKEY_* variables and config
// file become its options through NewCmd's runF seam, no implementation
// started; COMMAND's own flags stay its own, and an unknown rule is
// refused before anything runs.
func TestConformOptions(t *testing.T) {
	view := func(o *conform.Options) conformView {
		return conformView{Scheme: o.Scheme.String(), Output: o.Output.String(), PerCase: o.PerCase, JSON: o.JSON,
			Timeout: o.Timeout, Rules: o.Rules, Skip: o.Skip, Command: o.Command}
	}
	clitest.CheckOptions(t, conform.NewCmd, view, []clitest.OptionsCase[conformView]{
		{Name: "defaults", Args: []string{"conform", "--", "python3", "impl.py"},
			Want: conformView{Scheme: "js", Output: "key", Timeout: 10 * time.Second, Command: []string{"python3", "impl.py"}}},
		{Name: "flags, the command's own after it", Args: []string{"conform", "--output", "canonical", "--per-case", "--json", "--timeout", "2s",
			"--rule", "order-utf16", "--skip", "3-5", "--skip", "4", "--skip", "9", "node", "h.js", "--json"},
			Want: conformView{Scheme: "js", Output: "canonical", PerCase: true, JSON: true, Timeout: 2 * time.Second, Rules: []string{"order-utf16"},
				Skip: []int{3, 4, 5, 9}, Command: []string{"node", "h.js", "--json"}}},
		{Name: "variables and the config file", Env: map[string]string{"IDEMKEY_TIMEOUT": "500ms", "IDEMKEY_RULE": "whitespace"},
			Config: "scheme: jcs\noutput: canonical\n", Args: []string{"conform", "./impl"},
			Want: conformView{Scheme: "jcs", Output: "canonical", Timeout: 500 * time.Millisecond, Rules: []string{"whitespace"}, Command: []string{"./impl"}}},
		{Name: "unknown rule", Args: []string{"conform", "--rule", "ordering", "--", "./impl"}, Code: 2, Stderr: `unknown rule "ordering"`},
	})
}
