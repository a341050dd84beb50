package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/ledgeropts"
	"github.com/idemkey/idemkey/cmd/internal/settings"
	"github.com/idemkey/idemkey/cmd/internal/step"
	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/idemkey/idemkey/derive/ledger/stores"
	"github.com/idemkey/idemkey/derive/mcp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// ReconcileOptions are idemkey ledger reconcile's options: unknown
// outcomes settled in bulk by asking the owner, for an operator.
type ReconcileOptions struct {
	f      *cli.Factory
	fl     *pflag.FlagSet
	Ledger string
	Keys   []string
	All    bool
	DryRun bool
	JSON   bool
	Lease  time.Duration
}

func newReconcileCmd(shared *Options) *cobra.Command {
	opts := &ReconcileOptions{f: shared.f}
	cmd := &cobra.Command{
		Use:   "reconcile [KEY...|--all] --reconcile COMMAND [--dry-run]",
		Short: "Settle unknown outcomes by asking the owner of each effect",
		Long: `Settle steps whose outcome is unknown by asking the system that owns each
effect, as run and post --ledger do with --reconcile before --recover: for
each KEY (or, with --all, every record whose outcome is unknown, and every
running one whose holder is dead), COMMAND (a shell command line; per tool:
tools.NAME.reconcile in the config file) runs under a claim of the key,
with IDEMPOTENCY_KEY, IDEMPOTENCY_ATTEMPT, IDEMKEY_TASK and IDEMKEY_TOOL in
its environment and the step's canonical arguments on its standard input:
  exit 0   the effect happened: succeeded, its standard output kept as the
           step's (later runs replay it; for an idemkey mcp call, the
           tool's result: a CallToolResult as printed, other text as its
           text content)
  exit 1   it did not: failed (the next run tries again with the same key)
  other    (or --reconcile-timeout, or a signal): still unknown
Each key's line says what it became; the record's reason says how it was
settled (idemkey ledger show KEY). --dry-run asks and shows what each would
become, and writes nothing.

Exit codes: 0 every record asked about was settled (or, with --all, none
needed it); 1 one is still unknown, running, or has no record; 2 usage, or
a ledger that cannot be used.`,
		Example: `  idemkey ledger reconcile --all --reconcile 'gh pr list --head "idemkey-$IDEMPOTENCY_KEY" --json url -q ".[0].url" | grep .'
  idemkey ledger reconcile 3f1c… --reconcile ./charge-exists.sh --dry-run`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.setup(cmd, args); err != nil {
				return err
			}
			return shared.start(opts)
		},
	}
	fl := cmd.Flags()
	step.AddReconcileFlags(fl, "each step")
	fl.Bool("all", false, "every record whose outcome is unknown (and every running one whose holder is dead)")
	fl.Bool("dry-run", false, "ask the owner and show what each record would become; write nothing")
	ledgeropts.AddHoldFlags(fl, ledgeropts.Lease.Help("lease of the reconciling claim on shared stores (renewed every third of it)"))
	settings.CommandLineOnly(fl, "all", "dry-run")
	cmd.SetFlagErrorFunc(keyFlagError)
	return cmd
}

func (opts *ReconcileOptions) setup(cmd *cobra.Command, args []string) error {
	f, v := opts.f, opts.f.Config
	opts.fl = cmd.Flags()
	opts.All, opts.DryRun = v.GetBool("all"), v.GetBool("dry-run")
	switch {
	case opts.All && len(args) > 0:
		return cli.Usagef("give KEY arguments or --all, not both")
	case !opts.All && len(args) == 0:
		return &cli.UsageError{Err: errors.New("nothing to reconcile: give KEY arguments or --all"),
			HintText: "idemkey ledger ls --state unknown lists the records whose outcome is unknown"}
	}
	for _, k := range args {
		if k == "" || !utf8.ValidString(k) {
			return cli.Usagef("a KEY argument is empty or not valid UTF-8: no recorded key is")
		}
	}
	opts.Keys = args
	var err error
	if opts.Ledger, err = ledgeropts.Spec(f); err != nil {
		return err
	}
	opts.JSON = v.GetBool("json")
	hold, err := ledgeropts.HoldSettings(v, ledgeropts.Lease)
	if err != nil {
		return err
	}
	opts.Lease = hold.Lease
	if v.GetString("reconcile") == "" && !hasToolReconcile(v) {
		return &cli.UsageError{Err: errors.New("reconcile needs --reconcile COMMAND (or tools.NAME.reconcile in the config file)"),
			HintText: "COMMAND asks the owner: exit 0 the effect happened, 1 it did not, anything else: it cannot tell"}
	}
	return nil
}

// hasToolReconcile reports whether the config file names a reconcile
// command for some tool.
func hasToolReconcile(v *settings.Settings) bool {
	for _, tool := range v.ToolNames() {
		if v.GetString("tools."+tool+".reconcile") != "" {
			return true
		}
	}
	return false
}

