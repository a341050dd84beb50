package diff_test

import (
	"testing"

	"github.com/idemkey/idemkey/cmd/diff"
	"github.com/idemkey/idemkey/cmd/internal/clitest"
)

// diffView is what a test checks of diff's options.
type diffView struct {
	A, B                   string
	Scheme                 string
	Record, BareArgs       bool
	Format                 string
	JSON, Explain, Schemes bool
	Max                    int
	Lines                  [2]int
	Spec                   bool // a selection was asked for: then From, Task, Tool and Omit are its
	From, Task, Tool       string
	Omit                   []string
}

// TestDiffOptions: diff's flags, IDEMKEY_* variables and config file
// become its options through NewCmd's runF seam, no side read; --line is
// the command line's alone, and a bad --max is refused before anything
// runs.
func TestDiffOptions(t *testing.T) {
	view := func(o *diff.Options) diffView {
		v := diffView{A: o.FileA, B: o.FileB, Scheme: o.Scheme.String(), Record: o.Record, BareArgs: o.BareArgs, Format: o.Key.Format.Name,
			JSON: o.JSON, Explain: o.Explain, Schemes: o.Schemes, Max: o.Max, Lines: o.Lines, Spec: o.Spec != nil}
		if o.Spec != nil {
			v.From, v.Task, v.Tool, v.Omit = o.Spec.From, o.Spec.Task, o.Spec.Tool, o.Spec.Omit
		}
		return v
	}
	clitest.CheckOptions(t, diff.NewCmd, view, []clitest.OptionsCase[diffView]{
		{Name: "records, the defaults", Args: []string{"diff", "a.json", "b.json"},
			Want: diffView{A: "a.json", B: "b.json", Scheme: "js", Format: "hex", Max: 50}},
		{Name: "bare arguments, flags", Args: []string{"diff", "--task", "t-1", "--tool", "pay", "--omit", "/ts", "--json", "--explain", "--schemes",
			"--max", "0", "--line", "3:7", "--format", "uuid", "calls.jsonl", "-"},
			Want: diffView{A: "calls.jsonl", B: "-", Scheme: "js", BareArgs: true, Format: "uuid", JSON: true, Explain: true, Schemes: true,
				Lines: [2]int{3, 7}, Spec: true, From: "args", Task: "t-1", Tool: "pay", Omit: []string{"/ts"}}},
		{Name: "variables and the config file", Env: map[string]string{"IDEMKEY_FROM": "openai", "IDEMKEY_MAX": "5"},
			Config: "scheme: jcs\nrecord: false\nomit: [\"/trace_id\"]\n", Args: []string{"diff", "x.json", "y.json"},
			Want: diffView{A: "x.json", B: "y.json", Scheme: "jcs", Format: "hex", Max: 5, Spec: true, From: "openai", Omit: []string{"/trace_id"}}},
		{Name: "record", Env: map[string]string{"IDEMKEY_RECORD": "true", "IDEMKEY_LINE": "4"}, Args: []string{"diff", "--task", "t", "a", "b"},
			Want: diffView{A: "a", B: "b", Scheme: "js", Record: true, Format: "hex", Max: 50}},
		{Name: "negative max", Args: []string{"diff", "--max", "-1", "a", "b"}, Code: 2, Stderr: `invalid --max "-1"`},
	})
}
