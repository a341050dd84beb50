package clitest

import (
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/spf13/cobra"
)

// OptionsCase is one row of a face's options test: the environment, the
// config file's YAML (given as IDEMKEY_CONFIG; none when empty), standard
// input and the arguments (the command's name first), and either the
// options they give, as the test's view of them, or the exit code and a
// part of the diagnostic of a run refused before its runF is called.
type OptionsCase[V any] struct {
	Name   string
	Env    map[string]string
	Config string
	Stdin  string
	Args   []string
	Want   V      // the view of the options, when Code is 0
	Code   int    // a refused run's exit code
	Stderr string // a part of its diagnostic
}

// CheckOptions runs each case with the face newCmd builds (its NewCmd)
// under the root that loads the settings (Streams.RunFace), its runF
// keeping the options it is given and running nothing, and compares
// view of them with the case's Want; a case with a Code must be refused
// with that code before runF is called.
func CheckOptions[O, V any](t *testing.T, newCmd func(*cli.Factory, func(O) error) *cobra.Command, view func(O) V, cases []OptionsCase[V]) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Helper()
			env := maps.Clone(c.Env)
			if c.Config != "" {
				path := filepath.Join(t.TempDir(), "config.yaml")
				if err := os.WriteFile(path, []byte(c.Config), 0o600); err != nil {
					t.Fatal(err)
				}
				if env == nil {
					env = map[string]string{}
				}
				env["IDEMKEY_CONFIG"] = path
			}
			var got O
			called := false
			build := func(f *cli.Factory) *cobra.Command {
				return newCmd(f, func(o O) error { got, called = o, true; return nil })
			}
			s := Streams{In: strings.NewReader(c.Stdin), Env: env}
			o := s.RunFace(t, c.Args[0], build, c.Args...)
			if c.Code != 0 {
				if o.Code != c.Code || called || !strings.Contains(o.Stderr, c.Stderr) {
					t.Fatalf("want exit %d before runF, with %q: exit %d, runF called: %v\n%s", c.Code, c.Stderr, o.Code, called, o.Stderr)
				}
				return
			}
			if o.Code != 0 || !called {
				t.Fatalf("exit %d, runF called: %v\n%s", o.Code, called, o.Stderr)
			}
			if v := view(got); !sameView(reflect.ValueOf(v), reflect.ValueOf(c.Want)) {
				t.Errorf("options:\n got %+v\nwant %+v", v, c.Want)
			}
		})
	}
}

// sameView is reflect.DeepEqual for a test's view of options, except that
// an empty slice or map equals a nil one: whether a list that is not set
// is nil or empty depends on where it was read, not on the options.
func sameView(a, b reflect.Value) bool {
	if a.Type() != b.Type() {
		return false
	}
	switch a.Kind() {
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !sameView(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.Len() != b.Len() {
			return false
		}
		for _, k := range a.MapKeys() {
			if bv := b.MapIndex(k); !bv.IsValid() || !sameView(a.MapIndex(k), bv) {
				return false
			}
		}
		return true
	case reflect.Struct:
		for i := range a.NumField() {
			if !a.Field(i).CanInterface() { // a value such as a time.Time: compared whole
				return reflect.DeepEqual(a.Interface(), b.Interface())
			}
			if !sameView(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}