func (opts *ReconcileOptions) run() error {
	ctx := context.Background()
	lo := &Options{f: opts.f, Ledger: opts.Ledger}
	s, err := lo.open(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	recs, err := opts.records(ctx, s)
	if err != nil {
		return &ledgeropts.Unavailable{Spec: opts.Ledger, Err: err}
	}
	left := 0
	for i, key := range opts.Keys {
		line, settled, err := opts.reconcileOne(ctx, s, key, recs[i])
		if err != nil {
			return &ledgeropts.Unavailable{Spec: opts.Ledger, Err: err}
		}
		if line == nil {
			continue // --all: a step whose holder is alive is not stuck
		}
		if !settled {
			left++
		}
		if _, err := opts.f.IO.Out.Write(line); err != nil {
			return &cli.OutputError{Err: err}
		}
	}
	if left > 0 {
		return &cli.ExitError{Code: cli.ExitNegative}
	}
	return nil
}

// records reads the keys' records; with --all, lists the keys first:
// the unknown records, and the running ones whose lease ran out (on one
// machine, every running one: its lock says whether its holder lives).
func (opts *ReconcileOptions) records(ctx context.Context, s ledger.Store) ([]*ledger.Record, error) {
	if !opts.All {
		recs := make([]*ledger.Record, len(opts.Keys))
		for i, k := range opts.Keys {
			rec, _, err := s.Get(ctx, k)
			if err != nil {
				return nil, err
			}
			recs[i] = rec
		}
		return recs, nil
	}
	_, locker := s.(stores.KeyLocker)
	var recs []*ledger.Record
	for _, st := range []ledger.State{ledger.Unknown, ledger.Running} {
		list, err := s.List(ctx, ledger.Filter{State: st})
		if err != nil {
			return nil, err
		}
		for _, r := range list {
			if st == ledger.Running && !locker && !ledger.LeaseExpired(r) {
				continue // its holder renews it: not stuck
			}
			opts.Keys = append(opts.Keys, r.Key)
			recs = append(recs, r)
		}
	}
	return recs, nil
}

// reconcileOne asks about one key and says what became of it; settled
// reports whether its record is succeeded or failed now (or would be).
// With --all, a running step whose holder is alive has no line.
func (opts *ReconcileOptions) reconcileOne(ctx context.Context, s ledger.Store, key string, rec *ledger.Record) ([]byte, bool, error) {
	if rec == nil {
		return opts.line(key, "", "", "no record", nil), false, nil
	}
	rc, err := step.ReconcileSettings(opts.f, opts.fl, rec.Tool)
	if err != nil {
		return nil, false, err
	}
	if rc == nil {
		return opts.line(key, rec.State, rec.State, fmt.Sprintf("no reconcile command for tool %q (--reconcile, or tools.NAME.reconcile in the config file)", rec.Tool), nil), false, nil
	}
	rc.Args = step.RequestArgs
	req := ledger.ReconcileRequest{
		Key: key, Holder: stores.Holder(), Lease: opts.Lease, Reconcile: rc.Reconciler(), DryRun: opts.DryRun,
	}
	if rec.Kind == "mcp" {
		req.Reconcile = mcpReconciler(rc)
	}
	if kl, ok := s.(stores.KeyLocker); ok {
		req.Locker = stores.FileLocker{KL: kl}
	}
	res, err := ledger.ReconcileKey(ctx, s, req)
	if err != nil || res.Busy && opts.All {
		return nil, false, err
	}
	return opts.describe(key, res), res.Record != nil && res.Record.State != ledger.Unknown, nil
}

// mcpReconciler is rc for an mcp record: what it prints is the tool's
// result, as idemkey mcp --reconcile records it.
func mcpReconciler(rc *step.Reconcile) ledger.Reconciler {
	return func(ctx context.Context, rec *ledger.Record) ledger.Reconciliation {
		r := rc.Run(ctx, rec)
		if r.Verdict == ledger.Happened {
			r.Output = mcp.ReconciledOutput(r.Output)
		}
		return r
	}
}

// describe is a key's line: what it was, what it became, and why.
func (opts *ReconcileOptions) describe(key string, res *ledger.Settled) []byte {
	before := ledger.State("")
	if res.Found != nil {
		before = res.Found.State
	}
	switch {
	case res.Found == nil:
		return opts.line(key, "", "", "no record", nil)
	case res.Busy:
		return opts.line(key, before, before, "running: its holder is alive; left alone", nil)
	case res.Answer == nil:
		return opts.line(key, before, before, fmt.Sprintf("%s, not unknown; left alone", before), nil)
	}
	after := res.Record.State
	what := res.Answer.Said()
	if res.Answer.Note != "" {
		what += ": " + cli.DiagLine(res.Answer.Note)
	}
	return opts.line(key, before, after, what, res.Answer)
}

// line is one key's result: text, or a JSON object with --json.
func (opts *ReconcileOptions) line(key string, before, after ledger.State, what string, answer *ledger.Reconciliation) []byte {
	if opts.JSON {
		o := &cli.JSONObject{}
		o.Str("key", key).Str("before", string(before)).Str("after", string(after))
		if answer != nil {
			o.Str("verdict", answer.Verdict.String())
			if answer.Duplicated {
				o.Bool("duplicated", true)
			}
		}
		o.Str("note", what).Bool("dry_run", opts.DryRun)
		return o.Line()
	}
	switch {
	case answer == nil:
		return fmt.Appendf(nil, "%s: %s\n", key, what)
	case opts.DryRun:
		return fmt.Appendf(nil, "%s: %s: would become %s (dry run)\n", key, what, after)
	case after == ledger.Unknown:
		return fmt.Appendf(nil, "%s: %s: still unknown\n", key, what)
	}
	return fmt.Appendf(nil, "%s: %s: %s\n", key, what, after)
}
