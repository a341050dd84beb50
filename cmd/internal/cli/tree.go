package cli

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/idemkey/idemkey/cmd/internal/settings"
	"github.com/idemkey/idemkey/derive"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// RangeArgs checks the number of positional arguments, as a usage error.
func RangeArgs(min, max int) cobra.PositionalArgs {
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
		return &UsageError{Err: err, HintText: fmt.Sprintf("run '%s --help' for usage", cmd.CommandPath())}
	}
}

// Changed reports whether a flag was given on the command line.
func Changed(fs *pflag.FlagSet, name string) bool {
	fl := fs.Lookup(name)
	return fl != nil && fl.Changed
}

// FinishTree applies to every command of the tree, present and future,
// what no command should have to remember: help and completion commands
// that refuse an unknown argument, single-valued flags that refuse to be
// given twice, completion of flag values, and post's command-line-only
// flags.
//
// A partial tree (one named command runs) gets no completion machinery:
// cobra's completion command and the flags' value completions serve
// `completion` and `__complete`, which are not idemkey's named commands
// and so always get the whole tree. Building them cost the small `key`
// call 6% of its instructions (callgrind).
func FinishTree(root *cobra.Command, partial bool) {
	root.SetHelpCommand(newHelpCmd(root))
	if partial {
		root.CompletionOptions.DisableDefaultCmd = true
	} else {
		root.InitDefaultCompletionCmd()
	}
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			fixCompletionCmd(c)
		}
	}
	settings.CommandLineOnly(root.Flags(), "version")
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Name() == "post" {
			// What is sent, where, how securely, and where the output goes.
			settings.CommandLineOnly(c.Flags(), "data", "data-binary", "data-raw", "json", "header", "output",
				"user", "request", "insecure", "include", "silent", "show-error", "verbose", "fail",
				"fail-with-body", "dry-run", "send-as-is", "lossy", "location", "cert", "key", "user-agent",
				"dump-header", "write-out", "retry-all-errors")
		}
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			fs.VisitAll(func(fl *pflag.Flag) {
				onceOnly(fl)
				if !partial {
					registerValueCompletion(c, fl)
				}
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// onceValue wraps a single-valued flag so that giving it a second time
// with another value is a usage error (pflag would keep the last silently:
// --task a --task b). The same value again (--lease 1s --lease 1s, -v -v)
// leaves nothing to choose between and is allowed.
type onceValue struct {
	pflag.Value
	first string
	set   bool
}

const repeatedText = "given more than once"

func (o *onceValue) Set(s string) error {
	if o.set {
		if s == o.first {
			return nil
		}
		if o.IsBoolFlag() {
			a, errA := strconv.ParseBool(o.first)
			b, errB := strconv.ParseBool(s)
			if errA == nil && errB == nil && a == b {
				return nil
			}
		}
		return fmt.Errorf("%s (first %q)", repeatedText, o.first)
	}
	o.set, o.first = true, s
	if t := o.Value.Type(); t == "int" || t == "int64" || t == "int32" {
		// pflag reads a number flag as Go source does (base 0): 010 is 8,
		// 0x40 is 64, 1_000 is 1000, while IDEMKEY_* and the config file
		// read whole numbers as written, in decimal. A flag does too.
		n, err := strconv.ParseInt(s, 10, 64)
		if errors.Is(err, strconv.ErrRange) {
			return errors.New("want a smaller whole number")
		} else if err != nil {
			return errors.New("want a whole number, in decimal digits")
		}
		s = strconv.FormatInt(n, 10)
	}
	return o.Value.Set(s)
}

// IsBoolFlag keeps a wrapped boolean flag usable without a value.
func (o *onceValue) IsBoolFlag() bool {
	b, ok := o.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

func onceOnly(fl *pflag.Flag) {
	if _, done := fl.Value.(*onceValue); done || fl.Name == "help" {
		return
	}
	if _, list := fl.Value.(pflag.SliceValue); list || settings.IsListType(fl.Value.Type()) || fl.Value.Type() == "count" {
		return
	}
	fl.Value = &onceValue{Value: fl.Value}
}

// repeatedRE is compiled on first use: most runs have no error to match.
var repeatedRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^invalid argument ("(?:[^"\\]|\\.)*") for "(?:-., )?(--[^"]+)" flag: ` + repeatedText + ` \(first ("(?:[^"\\]|\\.)*")\)$`)
})

// RepeatedFlag rewrites pflag's message for a repeated flag, keeping the
// exit code err had, or returns nil for another error.
func RepeatedFlag(err error) error {
	if err == nil {
		return nil
	}
	m := repeatedRE().FindStringSubmatch(err.Error())
	if m == nil {
		return nil
	}
	// Both values are quoted already (pflag's %q and onceValue's).
	ue := &UsageError{Err: fmt.Errorf("%s %s: %s, then %s", m[2], repeatedText, m[3], m[1]),
		HintText: m[2] + " takes one value; give it once"}
	if code := ExitCode(err); code != ExitUsage {
		return &CodeError{Code: code, Err: ue}
	}
	return ue
}

// UsageCodeAnnotation holds the exit code of a command whose usage errors
// exit with another code (run: 125, as env does).
const UsageCodeAnnotation = "idemkey-usage-code"

// OwnUsageCode gives a usage or input error the exit code that cmd has for
// them (see UsageCodeAnnotation).
func OwnUsageCode(cmd *cobra.Command, err error) error {
	if err == nil || ExitCode(err) != ExitUsage {
		return err
	}
	if n, cerr := strconv.Atoi(cmd.Annotations[UsageCodeAnnotation]); cerr == nil {
		return &CodeError{Code: n, Err: err}
	}
	return err
}

// newHelpCmd replaces cobra's help command, which prints the root's help
// and exits 0 for an unknown topic.
func newHelpCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Args:  cobra.ArbitraryArgs,
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			target, _, err := root.Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []string
			for _, c := range target.Commands() {
				if c.IsAvailableCommand() {
					names = append(names, c.Name())
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			target, rest, err := root.Find(args)
			if err != nil {
				return &UsageError{Err: err}
			}
			if len(rest) > 0 {
				return &UsageError{Err: fmt.Errorf("unknown command %q for %q", rest[0], target.CommandPath()),
					HintText: fmt.Sprintf("run '%s --help' for its commands", target.CommandPath())}
			}
			target.InitDefaultHelpFlag()
			return target.Help()
		},
	}
}

// fixCompletionCmd makes `completion SHELL` refuse a shell it does not
// know (cobra prints the help and exits 0).
func fixCompletionCmd(c *cobra.Command) {
	var shells []string
	for _, s := range c.Commands() {
		shells = append(shells, s.Name())
	}
	c.Args = cobra.ArbitraryArgs
	c.Long += "\n\nBash needs the bash-completion package (bash-completion on Debian,\nUbuntu and Homebrew) for the completion script to load."
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) > 0 {
			return &UsageError{Err: fmt.Errorf("unknown shell %q", args[0]), HintText: "want " + settings.OrList(shells)}
		}
		return c.Help()
	}
}

