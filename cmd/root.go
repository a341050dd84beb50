// Package cmd implements the idemkey command line.
package cmd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/fatih/color"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// version is set at build time with -ldflags "-X …/cmd.version=v1.2.3";
// otherwise the module version from the build info is used.
var version = ""

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// Run runs idemkey with the process's arguments and streams and returns
// the exit code.
func Run() int { return Main(os.Args[1:], System()) }

// Main runs idemkey with args and streams and returns the exit code. It is
// the single place where errors become exit codes and diagnostics.
func Main(args []string, ios *IOStreams) int {
	if ios.Getenv == nil {
		ios.Getenv = os.Getenv
	}
	f := &Factory{IO: ios, Config: viper.New()}
	root := NewRootCmd(f)
	root.SetArgs(args)
	root.SetIn(ios.In)
	root.SetOut(ios.Out)
	root.SetErr(ios.Err)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var ee *ExitError
	if !errors.As(err, &ee) {
		f.printError(err)
	}
	return exitCode(err)
}

// printError writes one diagnostic line, and a hint line where the error
// has one, to standard error.
func (f *Factory) printError(err error) {
	ios := f.IO
	red := ios.paint(f.colorMode(), ios.Err, color.FgRed, color.Bold)
	fmt.Fprintf(ios.Err, "%s %s\n", red.Sprint("idemkey: error:"), oneLine(err.Error()))
	var h hinter
	if errors.As(err, &h) && h.Hint() != "" {
		fmt.Fprintf(ios.Err, "hint: %s\n", h.Hint())
	} else if strings.HasPrefix(err.Error(), "unknown command") || strings.HasPrefix(err.Error(), "unknown flag") {
		fmt.Fprintf(ios.Err, "hint: run 'idemkey --help' for usage\n")
	}
}

func oneLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return strings.ReplaceAll(s, "\n", " ")
}

// Factory carries what every command needs: the streams and the
// configuration (a viper owned by this invocation, never the global one).
type Factory struct {
	IO     *IOStreams
	Config *viper.Viper
}

func (f *Factory) colorMode() string {
	if m := f.Config.GetString("color"); m != "" {
		return m
	}
	return "auto"
}

// NewRootCmd builds the command tree.
func NewRootCmd(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "idemkey",
		Short: "Derive idempotency keys for AI-agent tool calls",
		Long: `idemkey derives idempotency keys for AI-agent tool calls:
sha256 of the canonical JSON of [taskId, toolName, args], byte for byte the
key the reference harness computes, so that a retried step or a replay after
a crash carries the same key to the system that owns the side effect.

Exit codes: 0 success, 1 a negative answer (keys differ, not canonical,
mismatch), 2 usage or input error; post uses curl's codes for transfer
failures.`,
		Version:           versionString(),
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: false},
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return f.loadConfig(cmd)
		},
	}
	root.SetVersionTemplate("idemkey version {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &UsageError{Err: err, hint: "run 'idemkey --help' for usage"}
	})
	pf := root.PersistentFlags()
	pf.String("color", "auto", "colour output: auto, always or never (NO_COLOR is honoured)")
	pf.String("config", "", "config file (default $XDG_CONFIG_HOME/idemkey/config.{yaml,toml,json}; IDEMKEY_CONFIG)")

	root.AddCommand(
		newKeyCmd(f),
		newCanonCmd(f),
		newCheckCmd(f),
		newVersionCmd(f),
		newDiffCmd(f),
		newDriftCmd(f),
		newPostCmd(f),
	)
	return root
}

// loadConfig binds the running command's flags to the configuration, so
// that every setting resolves as: flag, then IDEMKEY_* environment, then
// config file, then the flag's default.
func (f *Factory) loadConfig(cmd *cobra.Command) error {
	v := f.Config
	v.SetEnvPrefix("IDEMKEY")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	if err := v.BindPFlags(cmd.Flags()); err != nil {
		return err
	}
	if m := v.GetString("color"); m != "auto" && m != "always" && m != "never" {
		return usageErrorf("invalid --color %q (want auto, always or never)", m)
	}
	path := v.GetString("config")
	explicit := path != ""
	if !explicit {
		dir := f.IO.Getenv("XDG_CONFIG_HOME")
		if dir == "" {
			if home := f.IO.Getenv("HOME"); home != "" {
				dir = filepath.Join(home, ".config")
			}
		}
		if dir == "" {
			return nil
		}
		for _, ext := range []string{"yaml", "yml", "toml", "json"} {
			p := filepath.Join(dir, "idemkey", "config."+ext)
			if _, err := os.Stat(p); err == nil {
				path = p
				break
			}
		}
		if path == "" {
			return nil
		}
	}
	v.SetConfigFile(path)
	if err := v.ReadInConfig(); err != nil {
		return &InputError{Name: path, Err: fmt.Errorf("cannot read config: %s", configErr(err))}
	}
	return nil
}

func configErr(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// rangeArgs checks the number of positional arguments, as a usage error.
func rangeArgs(min, max int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		var err error
		switch {
		case len(args) > max && max == 0:
			err = fmt.Errorf("unexpected argument %q", args[0])
		case len(args) > max:
			err = fmt.Errorf("too many arguments: want at most %d, got %d", max, len(args))
		case len(args) < min:
			err = fmt.Errorf("missing argument: usage: %s", cmd.UseLine())
		default:
			return nil
		}
		return &UsageError{Err: err, hint: fmt.Sprintf("run 'idemkey %s --help' for usage", cmd.Name())}
	}
}

// changed reports whether a flag was given on the command line.
func changed(fs *pflag.FlagSet, name string) bool {
	fl := fs.Lookup(name)
	return fl != nil && fl.Changed
}
