package cmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestHoistCommand(t *testing.T) {
	f := &Factory{IO: &IOStreams{Getenv: func(string) string { return "" }}, Config: &Settings{fs: pflag.NewFlagSet("", pflag.ContinueOnError)}}
	root := NewRootCmd(f)
	for _, c := range []struct{ in, want string }{
		{"-v post URL", "post -v URL"},
		{"--task t key a.json", "key --task t a.json"},
		{"--task key key a.json", "key --task key a.json"}, // the first "key" is --task's value
		{"--task=key key a.json", "key --task=key a.json"},
		{"--color never --config c.yaml key a.json", "key --color never --config c.yaml a.json"},
		{"-d @a.json post URL", "post -d @a.json URL"},
		{"--bogus key a.json", "key --bogus a.json"}, // key reports the unknown flag
		{"key --task t a.json", "key --task t a.json"},
		{"-- key", "-- key"},
		{"--task t", "--task t"},
	} {
		got := strings.Join(hoistCommand(root, strings.Fields(c.in)), " ")
		if got != c.want {
			t.Errorf("hoist(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestRepeatedFlags(t *testing.T) {
	run := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := Main(args, &IOStreams{In: strings.NewReader(`{"a":1}`), Out: &out, Err: &errb, Getenv: func(string) string { return "" }})
		return code, errb.String()
	}
	for _, args := range [][]string{
		{"key", "--task", "a", "--task", "b", "--tool", "x"},
		{"key", "--task", "a", "--tool", "x", "--tool", "y"},
		{"key", "--task", "a", "--tool", "x", "--json", "--json=false"},
		{"key", "--task", "a", "--tool", "x", "--format", "hex", "--format", "uuid"},
		{"diff", "--max", "1", "--max", "2", "a", "b"},
		{"post", "http://127.0.0.1:9", "--task", "t", "--tool", "x", "-d", "{}", "--data", "[]", "--dry-run"},
	} {
		if code, errs := run(args...); code != exitUsage || !strings.Contains(errs, "given more than once") {
			t.Errorf("%q: exit %d, %q", args, code, errs)
		}
	}
	// Repeatable flags, and a flag repeated with the same value, stay fine.
	if code, errs := run("key", "--task", "a", "--tool", "x", "--omit", "/b", "--omit", "/c", "--json", "--json", "--task", "a", "--json=true"); code != 0 {
		t.Errorf("repeatable: exit %d, %q", code, errs)
	}
}

// TestFlagTypesSurviveTheWrapper: every flag keeps its type, and a
// boolean flag still needs no value.
func TestFlagTypesSurviveTheWrapper(t *testing.T) {
	f := &Factory{IO: &IOStreams{Getenv: func(string) string { return "" }}, Config: &Settings{fs: pflag.NewFlagSet("", pflag.ContinueOnError)}}
	root := NewRootCmd(f)
	key, _, _ := root.Find([]string{"key"})
	if err := key.ParseFlags([]string{"--json", "--max-len", "70", "--task=t"}); err != nil {
		t.Fatal(err)
	}
	if b, err := key.Flags().GetBool("json"); err != nil || !b {
		t.Errorf("GetBool: %v %v", b, err)
	}
	if n, err := key.Flags().GetInt("max-len"); err != nil || n != 70 {
		t.Errorf("GetInt: %v %v", n, err)
	}
	types := map[string]string{}
	key.Flags().VisitAll(func(fl *pflag.Flag) { types[fl.Name] = fl.Value.Type() })
	want := map[string]string{"json": "bool", "max-len": "int", "task": "string", "omit": "stringArray"}
	for n, w := range want {
		if types[n] != w {
			t.Errorf("%s: type %q, want %q", n, types[n], w)
		}
	}
}

func TestOutClosed(t *testing.T) {
	if !(&IOStreams{Out: watchWrites(closedWriter{})}).OutClosed() {
		t.Error("a closed stdout behind the watcher is not seen")
	}
	if (&IOStreams{Out: watchWrites(&bytes.Buffer{})}).OutClosed() {
		t.Error("a buffer is taken for a closed stdout")
	}
}
