package canon_test

import (
	"testing"

	canoncmd "github.com/idemkey/idemkey/cmd/canon"
	"github.com/idemkey/idemkey/cmd/internal/clitest"
)

// canonView is what a test checks of canon's options: the files, the
// scheme, the mode and the spec's shape, task, tool and omissions.
type canonView struct {
	Files              []string
	Scheme             string
	Call, Check, Write bool
	From, Task, Tool   string // the spec's, "" without one
	Omit               []string
}

// TestCanonOptions: canon's flags, IDEMKEY_* variables and config file
// become its options through NewCmd's runF seam, nothing read or
// written; --write comes from the command line only, and a contradiction
// is refused before anything runs.
func TestCanonOptions(t *testing.T) {
	view := func(o *canoncmd.Options) canonView {
		v := canonView{Files: o.Files, Scheme: o.Scheme.String(), Call: o.Call, Check: o.Check, Write: o.Write}
		if o.Spec != nil {
			v.From, v.Task, v.Tool, v.Omit = o.Spec.From, o.Spec.Task, o.Spec.Tool, o.Spec.Omit
		}
		return v
	}
	clitest.CheckOptions(t, canoncmd.NewCmd, view, []clitest.OptionsCase[canonView]{
		{Name: "call flags", Args: []string{"canon", "--call", "--task", "t-1", "--tool", "pay", "--omit", "/ts", "--scheme", "jcs", "args.json"},
			Want: canonView{Files: []string{"args.json"}, Scheme: "jcs", Call: true, From: "args", Task: "t-1", Tool: "pay", Omit: []string{"/ts"}}},
		{Name: "envelope from variables", Env: map[string]string{"IDEMKEY_FROM": "openai", "IDEMKEY_TOOL": "pay", "IDEMKEY_TASK": "t-env"},
			Args: []string{"canon", "call.json"},
			Want: canonView{Files: []string{"call.json"}, Scheme: "js", From: "openai", Tool: "pay"}},
		{Name: "check with the config file's scheme", Config: "scheme: jcs\n", Args: []string{"canon", "--check", "a.json", "b.json"},
			Want: canonView{Files: []string{"a.json", "b.json"}, Scheme: "jcs", Check: true}},
		{Name: "no write from a variable", Env: map[string]string{"IDEMKEY_WRITE": "true"}, Args: []string{"canon", "a.json"},
			Want: canonView{Files: []string{"a.json"}, Scheme: "js"}},
		{Name: "check and write", Args: []string{"canon", "--check", "--write", "a.json"}, Code: 2, Stderr: "cannot be used together"},
	})
}
