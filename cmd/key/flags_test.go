package key_test

import (
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/cmd/key"
)

// keyView is what a test checks of key's options.
type keyView struct {
	File, Task, Tool, Format string
	JSON, Batch, FailFast    bool
	Omit                     []string
}

// TestKeyOptions: key's flags, IDEMKEY_* variables and config file become
// its options (read through NewCmd's runF seam, nothing run); a flag
// outranks its variable, a variable its config file, and a bad value is
// refused before anything runs.
func TestKeyOptions(t *testing.T) {
	view := func(o *key.Options) keyView {
		return keyView{File: o.File, Task: o.Spec.Task, Tool: o.Spec.Tool, Format: o.Key.Format.Name,
			JSON: o.JSON, Batch: o.Batch, FailFast: o.FailFast, Omit: o.Spec.Omit}
	}
	clitest.CheckOptions(t, key.NewCmd, view, []clitest.OptionsCase[keyView]{
		{Name: "flags", Args: []string{"key", "--task", "t-1", "--tool", "pay", "--format", "uuid", "--omit", "/ts", "--json", "call.json"},
			Want: keyView{File: "call.json", Task: "t-1", Tool: "pay", Format: "uuid", JSON: true, Omit: []string{"/ts"}}},
		{Name: "variables, a flag above its variable", Env: map[string]string{"IDEMKEY_TASK": "t-env", "IDEMKEY_TOOL": "pay", "IDEMKEY_FORMAT": "base64url"},
			Args: []string{"key", "--format", "hex", "--batch", "--fail-fast"},
			Want: keyView{Task: "t-env", Tool: "pay", Format: "hex", Batch: true, FailFast: true}},
		{Name: "a variable above the config file", Env: map[string]string{"IDEMKEY_FORMAT": "uuid"}, Config: "format: base64url\nomit: [/ts, /nonce]\n",
			Args: []string{"key", "--task", "t", "--tool", "x"},
			Want: keyView{Task: "t", Tool: "x", Format: "uuid", Omit: []string{"/ts", "/nonce"}}},
		{Name: "a bad --format", Args: []string{"key", "--task", "t", "--tool", "x", "--format", "octal"}, Code: 2, Stderr: "octal"},
	})
}
