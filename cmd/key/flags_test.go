package key_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/cmd/key"
	"github.com/spf13/cobra"
)

// TestKeyOptions: key's flags and IDEMKEY_* variables become its options
// (read through NewCmd's runF seam, nothing run); a flag outranks its
// variable, and a bad value is refused before anything runs.
func TestKeyOptions(t *testing.T) {
	var got *key.Options
	build := func(f *cli.Factory) *cobra.Command {
		return key.NewCmd(f, func(o *key.Options) error { got = o; return nil })
	}
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		want func(o *key.Options) string // "" when the options are right
	}{
		{"flags", nil, []string{"key", "--task", "t-1", "--tool", "pay", "--format", "uuid", "--omit", "/ts", "--json", "call.json"},
			func(o *key.Options) string {
				if o.File != "call.json" || !o.JSON || o.Batch || o.Spec.Task != "t-1" || o.Spec.Tool != "pay" ||
					o.Key.Format.Name != "uuid" || !reflect.DeepEqual(o.Spec.Omit, []string{"/ts"}) {
					return "options"
				}
				return ""
			}},
		{"variables, a flag above its variable", map[string]string{"IDEMKEY_TASK": "t-env", "IDEMKEY_TOOL": "pay", "IDEMKEY_FORMAT": "base64url"},
			[]string{"key", "--format", "hex", "--batch", "--fail-fast"},
			func(o *key.Options) string {
				if o.File != "" || !o.Batch || !o.FailFast || o.Spec.Task != "t-env" || o.Key.Format.Name != "hex" {
					return "options"
				}
				return ""
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got = nil
			o := clitest.Streams{Env: c.env}.RunFace(t, "key", build, c.args...)
			if o.Code != 0 || got == nil {
				t.Fatalf("exit %d, runF called: %v\n%s", o.Code, got != nil, o.Stderr)
			}
			if what := c.want(got); what != "" {
				t.Fatalf("%s: %+v, spec %+v", what, *got, *got.Spec)
			}
		})
	}
	got = nil
	o := clitest.Streams{}.RunFace(t, "key", build, "key", "--task", "t", "--tool", "x", "--format", "octal")
	if o.Code != 2 || got != nil || !strings.Contains(o.Stderr, "octal") {
		t.Fatalf("a bad --format: exit %d, runF called: %v\n%s", o.Code, got != nil, o.Stderr)
	}
}
