// Package cmd implements the idemkey command line.
package cmd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/fatih/color"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Run runs idemkey with the process's arguments and streams and returns
// the exit code.
func Run() int { return Main(os.Args[1:], System()) }

// Main runs idemkey with args and streams and returns the exit code. It is
// the single place where errors become exit codes and diagnostics, and
// where a failed write on standard output is noticed, whichever command
// wrote.
func Main(args []string, ios *IOStreams) int {
	if ios.Getenv == nil {
		ios.Getenv = os.Getenv
	}
	out := watchWrites(ios.Out)
	ios.Out = out
	f := &Factory{IO: ios, Config: &Settings{fs: pflag.NewFlagSet("", pflag.ContinueOnError), getenv: ios.Getenv}}
	only := ""
	if len(args) > 0 && !wholeTree {
		only = args[0] // a command's name, if it is one (see newTree)
	}
	root := newTree(f, only)
	root.SetArgs(hoistCommand(root, args))
	root.SetIn(ios.In)
	root.SetOut(ios.Out)
	root.SetErr(ios.Err)
	err := root.Execute()
	if r := repeatedFlag(err); r != nil {
		// Whichever flag error function the command has, a repeated flag
		// is said one way (with the command's exit code for usage errors).
		err = r
	}
	if werr := out.Err(); werr != nil {
		var ec exitCoder
		var ne *ExitError
		if err == nil || !errors.As(err, &ec) || errors.As(err, &ne) {
			// The result did not reach its reader: that outweighs a
			// negative answer, whose report was lost with it.
			err = &OutputError{Err: werr}
		}
	}
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
	msg, hint := err.Error(), ""
	// cobra's suggestions ("\n\nDid you mean this?\n\tkey\n") go on a
	// hint line of their own.
	if i := strings.Index(msg, "\n\nDid you mean this?\n"); i >= 0 {
		var sugg []string
		for _, s := range strings.Fields(msg[i+len("\n\nDid you mean this?\n"):]) {
			sugg = append(sugg, "'idemkey "+s+"'")
		}
		msg, hint = msg[:i], "did you mean "+orList(sugg)+"?"
	}
	fmt.Fprintf(ios.Err, "%s %s\n", red.Sprint("idemkey: error:"), diagLine(msg))
	var h hinter
	switch {
	case hint != "":
	case errors.As(err, &h) && h.Hint() != "":
		hint = h.Hint()
	case strings.HasPrefix(msg, "unknown command") || strings.HasPrefix(msg, "unknown flag") || strings.HasPrefix(msg, "unknown shorthand flag"):
		hint = "run 'idemkey --help' for usage"
	}
	if hint != "" {
		fmt.Fprintf(ios.Err, "hint: %s\n", diagLine(hint))
	}
}

func oneLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return strings.ReplaceAll(s, "\n", " ")
}

// diagLine is a diagnostic as it goes to standard error: on one line,
// with whatever could move the cursor, recolour or retitle a terminal, or
// forge a line in a log escaped (see escapeControls). Member names in
// pointers, server reason phrases and file contents reach diagnostics,
// and none of them is trusted.
func diagLine(s string) string { return escapeControls(oneLine(s)) }

// Factory carries what every command needs: the streams and the
// settings of the running command (see Settings).
type Factory struct {
	IO     *IOStreams
	Config *Settings

	partial bool // the command tree holds only the command that runs (see newTree)
}

func (f *Factory) colorMode() string {
	if m := f.Config.GetString("color"); m != "" {
		return m
	}
	return "auto"
}

func init() {
	// The root's PersistentPreRunE loads the settings even under a command
	// that has a persistent hook of its own.
	cobra.EnableTraverseRunHooks = true
}

// commands builds idemkey's commands, in the order help lists them.
var commands = []struct {
	name  string
	build func(*Factory) *cobra.Command
}{
	{"key", newKeyCmd},
	{"canon", newCanonCmd},
	{"check", newCheckCmd},
	{"version", newVersionCmd},
	{"diff", newDiffCmd},
	{"drift", newDriftCmd},
	{"post", newPostCmd},
	{"vectors", newVectorsCmd},
	{"conform", newConformCmd},
	{"run", newRunCmd},
	{"ledger", newLedgerCmd},
	{"probe", newProbeCmd},
	{"mcp", newMCPCmd},
}

