// Package cmd is idemkey's command line: the list of its commands, each a
// face in its own package (cmd/key, cmd/canon, …) over a library (derive/…),
// and Main, the one place where an error becomes an exit code and a
// diagnostic. What the faces share lives in cmd/internal.
package cmd

import (
	"errors"
	"fmt"
	"os"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/settings"
	"github.com/idemkey/idemkey/cmd/version"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Run runs idemkey with the process's arguments and streams and returns
// the exit code.
func Run() int { return Main(os.Args[1:], cli.System()) }

// Main runs idemkey with args and streams and returns the exit code. It is
// the single place where errors become exit codes and diagnostics, and
// where a failed write on standard output is noticed, whichever command
// wrote.
func Main(args []string, ios *cli.IOStreams) int { return MainWith(args, ios, "", nil) }

// MainWith is Main with the command called name built by build instead of
// its own NewCmd: a face's test builds it with its runF seam, to see the
// options its flags, variables and config file give, under the root that
// loads them, without running it.
func MainWith(args []string, ios *cli.IOStreams, name string, build func(*cli.Factory) *cobra.Command) int {
	if ios.Getenv == nil {
		ios.Getenv = os.Getenv
	}
	out := cli.WatchWrites(ios.Out)
	ios.Out = out
	f := &cli.Factory{IO: ios, Config: settings.New(pflag.NewFlagSet("", pflag.ContinueOnError), ios.Getenv)}
	only := ""
	if len(args) > 0 && !wholeTree {
		only = args[0] // a command's name, if it is one (see newTree)
	}
	root := newTree(f, only, name, build)
	root.SetArgs(cli.HoistCommand(root, args))
	root.SetIn(ios.In)
	root.SetOut(ios.Out)
	root.SetErr(ios.Err)
	ran, err := root.ExecuteC()
	cli.SuggestFlag(ran, err)
	if r := cli.RepeatedFlag(err); r != nil {
		// Whichever flag error function the command has, a repeated flag
		// is said one way (with the command's exit code for usage errors).
		err = r
	}
	if werr := out.Err(); werr != nil {
		var ec cli.ExitCoder
		var ne *cli.ExitError
		if err == nil || !errors.As(err, &ec) || errors.As(err, &ne) {
			// The result did not reach its reader: that outweighs a
			// negative answer, whose report was lost with it.
			err = &cli.OutputError{Err: werr}
		}
	}
	if err == nil {
		return cli.ExitOK
	}
	var ee *cli.ExitError
	if !errors.As(err, &ee) {
		f.PrintError(err)
	}
	return cli.ExitCode(err)
}

func init() {
	// The root's PersistentPreRunE loads the settings even under a command
	// that has a persistent hook of its own.
	cobra.EnableTraverseRunHooks = true
}

// wholeTree makes Main build every command whatever it runs (tests
// compare the two).
var wholeTree = false

// NewRootCmd builds the command tree.
func NewRootCmd(f *cli.Factory) *cobra.Command { return newTree(f, "", "", nil) }

// newTree builds the root and, when only names one of idemkey's commands,
// that command alone, and otherwise all of them. A run that starts with
// its command's name (idemkey key …) needs no other: building them all
// took about a tenth of a millisecond of every small call. Help,
// completion, suggestions for a mistyped command and flags before the
// command get the whole tree; so does the vetting of a config file, which
// knows every command's settings (see settingNames). The command called
// name, if any, is build's (MainWith).
func newTree(f *cli.Factory, only, name string, build func(*cli.Factory) *cobra.Command) *cobra.Command {
	known := false
	for _, c := range commands {
		known = known || c.name == only
	}
	if !known {
		only = ""
	}
	f.Partial = only != ""
	f.SettingNames = func(root *cobra.Command) map[string]settings.Scope { return settingNames(f, root) }
	root := &cobra.Command{
		Use:   "idemkey",
		Short: "Derive idempotency keys for AI-agent tool calls",
		Long: `idemkey derives idempotency keys for AI-agent tool calls:
sha256 of the canonical JSON of [taskId, toolName, args], byte for byte the
key the reference harness computes, so that a retried step or a replay after
a crash carries the same key to the system that owns the side effect.

Exit codes: 0 success, 1 a negative answer (keys differ, not canonical,
mismatch, a probe rule failed), 2 usage or input error. post uses curl's
codes for transfer failures. run exits with its command's code, or 75 in
progress elsewhere, 76 outcome unknown, 125 idemkey failed, 126 cannot
execute, 127 not found (as timeout and env do).`,
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: false},
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return cli.OwnUsageCode(cmd, loadConfig(f, cmd))
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.Config.GetBool("version") {
				return version.Print(f.IO.Out)
			}
			return cmd.Help()
		},
	}
	// cobra's completion commands take their output stream when they are
	// made (in FinishTree): without this they write to os.Stdout, past
	// the stream whose errors Main reports.
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.Err)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &cli.UsageError{Err: err, HintText: fmt.Sprintf("run '%s --help' for usage", c.CommandPath())}
	})
	pf := root.PersistentFlags()
	pf.String("color", "auto", "colour output: auto, always or never (NO_COLOR is honoured)")
	pf.String("config", "", "config file (default $XDG_CONFIG_HOME/idemkey/config.{yaml,toml,json}; IDEMKEY_CONFIG)")
	root.Flags().Bool("version", false, "print idemkey's version")

	for _, c := range commands {
		switch {
		case only != "" && c.name != only:
		case build != nil && c.name == name:
			root.AddCommand(build(f))
		default:
			root.AddCommand(c.build(f))
		}
	}
	cli.FinishTree(root, f.Partial)
	f.WholeTree = func() *cobra.Command {
		if f.Partial {
			return NewRootCmd(&cli.Factory{IO: f.IO, Config: f.Config})
		}
		return root
	}
	return root
}

// settingNames are the settings of the whole tree (settings.Names), also
// when the running one holds only the command that runs.
func settingNames(f *cli.Factory, root *cobra.Command) map[string]settings.Scope {
	if f.Partial {
		root = NewRootCmd(&cli.Factory{IO: f.IO, Config: f.Config})
	}
	return settings.Names(root)
}

// loadConfig resolves the running command's settings (settings.Load).
func loadConfig(f *cli.Factory, cmd *cobra.Command) error {
	warn := func(msg string) { fmt.Fprintf(f.IO.Err, "idemkey: warning: %s\n", cli.DiagLine(msg)) }
	var err error
	names := func() map[string]settings.Scope { return f.SettingNames(cmd.Root()) }
	f.Config, err = settings.Load(cmd, f.IO.Getenv, names, warn)
	return err
}
