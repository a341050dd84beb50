package cmd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/settings"
	"github.com/spf13/pflag"
)

func TestHoistCommand(t *testing.T) {
	f := &cli.Factory{IO: &cli.IOStreams{Getenv: func(string) string { return "" }}, Config: settings.New(pflag.NewFlagSet("", pflag.ContinueOnError), nil)}
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
		got := strings.Join(cli.HoistCommand(root, strings.Fields(c.in)), " ")
		if got != c.want {
			t.Errorf("hoist(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestFlagTypesSurviveTheWrapper: every flag keeps its type, and a
// boolean flag still needs no value.
func TestFlagTypesSurviveTheWrapper(t *testing.T) {
	f := &cli.Factory{IO: &cli.IOStreams{Getenv: func(string) string { return "" }}, Config: settings.New(pflag.NewFlagSet("", pflag.ContinueOnError), nil)}
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

// TestOneCommandTree checks that a run that names its command, which
// builds that command alone (newTree), behaves as with the whole tree:
// help, flag errors, missing arguments and a plain key, for every
// command; and that a config file is still vetted against every
// command's settings (post's retry is no unknown setting under key).
func TestOneCommandTree(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "idemkey"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "idemkey", "config.yaml"), []byte("retry: 2\nscheme: js\nnot-a-setting: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := func(k string) string {
		if k == "XDG_CONFIG_HOME" {
			return dir
		}
		return ""
	}
	run := func(whole bool, args []string) string {
		defer func(w bool) { wholeTree = w }(wholeTree)
		wholeTree = whole
		var out, errb bytes.Buffer
		code := Main(args, &cli.IOStreams{In: strings.NewReader(`{"b":1,"a":2}`), Out: &out, Err: &errb, Getenv: env})
		return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	root := NewRootCmd(&cli.Factory{IO: &cli.IOStreams{Getenv: env}, Config: settings.New(pflag.NewFlagSet("", pflag.ContinueOnError), nil)})
	var built []string
	for _, c := range root.Commands() {
		if c.Name() != "help" && c.Name() != "completion" {
			built = append(built, c.Name())
		}
	}
	var listed []string
	for _, c := range commands {
		listed = append(listed, c.name)
	}
	slices.Sort(built)
	if strings.Join(built, " ") != strings.Join(slices.Sorted(slices.Values(listed)), " ") {
		t.Fatalf("commands lists %q, the tree has %q", listed, built)
	}
	compared := 0
	for _, name := range listed {
		for _, args := range [][]string{{name, "--help"}, {name, "-h"}, {name, "--no-such-flag"}, {name}, {name, "--task", "t", "--tool", "x"}} {
			one, whole := run(false, args), run(true, args)
			if one != whole {
				t.Errorf("%q: with the one command:\n%s\nwith the whole tree:\n%s", args, one, whole)
			}
			compared++
		}
	}
	got := run(false, []string{"key", "--task", "t", "--tool", "x"})
	if strings.Contains(got, `"retry"`) || !strings.Contains(got, "not-a-setting") {
		t.Errorf("the config file was vetted against the wrong names:\n%s", got)
	}
	t.Logf("%d runs compared", compared)
}
