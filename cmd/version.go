package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newVersionCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print idemkey's version",
		Args:  rangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(f.IO.Out, "idemkey version %s\n", versionString())
			return err
		},
	}
}