// wholeTree makes Main build every command whatever it runs (tests
// compare the two).
var wholeTree = false

// NewRootCmd builds the command tree.
func NewRootCmd(f *Factory) *cobra.Command { return newTree(f, "") }

// newTree builds the root and, when only names one of idemkey's commands,
// that command alone, and otherwise all of them. A run that starts with
// its command's name (idemkey key …) needs no other: building them all
// took about a tenth of a millisecond of every small call. Help,
// completion, suggestions for a mistyped command and flags before the
// command get the whole tree; so does the vetting of a config file, which
// knows every command's settings (see Factory.settingNames).
func newTree(f *Factory, only string) *cobra.Command {
	known := false
	for _, c := range commands {
		known = known || c.name == only
	}
	if !known {
		only = ""
	}
	f.partial = only != ""
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
			return ownUsageCode(cmd, f.loadConfig(cmd))
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.Config.GetBool("version") {
				return printVersion(f.IO.Out)
			}
			return cmd.Help()
		},
	}
	// cobra's completion commands take their output stream when they are
	// made (in finishTree): without this they write to os.Stdout, past
	// the stream whose errors Main reports.
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.Err)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &UsageError{Err: err, hint: fmt.Sprintf("run '%s --help' for usage", c.CommandPath())}
	})
	pf := root.PersistentFlags()
	pf.String("color", "auto", "colour output: auto, always or never (NO_COLOR is honoured)")
	pf.String("config", "", "config file (default $XDG_CONFIG_HOME/idemkey/config.{yaml,toml,json}; IDEMKEY_CONFIG)")
	root.Flags().Bool("version", false, "print idemkey's version")

	for _, c := range commands {
		if only == "" || c.name == only {
			root.AddCommand(c.build(f))
		}
	}
	finishTree(root, f.partial)
	return root
}

// settingNames is settingNames of the whole tree, also when the running
// one holds only the command that runs.
func (f *Factory) settingNames(root *cobra.Command) map[string]bool {
	if f.partial {
		root = NewRootCmd(&Factory{IO: f.IO, Config: f.Config})
	}
	return settingNames(root)
}

// loadConfig resolves the running command's settings (see Settings): the
// config file is found and parsed, vetted against the settings the
// commands know, and every flag's value is resolved and type-checked.
func (f *Factory) loadConfig(cmd *cobra.Command) error {
	s := &Settings{fs: cmd.Flags(), getenv: f.IO.Getenv}
	f.Config = s
	// --color first, so that the errors below are painted as asked.
	if err := s.resolve(); err != nil {
		// An IDEMKEY_* value that does not fit its type: report it, but
		// with the file's values not yet known.
		return err
	}
	if _, err := s.Choice("color", "auto", "always", "never"); err != nil {
		return err
	}
	path := s.GetString("config")
	if !s.IsSet("config") {
		path = f.IO.Getenv("IDEMKEY_CONFIG")
	}
	if path == "" {
		path = defaultConfigPath(f.IO.Getenv)
	}
	if path == "" || (!s.IsSet("config") && ignoresConfig(cmd)) {
		return nil
	}
	file, err := readConfigFile(path)
	if err != nil {
		return err
	}
	warn := func(msg string) { fmt.Fprintf(f.IO.Err, "idemkey: warning: %s\n", diagLine(msg)) }
	if err := file.vet(f.settingNames(cmd.Root()), warn); err != nil {
		return err
	}
	s.file = file
	if err := s.resolve(); err != nil {
		return err
	}
	// Each tool's section is checked now, not when a command asks for it.
	for _, tool := range file.toolNames() {
		if _, err := s.ForTool(tool); err != nil {
			return err
		}
	}
	_, err = s.Choice("color", "auto", "always", "never")
	return err
}

// ignoresConfig says whether a command reads no setting from the config
// file, so that a broken file does not stop help, version or completion.
func ignoresConfig(cmd *cobra.Command) bool {
	for c := cmd; c != nil; c = c.Parent() {
		switch c.Name() {
		case "help", "version", "completion", cobra.ShellCompRequestCmd, cobra.ShellCompNoDescRequestCmd:
			return true
		}
	}
	return false
}

