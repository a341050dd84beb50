package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/idemkey/idemkey/cmd/internal/settings"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// SuggestFlag turns the hint of a mistyped flag's usage error (whichever
// command's flag error function made it) into "did you mean --retry?",
// naming the flag of c closest to what was typed: --retyr, --rety, or
// -retry typed with one dash. A hint of the command's own (a key that goes
// after --) is kept. It runs only on the way out of a failed run, so it
// costs a run that succeeds nothing.
func SuggestFlag(c *cobra.Command, err error) {
	var ue *UsageError
	if c == nil || !errors.As(err, &ue) || ue.HintText != "" && !strings.HasPrefix(ue.HintText, "run '") {
		return
	}
	msg := ue.Err.Error()
	typed := ""
	if t, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		typed = t
	} else if i := strings.LastIndex(msg, " in -"); i >= 0 && strings.HasPrefix(msg, "unknown shorthand flag:") {
		typed = msg[i+len(" in -"):] // -retry: a long name with one dash
	}
	if name, _, ok := strings.Cut(typed, "="); ok {
		typed = name
	}
	if typed == "" {
		return
	}
	var names []string
	seen := map[string]bool{}
	for _, fs := range []*pflag.FlagSet{c.Flags(), c.InheritedFlags()} {
		fs.VisitAll(func(fl *pflag.Flag) {
			if !fl.Hidden && !seen[fl.Name] {
				seen[fl.Name] = true
				names = append(names, fl.Name)
			}
		})
	}
	near := ""
	if seen[typed] && len(typed) > 1 {
		near = typed // -retry for --retry
	} else {
		near = settings.Nearest(typed, names)
	}
	if near == "" {
		return
	}
	hint := fmt.Sprintf("did you mean --%s?", near)
	if ue.HintText != "" {
		hint += " " + ue.HintText
	}
	ue.HintText = hint
}
