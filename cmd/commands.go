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
	{"key", func(f *cli.Factory) *cobra.Command { return key.NewCmd(f, nil) }},
	{"canon", canoncmd.NewCmd},
	{"check", check.NewCmd},
	{"version", version.NewCmd},
	{"diff", diff.NewCmd},
	{"drift", drift.NewCmd},
	{"post", post.NewCmd},
	{"vectors", vectors.NewCmd},
	{"conform", conform.NewCmd},
	{"run", func(f *cli.Factory) *cobra.Command { return runcmd.NewCmd(f, nil) }},
	{"ledger", ledger.NewCmd},
	{"probe", probe.NewCmd},
	{"mcp", mcp.NewCmd},
	{"man", man.NewCmd},
}
