// Package cli is what idemkey's commands share to face the user: errors
// and the exit codes they map to (ExitCode, the one place), the streams
// (IOStreams), the command factory (Factory) and the command tree's rules
// (tree.go), units (units.go) and the JSON writer for results (json.go).
package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fatih/color"
	"github.com/idemkey/idemkey/cmd/internal/settings"
	"github.com/idemkey/idemkey/derive"
	"github.com/spf13/cobra"
)

// PrintError writes one diagnostic line, and a hint line where the error
// has one, to standard error.
func (f *Factory) PrintError(err error) {
	ios := f.IO
	red := ios.Paint(f.ColorMode(), ios.Err, color.FgRed, color.Bold)
	msg, hint := err.Error(), ""
	// cobra's suggestions ("\n\nDid you mean this?\n\tkey\n") go on a
	// hint line of their own.
	if i := strings.Index(msg, "\n\nDid you mean this?\n"); i >= 0 {
		var sugg []string
		for _, s := range strings.Fields(msg[i+len("\n\nDid you mean this?\n"):]) {
			sugg = append(sugg, "'idemkey "+s+"'")
		}
		msg, hint = msg[:i], "did you mean "+settings.OrList(sugg)+"?"
	}
	fmt.Fprintf(ios.Err, "%s %s\n", red.Sprint("idemkey: error:"), DiagLine(msg))
	var h Hinter
	switch {
	case hint != "":
	case errors.As(err, &h) && h.Hint() != "":
		hint = h.Hint()
	case strings.HasPrefix(msg, "unknown command") || strings.HasPrefix(msg, "unknown flag") || strings.HasPrefix(msg, "unknown shorthand flag"):
		hint = "run 'idemkey --help' for usage"
	}
	if hint != "" {
		fmt.Fprintf(ios.Err, "hint: %s\n", DiagLine(hint))
	}
}

// Factory carries what every command needs: the streams and the
// settings of the running command (see Settings).
type Factory struct {
	IO     *IOStreams
	Config *settings.Settings

	// Partial says the command tree holds only the command that runs (a
	// run that names its command builds that one alone).
	Partial bool
	// SettingNames are the settings of every command of the tree root is
	// part of (settings.Names), built whole if it holds only the command
	// that runs.
	SettingNames func(root *cobra.Command) map[string]settings.Scope
	// WholeTree returns the root of the whole command tree, built anew if
	// the running one holds only the command that runs (man needs every
	// command).
	WholeTree func() *cobra.Command
}

// ColorMode is --color: auto, always or never.
func (f *Factory) ColorMode() string {
	if m := f.Config.GetString("color"); m != "" {
		return m
	}
	return "auto"
}

// PrintWarning writes a warning, and its hint, to standard error.
func (f *Factory) PrintWarning(w derive.Warning) {
	ios := f.IO
	yellow := ios.Paint(f.ColorMode(), ios.Err, color.FgYellow, color.Bold)
	fmt.Fprintf(ios.Err, "%s %s\n", yellow.Sprint("idemkey: warning:"), DiagLine(w.Msg))
	if w.Hint != "" {
		fmt.Fprintf(ios.Err, "hint: %s\n", DiagLine(w.Hint))
	}
}