// defaultConfigPath returns $XDG_CONFIG_HOME/idemkey/config.{yaml,yml,toml,json}
// (~/.config when XDG_CONFIG_HOME is unset), the first that exists, or "".
func defaultConfigPath(getenv func(string) string) string {
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		if home := getenv("HOME"); home != "" {
			dir = filepath.Join(home, ".config")
		}
	}
	if dir == "" {
		return ""
	}
	for _, ext := range []string{"yaml", "yml", "toml", "json"} {
		p := filepath.Join(dir, "idemkey", "config."+ext)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
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
		return &UsageError{Err: err, hint: fmt.Sprintf("run '%s --help' for usage", cmd.CommandPath())}
	}
}

// changed reports whether a flag was given on the command line.
func changed(fs *pflag.FlagSet, name string) bool {
	fl := fs.Lookup(name)
	return fl != nil && fl.Changed
}

// finishTree applies to every command of the tree, present and future,
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
func finishTree(root *cobra.Command, partial bool) {
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
	commandLineOnly(root.Flags(), "version")
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Name() == "post" {
			// What is sent, where, how securely, and where the output goes.
			commandLineOnly(c.Flags(), "data", "data-binary", "data-raw", "json", "header", "output",
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
	if _, list := fl.Value.(pflag.SliceValue); list || isListType(fl.Value.Type()) || fl.Value.Type() == "count" {
		return
	}
	fl.Value = &onceValue{Value: fl.Value}
}

// repeatedRE is compiled on first use: most runs have no error to match.
var repeatedRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^invalid argument ("(?:[^"\\]|\\.)*") for "(?:-., )?(--[^"]+)" flag: ` + repeatedText + ` \(first ("(?:[^"\\]|\\.)*")\)$`)
})

// repeatedFlag rewrites pflag's message for a repeated flag, keeping the
// exit code err had, or returns nil for another error.
func repeatedFlag(err error) error {
	if err == nil {
		return nil
	}
	m := repeatedRE().FindStringSubmatch(err.Error())
	if m == nil {
		return nil
	}
	// Both values are quoted already (pflag's %q and onceValue's).
	ue := &UsageError{Err: fmt.Errorf("%s %s: %s, then %s", m[2], repeatedText, m[3], m[1]),
		hint: m[2] + " takes one value; give it once"}
	if code := exitCode(err); code != exitUsage {
		return &codedError{ue, code}
	}
	return ue
}

// codedError is a usage error under a command whose usage errors exit
// with another code (run: 125, as env does).
type codedError struct {
	*UsageError
	code int
}

func (e *codedError) ExitCode() int { return e.code }

// usageCodeAnnotation holds the exit code of a command whose usage errors
// exit with another code (run: 125, as env does).
const usageCodeAnnotation = "idemkey-usage-code"

// ownUsageCode gives a usage or input error the exit code that cmd has for
// them (see usageCodeAnnotation).
func ownUsageCode(cmd *cobra.Command, err error) error {
	if err == nil || exitCode(err) != exitUsage {
		return err
	}
	if n, cerr := strconv.Atoi(cmd.Annotations[usageCodeAnnotation]); cerr == nil {
		return &codeError{Code: n, Err: err}
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
					hint: fmt.Sprintf("run '%s --help' for its commands", target.CommandPath())}
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
			return &UsageError{Err: fmt.Errorf("unknown shell %q", args[0]), hint: "want " + orList(shells)}
		}
		return c.Help()
	}
}

// valueChoices are the values shell completion offers for flags of these
// names. They are offered only where the flag's own help names every one
// of them, so that another command's flag of the same name with another
// meaning is left alone.
var valueChoices = map[string][]string{
	"from":    fromNames,
	"scheme":  {"js", "jcs"},
	"format":  formatNames,
	"color":   {"auto", "always", "never"},
	"request": {"POST", "PUT", "PATCH"},
}

func registerValueCompletion(c *cobra.Command, fl *pflag.Flag) {
	if fl.Name == "config" {
		_ = c.RegisterFlagCompletionFunc(fl.Name, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return []string{"yaml", "yml", "toml", "json"}, cobra.ShellCompDirectiveFilterFileExt
		})
		return
	}
	choices, ok := valueChoices[fl.Name]
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

// hoistCommand moves flags written before the subcommand after it
// (`idemkey -v post URL` is `idemkey post -v URL`), where the subcommand
// parses them: a flag it does not know is reported by it as unknown.
func hoistCommand(root *cobra.Command, args []string) []string {
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
