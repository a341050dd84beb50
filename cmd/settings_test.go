package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/settings"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// loadFor parses args for the named command of a fresh tree and runs the
// loader, as Main does before the command runs.
func loadFor(t *testing.T, env map[string]string, args ...string) (*cli.Factory, *cobra.Command, error) {
	t.Helper()
	ios := &cli.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{},
		Getenv: func(k string) string { return env[k] }}
	f := &cli.Factory{IO: ios, Config: settings.New(pflag.NewFlagSet("", pflag.ContinueOnError), ios.Getenv)}
	root := NewRootCmd(f)
	c, rest, err := root.Find(args)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ParseFlags(rest); err != nil {
		return f, c, err
	}
	return f, c, loadConfig(f, c)
}

// sample is a value of a flag's type, distinct from its default.
func sample(fl *pflag.Flag) (env string, file string, want string) {
	switch fl.Value.Type() {
	case "bool":
		v := "true"
		if fl.DefValue == "true" {
			v = "false"
		}
		return v, v, v
	case "int":
		return "7", "7", "7"
	case "float64":
		return "2.5", "2.5", "2.5"
	case "duration":
		return "1.5s", `"1.5s"`, "1.5s"
	case "stringArray", "stringSlice":
		return "/zz", "[/zz]", "/zz"
	}
	return "zz-value", `"zz-value"`, "zz-value"
}

// TestEverySettingResolvesThroughTheLoader: for every command and every
// setting it has, a value from IDEMKEY_* and one from the config file
// reach the command through f.Config, with their source named, and the
// flag still wins over both.
func TestEverySettingResolvesThroughTheLoader(t *testing.T) {
	f, _, _ := loadFor(t, nil, "version")
	root := NewRootCmd(f)
	n := 0
	for _, c := range root.Commands() {
		c.InitDefaultHelpFlag()
		c.Flags().AddFlagSet(root.PersistentFlags())
		c.Flags().VisitAll(func(fl *pflag.Flag) {
			if settings.IsCommandLineOnly(fl) || fl.Name == "help" || fl.Name == "config" || fl.Name == "color" {
				return
			}
			n++
			envV, fileV, want := sample(fl)
			name := c.Name() + " " + fl.Name
			if settings.HasRule(fl.Name) && fl.Value.Type() == "int" {
				envV, fileV, want = "7", "7", "7"
			}
			if v, ok := map[string]string{"format": "uuid", "from": "openai", "scheme": "jcs"}[fl.Name]; ok {
				envV, fileV, want = v, v, v
			}
			// The environment.
			env := map[string]string{settings.EnvName(fl.Name): envV}
			got, _, err := loadFor(t, env, c.Name())
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if g := strings.Join(got.Config.GetStringSlice(fl.Name), " "); g != want || got.Config.Source(fl.Name) != settings.EnvName(fl.Name) {
				t.Errorf("%s from the environment: got %q from %s, want %q", name, g, got.Config.Source(fl.Name), want)
			}
			// The config file.
			dir := t.TempDir()
			path := filepath.Join(dir, "c.yaml")
			if err := os.WriteFile(path, []byte(fl.Name+": "+fileV+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if fl.Name == "task" {
				return // refused in a file: see config.txtar
			}
			got, _, err = loadFor(t, nil, c.Name(), "--config", path)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if g := strings.Join(got.Config.GetStringSlice(fl.Name), " "); g != want || got.Config.Source(fl.Name) != path+":1: "+fl.Name {
				t.Errorf("%s from the file: got %q from %s, want %q", name, g, got.Config.Source(fl.Name), want)
			}
			// The flag comes first.
			if fl.Value.Type() == "string" {
				got, _, err = loadFor(t, env, c.Name(), "--config", path, "--"+fl.Name+"=flag-value")
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if g := got.Config.GetString(fl.Name); g != "flag-value" || got.Config.Source(fl.Name) != "--"+fl.Name {
					t.Errorf("%s: flag gave %q from %s", name, g, got.Config.Source(fl.Name))
				}
			}
		})
	}
	if n < 30 {
		t.Fatalf("only %d settings seen", n)
	}
}

func TestToolSection(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	os.WriteFile(path, []byte("prefix: top-\ntools:\n  deploy:\n    prefix: dep-\n    omit: [/trace_id]\n"), 0o644)
	f, _, err := loadFor(t, nil, "key", "--config", path)
	if err != nil {
		t.Fatal(err)
	}
	if g := f.Config.GetString("prefix"); g != "top-" {
		t.Errorf("top-level prefix %q", g)
	}
	d, err := f.Config.ForTool("deploy")
	if err != nil {
		t.Fatal(err)
	}
	if g, src := d.GetString("prefix"), d.Source("prefix"); g != "dep-" || src != path+":4: tools.deploy.prefix" {
		t.Errorf("deploy prefix %q from %s", g, src)
	}
	if g := d.GetStringSlice("omit"); len(g) != 1 || g[0] != "/trace_id" {
		t.Errorf("deploy omit %q", g)
	}
	if g := f.Config.GetString("tools.deploy.prefix"); g != "dep-" {
		t.Errorf("tools.deploy.prefix %q", g)
	}
	if g := f.Config.GetString("tools.other.prefix"); g != "" {
		t.Errorf("tools.other.prefix %q", g)
	}
	o, _ := f.Config.ForTool("other")
	if g := o.GetString("prefix"); g != "top-" {
		t.Errorf("other tool prefix %q", g)
	}
	// The environment still comes before the tool's section.
	f, _, _ = loadFor(t, map[string]string{"IDEMKEY_PREFIX": "env-"}, "key", "--config", path)
	d, _ = f.Config.ForTool("deploy")
	if g := d.GetString("prefix"); g != "env-" {
		t.Errorf("env prefix %q", g)
	}
	// A bad value in a tool's section names it.
	os.WriteFile(path, []byte("tools:\n  deploy:\n    max-len: many\n"), 0o644)
	if _, _, err := loadFor(t, nil, "key", "--config", path); err == nil || !strings.Contains(err.Error(), "tools.deploy.max-len") {
		t.Errorf("bad tool value: %v", err)
	}
}

// TestWriteErrorIsReported: a failed write on standard output makes Main
// exit 2, for a command that ignores the error itself (cobra's help).
func TestWriteErrorIsReported(t *testing.T) {
	var errb bytes.Buffer
	code := Main([]string{"--help"}, &cli.IOStreams{In: strings.NewReader(""), Out: cli.ClosedWriter{}, Err: &errb})
	if code != cli.ExitUsage || !strings.Contains(errb.String(), "standard output is closed") {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
}
