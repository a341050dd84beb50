package ledger

import (
	"context"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/ledgeropts"
	"github.com/idemkey/idemkey/cmd/internal/settings"
	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/spf13/cobra"
)

// completionWait bounds how long completion waits for a ledger: a shell
// must not hang on a store that does not answer.
const completionWait = 2 * time.Second

// completeKeys completes the KEY of show, resolve and forget with the keys
// of the ledger the command would open (--ledger typed so far,
// IDEMKEY_LEDGER, the config file, the default file), each with its state
// and tool as the description. A ledger that cannot be read completes
// nothing, silently: completion writes no diagnostics. Keys that start
// with '-' (they go after --) or hold characters a shell would show
// otherwise are left out; so is everything past the first KEY.
func completeKeys(opts *Options) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		const none = cobra.ShellCompDirectiveNoFileComp
		if len(args) > 0 {
			return nil, none
		}
		f := opts.f
		ios := *f.IO
		ios.Err = io.Discard
		names := func() map[string]settings.Scope { return f.SettingNames(cmd.Root()) }
		cfg, err := settings.Load(cmd, ios.Getenv, names, func(string) {})
		if err != nil {
			return nil, none
		}
		o := &Options{f: &cli.Factory{IO: &ios, Config: cfg, Partial: f.Partial, SettingNames: f.SettingNames}}
		if o.Ledger, err = ledgeropts.Spec(o.f); err != nil {
			return nil, none
		}
		ctx, cancel := context.WithTimeout(context.Background(), completionWait)
		defer cancel()
		s, err := o.open(ctx)
		if err != nil {
			return nil, none
		}
		defer s.Close()
		recs, err := s.List(ctx, ledger.Filter{})
		if err != nil {
			return nil, none
		}
		var keys []string
		for _, r := range recs {
			if !strings.HasPrefix(r.Key, toComplete) || strings.HasPrefix(r.Key, "-") || !cli.PlainText(r.Key) {
				continue
			}
			desc := string(r.State)
			if cli.PlainText(r.Tool) && r.Tool != "" {
				desc += " " + r.Tool
			}
			keys = append(keys, r.Key+"\t"+desc)
		}
		slices.Sort(keys)
		return keys, none
	}
}
