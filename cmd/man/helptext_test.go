package man_test

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/cmd"
	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/settings"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// leaked matches what a user must never read in help: a Go identifier
// qualified by its package (cli.Changed, derive.Spec), and pflag's type
// names shown for a flag without a placeholder (stringArray, stringSlice).
var leaked = regexp.MustCompile(`\b(cli|derive|canon|ledger|settings|keyflags|ledgeropts|step|input|opts|post|probe|run|drift|diff|conform|mcp|proc|stores|cobra|pflag)\.[A-Z][A-Za-z]*\b|\b(stringArray|stringSlice|intSlice|stringToString|durationSlice)\b`)

// TestHelpTextsHoldNoIdentifiers reads the help of every command (short
// and long texts, examples, flag lines; the manual pages are made of the
// same): none names a Go identifier where prose belongs.
func TestHelpTextsHoldNoIdentifiers(t *testing.T) {
	ios := &cli.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}, Getenv: func(string) string { return "" }}
	root := cmd.NewRootCmd(&cli.Factory{IO: ios, Config: settings.New(pflag.NewFlagSet("", pflag.ContinueOnError), ios.Getenv)})
	n := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		n++
		for what, text := range map[string]string{
			"short": c.Short, "long": c.Long, "example": c.Example, "use": c.Use,
			"flags": c.LocalFlags().FlagUsages(), "inherited flags": c.InheritedFlags().FlagUsages(),
		} {
			for _, m := range leaked.FindAllString(text, -1) {
				t.Errorf("%s: %s text says %q", c.CommandPath(), what, m)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if n < 20 {
		t.Fatalf("%d commands walked; the tree has more", n)
	}
}
