package man

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestPage writes a command's page from its help texts: name, synopsis,
// description with indented lines kept, its own and inherited flags with
// defaults, examples, subcommands and see-also, with roff's control
// characters escaped (a line that starts with a period or an apostrophe, a backslash).
func TestPage(t *testing.T) {
	root := &cobra.Command{Use: "idemkey", Short: "Derive keys"}
	root.PersistentFlags().String("color", "auto", "colour output")
	ledger := &cobra.Command{Use: "ledger", Short: "Inspect the ledger", Run: func(*cobra.Command, []string) {}}
	show := &cobra.Command{
		Use:   "show KEY",
		Short: "Show a record",
		Long: "Show a record's state, re-read.\n\n.dot at the start, 'quote too, a \\ backslash\n\n" +
			"  {\"task\",\"tool\"}\n  indented",
		Example: "  idemkey ledger show k1\n.starts with a dot",
		Run:     func(*cobra.Command, []string) {},
	}
	show.Flags().Bool("json", false, "print JSON")
	show.Flags().StringP("ledger", "l", "", "the ledger `PATH`")
	show.Flags().String("hidden", "", "not shown")
	show.Flags().MarkHidden("hidden")
	root.AddCommand(ledger)
	ledger.AddCommand(show)

	page := string(Page(show))
	for _, want := range []string{
		".TH \"IDEMKEY-LEDGER-SHOW\" 1 \"\" \"idemkey\" \"idemkey manual\"\n",
		".SH NAME\nidemkey-ledger-show \\- Show a record\n",
		".SH SYNOPSIS\n.nf\nidemkey ledger show KEY [flags]\n.fi\n",
		".SH DESCRIPTION\nShow a record's state, re-read.\n.PP\n\\&.dot at the start, 'quote too, a \\e backslash\n.PP\n.nf\n  {\"task\",\"tool\"}\n  indented\n.fi\n",
		".SH OPTIONS\n.TP\n\\fB\\-\\-json\\fR\nprint JSON\n.TP\n\\fB\\-l\\fR, \\fB\\-\\-ledger\\fR \\fIPATH\\fR\nthe ledger PATH\n",
		".SH OPTIONS INHERITED FROM PARENT COMMANDS\n.TP\n\\fB\\-\\-color\\fR \\fIstring\\fR\ncolour output (default auto)\n",
		".SH EXAMPLES\n.nf\n  idemkey ledger show k1\n\\&.starts with a dot\n.fi\n",
		".SH SEE ALSO\n\\fBidemkey-ledger\\fR(1)\n",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "hidden") {
		t.Errorf("a hidden flag is listed:\n%s", page)
	}
	for _, l := range strings.Split(page, "\n") {
		if strings.HasPrefix(l, "'") || strings.HasPrefix(l, ".") && !strings.HasPrefix(l, ".TH") && !strings.HasPrefix(l, ".SH") &&
			!strings.HasPrefix(l, ".TP") && !strings.HasPrefix(l, ".PP") && l != ".nf" && l != ".fi" {
			t.Errorf("a text line reads as a request: %q", l)
		}
	}
	parent := string(Page(ledger))
	if !strings.Contains(parent, ".SH COMMANDS\n.TP\n\\fBidemkey-ledger-show\\fR(1)\nShow a record\n") ||
		!strings.Contains(parent, ".SH SEE ALSO\n\\fBidemkey\\fR(1), \\fBidemkey-ledger-show\\fR(1)\n") {
		t.Errorf("the parent's page:\n%s", parent)
	}
}
