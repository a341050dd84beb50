package cmd

import (
	canoncmd "github.com/idemkey/idemkey/cmd/canon"
	"github.com/idemkey/idemkey/cmd/check"
	"github.com/idemkey/idemkey/cmd/conform"
	"github.com/idemkey/idemkey/cmd/diff"
	"github.com/idemkey/idemkey/cmd/drift"
	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/key"
	"github.com/idemkey/idemkey/cmd/ledger"
	"github.com/idemkey/idemkey/cmd/man"
	"github.com/idemkey/idemkey/cmd/mcp"
	"github.com/idemkey/idemkey/cmd/post"
	"github.com/idemkey/idemkey/cmd/probe"
	runcmd "github.com/idemkey/idemkey/cmd/run"
	"github.com/idemkey/idemkey/cmd/vectors"
	"github.com/idemkey/idemkey/cmd/version"
	"github.com/spf13/cobra"
)

// commands builds idemkey's commands, in the order help lists them.
var commands = []struct {
	name  string
	build func(*cli.Factory) *cobra.Command
}{
	{"key", built(key.NewCmd)},
	{"canon", built(canoncmd.NewCmd)},
	{"check", built(check.NewCmd)},
	{"version", built(version.NewCmd)},
	{"diff", built(diff.NewCmd)},
	{"drift", built(drift.NewCmd)},
	{"post", built(post.NewCmd)},
	{"vectors", built(vectors.NewCmd)},
	{"conform", built(conform.NewCmd)},
	{"run", built(runcmd.NewCmd)},
	{"ledger", built(ledger.NewCmd)},
	{"probe", built(probe.NewCmd)},
	{"mcp", built(mcp.NewCmd)},
	{"man", built(man.NewCmd)},
}

// built is a face's command as idemkey runs it: NewCmd without a runF.
func built[O any](newCmd func(*cli.Factory, func(O) error) *cobra.Command) func(*cli.Factory) *cobra.Command {
	return func(f *cli.Factory) *cobra.Command { return newCmd(f, nil) }
}
