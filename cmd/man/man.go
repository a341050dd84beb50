// Package man is the face of 'idemkey man': manual pages in roff, one per
// command, generated from the command tree (its help texts, flags and
// examples), so that they never drift from --help.
package man

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Options are man's settings.
type Options struct {
	f   *cli.Factory
	Dir string
}

// NewCmd builds 'idemkey man': its options, its flags, and run; with
// runF, runF instead of run, once the options are read (a test's seam for
// the arguments).
func NewCmd(f *cli.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{f: f}
	return &cobra.Command{
		Use:   "man DIR",
		Short: "Write the manual pages, one per command, into DIR",
		Long: `Write a manual page in section 1 for idemkey and for each of its commands
into DIR (created if missing): idemkey.1, idemkey-key.1,
idemkey-ledger-show.1 and so on, from the same texts as --help. Existing
pages of those names are replaced. The names of the pages written are
printed, one a line.

Read one with man -l DIR/idemkey-run.1, or install them into a directory
on MANPATH, such as /usr/local/share/man/man1.`,
		Example: `  idemkey man ./man && man -l ./man/idemkey.1
  sudo idemkey man /usr/local/share/man/man1`,
		Args: cli.RangeArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Dir = args[0]; opts.Dir == "" {
				return cli.Usagef("DIR is empty")
			}
			if runF != nil {
				return runF(opts)
			}
			return run(opts)
		},
	}
}

// run writes the pages of the whole command tree into the directory.
func run(opts *Options) error {
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return &cli.InputError{Name: opts.Dir, Err: err}
	}
	var walk func(c *cobra.Command) error
	walk = func(c *cobra.Command) error {
		if !c.IsAvailableCommand() && c.HasParent() {
			return nil // help, hidden commands
		}
		name := pageName(c) + ".1"
		path := filepath.Join(opts.Dir, name)
		if err := os.WriteFile(path, Page(c), 0o644); err != nil {
			return &cli.InputError{Name: path, Err: err}
		}
		fmt.Fprintln(opts.f.IO.Out, path)
		for _, sub := range c.Commands() {
			if err := walk(sub); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(opts.f.WholeTree())
}

// pageName is a command's page name: its path with dashes (idemkey-ledger-show).
func pageName(c *cobra.Command) string { return strings.ReplaceAll(c.CommandPath(), " ", "-") }

// Page is the roff (man(7)) text of a command's manual page.
func Page(c *cobra.Command) []byte {
	var b bytes.Buffer
	name := pageName(c)
	fmt.Fprintf(&b, ".TH %q 1 \"\" \"idemkey\" \"idemkey manual\"\n", strings.ToUpper(name))
	b.WriteString(".SH NAME\n")
	fmt.Fprintf(&b, "%s \\- %s\n", escape(name), escape(c.Short))

	b.WriteString(".SH SYNOPSIS\n.nf\n")
	use := c.UseLine()
	if c.HasAvailableSubCommands() && !c.Runnable() {
		use = c.CommandPath() + " COMMAND"
	}
	for _, l := range strings.Split(use, "\n") {
		fmt.Fprintf(&b, "%s\n", escapeLine(strings.TrimSpace(l)))
	}
	b.WriteString(".fi\n")

	b.WriteString(".SH DESCRIPTION\n")
	long := c.Long
	if long == "" {
		long = c.Short
	}
	text(&b, long)

	if c.HasAvailableSubCommands() {
		b.WriteString(".SH COMMANDS\n")
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				fmt.Fprintf(&b, ".TP\n\\fB%s\\fR(1)\n%s\n", escape(pageName(sub)), escapeLine(sub.Short))
			}
		}
	}
	flags(&b, "OPTIONS", c.NonInheritedFlags())
	flags(&b, "OPTIONS INHERITED FROM PARENT COMMANDS", c.InheritedFlags())
	if c.Example != "" {
		b.WriteString(".SH EXAMPLES\n.nf\n")
		for _, l := range strings.Split(strings.TrimRight(c.Example, "\n"), "\n") {
			fmt.Fprintf(&b, "%s\n", escapeLine(l))
		}
		b.WriteString(".fi\n")
	}

	var see []string
	if c.HasParent() {
		see = append(see, fmt.Sprintf("\\fB%s\\fR(1)", escape(pageName(c.Parent()))))
	}
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			see = append(see, fmt.Sprintf("\\fB%s\\fR(1)", escape(pageName(sub))))
		}
	}
	if len(see) > 0 {
		fmt.Fprintf(&b, ".SH SEE ALSO\n%s\n", strings.Join(see, ", "))
	}
	return b.Bytes()
}

// text writes a help text: paragraphs filled, indented lines (examples,
// lists, JSON) kept as they are.
func text(b *bytes.Buffer, s string) {
	paras := strings.Split(strings.TrimSpace(s), "\n\n")
	for k, p := range paras {
		if k > 0 {
			b.WriteString(".PP\n")
		}
		lines := strings.Split(p, "\n")
		indented := false
		for _, l := range lines {
			if strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t") {
				indented = true
			}
		}
		if indented {
			b.WriteString(".nf\n")
		}
		for _, l := range lines {
			fmt.Fprintf(b, "%s\n", escapeLine(l))
		}
		if indented {
			b.WriteString(".fi\n")
		}
	}
}

// flags writes a section listing a flag set, in its own order.
func flags(b *bytes.Buffer, title string, fs *pflag.FlagSet) {
	var items []string
	fs.VisitAll(func(fl *pflag.Flag) {
		if fl.Hidden {
			return
		}
		head := "\\fB\\-\\-" + escape(fl.Name) + "\\fR"
		if fl.Shorthand != "" && fl.ShorthandDeprecated == "" {
			head = "\\fB\\-" + escape(fl.Shorthand) + "\\fR, " + head
		}
		varname, usage := pflag.UnquoteUsage(fl)
		if varname != "" {
			head += " \\fI" + escape(varname) + "\\fR"
		}
		if def := fl.DefValue; def != "" && def != "false" && def != "[]" && def != "0" && def != "0s" {
			usage += fmt.Sprintf(" (default %s)", def)
		}
		items = append(items, ".TP\n"+head+"\n"+escapeLine(usage)+"\n")
	})
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(b, ".SH %s\n", title)
	for _, it := range items {
		b.WriteString(it)
	}
}

// escape makes text safe inside a roff line: a backslash is \e, and a
// dash that is not a word's hyphen (--task, -v, a minus) is \-, so that
// options copy and search as typed.
func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b.WriteString(`\e`)
		case c == '-' && !(i > 0 && letter(s[i-1]) && i+1 < len(s) && letter(s[i+1])):
			b.WriteString(`\-`)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func letter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// escapeLine is escape for a whole line, which must not start with a
// control character (a period or an apostrophe) or be read as one.
func escapeLine(s string) string {
	s = escape(s)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}