// valueChoices are the values shell completion offers for a flag of that
// name. They are offered only where the flag's own help names every one
// of them, so that another command's flag of the same name with another
// meaning is left alone. (A switch, not a map: nothing is built at start-up
// for the runs that complete nothing.)
func valueChoices(name string) ([]string, bool) {
	switch name {
	case "from":
		return derive.FromNames, true
	case "scheme":
		return []string{"js", "jcs"}, true
	case "format":
		return derive.FormatNames, true
	case "color":
		return []string{"auto", "always", "never"}, true
	case "request":
		return []string{"POST", "PUT", "PATCH"}, true
	}
	return nil, false
}

func registerValueCompletion(c *cobra.Command, fl *pflag.Flag) {
	if fl.Name == "config" {
		_ = c.RegisterFlagCompletionFunc(fl.Name, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return []string{"yaml", "yml", "toml", "json"}, cobra.ShellCompDirectiveFilterFileExt
		})
		return
	}
	choices, ok := valueChoices(fl.Name)
	if !ok {
		return
	}
	for _, v := range choices {
		if !strings.Contains(fl.Usage, v) {
			return
		}
	}
	// An error means the command registered its own: it is kept.
	_ = c.RegisterFlagCompletionFunc(fl.Name, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return choices, cobra.ShellCompDirectiveNoFileComp
	})
}

// HoistCommand moves flags written before the subcommand after it
// (`idemkey -v post URL` is `idemkey post -v URL`), where the subcommand
// parses them: a flag it does not know is reported by it as unknown.
func HoistCommand(root *cobra.Command, args []string) []string {
	if len(args) == 0 || !strings.HasPrefix(args[0], "-") {
		return args
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return args
		}
		if strings.HasPrefix(a, "-") && a != "-" {
			continue
		}
		sub := subcommand(root, a)
		if sub == nil {
			continue // perhaps a flag's value
		}
		if !flagsFit(root, sub, args[:i]) {
			continue
		}
		out := append([]string{a}, args[:i]...)
		return append(out, args[i+1:]...)
	}
	return args
}

func subcommand(root *cobra.Command, name string) *cobra.Command {
	for _, c := range root.Commands() {
		if c.Name() == name || c.HasAlias(name) {
			return c
		}
	}
	return nil
}

// flagsFit reports whether toks are flags with their values, exactly, as
// sub (or the root's persistent flags) reads them; a flag neither knows is
// taken to have no value.
func flagsFit(root, sub *cobra.Command, toks []string) bool {
	lookup := func(name string, short bool) *pflag.Flag {
		for _, fs := range []*pflag.FlagSet{sub.Flags(), sub.PersistentFlags(), root.PersistentFlags()} {
			var fl *pflag.Flag
			if short {
				fl = fs.ShorthandLookup(name)
			} else {
				fl = fs.Lookup(name)
			}
			if fl != nil {
				return fl
			}
		}
		return nil
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		var fl *pflag.Flag
		attached := false
		switch {
		case strings.HasPrefix(t, "--"):
			name, _, eq := strings.Cut(t[2:], "=")
			fl, attached = lookup(name, false), eq
		case strings.HasPrefix(t, "-") && len(t) >= 2:
			fl, attached = lookup(t[1:2], true), len(t) > 2
		default:
			return false
		}
		if fl == nil {
			continue
		}
		if fl.NoOptDefVal == "" && !attached {
			i++ // its value
			if i >= len(toks) {
				return false
			}
		}
	}
	return true
}

// CompleteValues makes shell completion offer values for a flag of c.
func CompleteValues(c *cobra.Command, flag string, values ...string) {
	_ = c.RegisterFlagCompletionFunc(flag, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	})
}
