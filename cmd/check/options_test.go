package check_test

import (
	"testing"

	"github.com/idemkey/idemkey/cmd/check"
	"github.com/idemkey/idemkey/cmd/internal/clitest"
)

// checkView is what a test checks of check's options.
type checkView struct {
	Files        []string
	Scheme, From string
	Format       string
	Prefix       string
	Secret       string
	JSON         bool
	Only, Omit   []string
	ToolOmit     map[string][]string // each config file tools section's omit
}

// TestCheckOptions: check's flags, IDEMKEY_* variables and config file
// (its tools sections too) become its options through NewCmd's runF
// seam, no vector read; standard input named twice, or a --from check
// cannot take, is refused before anything runs.
func TestCheckOptions(t *testing.T) {
	view := func(o *check.Options) checkView {
		v := checkView{Files: o.Files, Scheme: o.Scheme.String(), From: o.From, Format: o.Key.Format.Name, Prefix: o.Key.Format.Prefix,
			Secret: string(o.Key.Secret), JSON: o.JSON, Only: o.Sel.Only, Omit: o.Sel.Omit}
		for name, sel := range o.Sel.Tools {
			if v.ToolOmit == nil {
				v.ToolOmit = map[string][]string{}
			}
			v.ToolOmit[name] = sel.Omit
		}
		return v
	}
	clitest.CheckOptions(t, check.NewCmd, view, []clitest.OptionsCase[checkView]{
		{Name: "flags", Args: []string{"check", "--format", "uuid", "--prefix", "pay-", "--from", "mcp", "--omit", "/ts", "--json", "a.jsonl", "b.jsonl"},
			Want: checkView{Files: []string{"a.jsonl", "b.jsonl"}, Scheme: "js", From: "mcp", Format: "uuid", Prefix: "pay-", JSON: true, Omit: []string{"/ts"}}},
		{Name: "standard input, variables", Env: map[string]string{"IDEMKEY_SCHEME": "jcs", "IDEMKEY_SECRET_ENV": "PIN_SECRET", "PIN_SECRET": "s3", "IDEMKEY_ONLY": "/amount"},
			Args: []string{"check"},
			Want: checkView{Files: []string{"-"}, Scheme: "jcs", From: "args", Format: "hex", Secret: "s3", Only: []string{"/amount"}}},
		{Name: "the config file, a flag above it", Config: "format: base64url\nscheme: jcs\ntools:\n  pay:\n    omit: [\"/nonce\"]\n",
			Args: []string{"check", "--scheme", "js", "v.jsonl"},
			Want: checkView{Files: []string{"v.jsonl"}, Scheme: "js", From: "args", Format: "base64url",
				ToolOmit: map[string][]string{"pay": {"/nonce"}}}},
		{Name: "standard input twice", Args: []string{"check", "-", "a.jsonl", "-"}, Code: 2, Stderr: "standard input (-) given more than once"},
		{Name: "from call in IDEMKEY_FROM", Env: map[string]string{"IDEMKEY_FROM": "call"}, Args: []string{"check"}, Code: 2, Stderr: `invalid IDEMKEY_FROM "call" (want args, mcp, openai, anthropic or auto)`},
		{Name: "from call", Args: []string{"check", "--from", "call"}, Code: 2, Stderr: "want args, mcp, openai, anthropic or auto"},
	})
}
