// Package ledger is the face of 'idemkey ledger': list, show, resolve,
// forget, collect, initialise and reconcile the records of a ledger (the
// library: derive/ledger; the stores: derive/ledger/stores).
//
// Each subcommand reads its flags and arguments into options of its own
// (LsOptions, ShowOptions, ResolveOptions, ForgetOptions, GCOptions,
// InitOptions, ReconcileOptions), a Sub whose run does the work. NewCmd
// takes one runF seam for the whole tree, given that Sub instead of
// running it: the subcommands share their parent's options and flags, so
// a test builds the tree once and tells them apart by the Sub's type,
// rather than every subcommand's constructor taking a seam of its own.
package ledger

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/input"
	"github.com/idemkey/idemkey/cmd/internal/ledgeropts"
	"github.com/idemkey/idemkey/cmd/internal/proc"
	"github.com/idemkey/idemkey/cmd/internal/settings"
	"github.com/idemkey/idemkey/derive"
	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/idemkey/idemkey/derive/ledger/stores"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Options are the settings every ledger subcommand shares.
type Options struct {
	f      *cli.Factory
	Ledger string
	JSON   bool
	// Retain is the retention run uses (its --retain setting): finished
	// records older than this are expired, and gc removes them.
	Retain time.Duration
	// runF runs a subcommand's options instead of their run (NewCmd's
	// seam).
	runF func(Sub) error
}

// Sub is one subcommand's options, read from its flags and arguments:
// run does its work.
type Sub interface{ run() error }

// LsOptions are ledger ls's options: the shared ones and the filter
// (--task, --tool, --state).
type LsOptions struct {
	*Options
	Filter ledger.Filter
}

// ShowOptions are ledger show's options: the key, and which recorded
// stream to print (--stdout, --stderr), if one.
type ShowOptions struct {
	*Options
	Key            string
	Stdout, Stderr bool
}

// ResolveOptions are ledger resolve's options: the settlement asked for.
type ResolveOptions struct {
	*Options
	Request ledger.ResolveRequest
}

// ForgetOptions are ledger forget's options: the key, --dry-run and --yes.
type ForgetOptions struct {
	*Options
	Key         string
	DryRun, Yes bool
}

// GCOptions are ledger gc's options: the age past which records go;
// ByRetention: it is the retention (no --older-than), and 0 keeps them.
type GCOptions struct {
	*Options
	OlderThan   time.Duration
	ByRetention bool
}

// InitOptions are ledger init's options: the shared ones.
type InitOptions struct{ *Options }

func (o *LsOptions) run() error      { return o.ls(o.Filter) }
func (o *ShowOptions) run() error    { return o.show(o.Key, o.Stdout, o.Stderr) }
func (o *ResolveOptions) run() error { return o.resolve(o.Request) }
func (o *ForgetOptions) run() error  { return o.forget(o.Key, o.DryRun, o.Yes) }
func (o *GCOptions) run() error      { return o.gc(o.OlderThan, o.ByRetention) }
func (o *InitOptions) run() error    { return o.init() }

// start runs a subcommand's options, or gives them to NewCmd's runF.
func (opts *Options) start(sub Sub) error {
	if opts.runF != nil {
		return opts.runF(sub)
	}
	return sub.run()
}

// NewCmd builds 'idemkey ledger': its options, its flags, and its
// subcommands; with runF, runF instead of a subcommand's run, once its
// options are read (a test's seam for the flags and settings).
func NewCmd(f *cli.Factory, runF func(Sub) error) *cobra.Command {
	opts := &Options{f: f, runF: runF}
	cmd := &cobra.Command{
		Use:   "ledger",
		Short: "Inspect and settle the records of run and post --ledger",
		Long: `Inspect and settle the ledger that 'idemkey run' and 'idemkey post --ledger'
keep: one record per idempotency key, in one of the states running,
succeeded, failed or unknown. ls and show give the state a run would see:
a running record whose holder is gone (its lease expired, or its lock is
free) reads unknown, with how it ended.

The ledger is a SQLite file on this machine: --ledger PATH, IDEMKEY_LEDGER,
or $XDG_STATE_HOME/idemkey/ledger.db (default ~/.local/state/idemkey/ledger.db);
or, shared by a fleet of machines, a PostgreSQL or Redis server:
--ledger postgres://… (postgresql://) or redis://… (rediss://).
Only init, run and post create a ledger: the other commands read a
missing one as empty, and say so.

Exit codes: 0 done; 1 a negative answer (no record for the key; resolve
of a known outcome or of a step whose holder is alive; forget of a step
whose holder is alive; show --stdout/--stderr of a stream never
recorded); 2 usage, or a ledger that cannot be used.`,
		Args: cli.RangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	pf := cmd.PersistentFlags()
	ledgeropts.AddFlag(pf)
	pf.Bool("json", false, "print JSON")
	ledgeropts.AddHoldFlags(pf, ledgeropts.Retain.Help("the retention run uses (IDEMKEY_RETAIN): older finished records are expired, and gc removes them (0: kept for ever)"))
	show, resolve, forget := newShowCmd(opts), newResolveCmd(opts), newForgetCmd(opts)
	for _, c := range []*cobra.Command{show, resolve, forget} {
		c.SetFlagErrorFunc(keyFlagError)
		c.ValidArgsFunction = completeKeys(opts) // complete.go
	}
	cmd.AddCommand(newLsCmd(opts), show, resolve, forget, newGCCmd(opts), newInitCmd(opts))
	cmd.AddCommand(newReconcileCmd(opts)) // reconcile.go
	return cmd
}

// prepare reads the settings every ledger subcommand shares, and checks
// its KEY argument if it has one.
func (opts *Options) prepare(cmd *cobra.Command, args ...string) error {
	// A KEY argument left empty (an unset variable in "$KEY") is a
	// mistake on the command line, not a key without a record.
	if len(args) > 0 && args[0] == "" {
		return &cli.UsageError{Err: errors.New("the KEY argument is empty"),
			HintText: "give a key as run, post or ledger ls show it"}
	}
	if len(args) > 0 && !utf8.ValidString(args[0]) {
		// No key is: keys are ASCII after a UTF-8 --prefix.
		return cli.Usagef("the KEY argument is not valid UTF-8: no recorded key is")
	}
	f := opts.f
	var err error
	if opts.Ledger, err = ledgeropts.Spec(f); err != nil {
		return err
	}
	opts.JSON = f.Config.GetBool("json")
	hold, err := ledgeropts.HoldSettings(f.Config, ledgeropts.Retain)
	if err != nil {
		return err
	}
	opts.Retain = hold.Retain
	warnCommandLineOnly(f, cmd)
	return nil
}

// warnCommandLineOnly warns about an IDEMKEY_* variable set for one of
// cmd's flags that it takes from the command line only (settings.CommandLineOnly)
// and that no command reads from the environment: it is not read, and
// must not seem to be. (A config file's value for such a flag is warned
// about when the file is read.) IDEMKEY_TASK and IDEMKEY_TOOL, which
// key, run and post read, are left alone: ledger ls --task and --tool do
// not narrow a listing by them, by design.
func warnCommandLineOnly(f *cli.Factory, cmd *cobra.Command) {
	known := f.SettingNames(cmd.Root())
	cmd.LocalNonPersistentFlags().VisitAll(func(fl *pflag.Flag) {
		if !settings.IsCommandLineOnly(fl) || fl.Changed || known[fl.Name] != settings.CommandLine {
			return
		}
		if env := settings.EnvName(fl.Name); f.IO.Getenv(env) != "" {
			f.PrintWarning(derive.Warning{Msg: fmt.Sprintf("%s is not read: %s takes --%s from the command line only", env, cmd.CommandPath(), fl.Name)})
		}
	})
}

func newLsCmd(opts *Options) *cobra.Command {
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List records, in the state a run would see",
		Args:  cli.RangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.prepare(cmd); err != nil {
				return err
			}
			// The filters come from the command line only: an IDEMKEY_TASK
			// exported for run must not narrow a listing silently.
			fl := cmd.Flags()
			task, _ := fl.GetString("task")
			tool, _ := fl.GetString("tool")
			state, _ := fl.GetString("state")
			for _, v := range []struct{ flag, val string }{{"--task", task}, {"--tool", tool}} {
				if !utf8.ValidString(v.val) {
					// run refuses such a task id or tool name.
					return cli.Usagef("%s is not valid UTF-8: no recorded task id or tool name is", v.flag)
				}
			}
			flt := ledger.Filter{Task: task, Tool: tool, State: ledger.State(state)}
			if flt.State != "" && !flt.State.Valid() {
				return cli.Usagef("invalid --state %q (want running, succeeded, failed or unknown)", flt.State)
			}
			return opts.start(&LsOptions{Options: opts, Filter: flt})
		},
	}
	ls.Flags().String("task", "", "only this task's records")
	ls.Flags().String("tool", "", "only this tool's records")
	ls.Flags().String("state", "", "only records in this state, as a run would see it: running, succeeded, failed or unknown")
	settings.CommandLineOnly(ls.Flags(), "task", "tool", "state")
	cli.CompleteValues(ls, "state", string(ledger.Running), string(ledger.Succeeded), string(ledger.Failed), string(ledger.Unknown))
	return ls
}

func newShowCmd(opts *Options) *cobra.Command {
	show := &cobra.Command{
		Use:   "show KEY",
		Short: "Show a record: its state, attempt, times, and its outputs' lengths and sha256",
		Args:  cli.RangeArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.prepare(cmd, args...); err != nil {
				return err
			}
			out, _ := cmd.Flags().GetBool("stdout")
			errs, _ := cmd.Flags().GetBool("stderr")
			if out && errs {
				return &cli.UsageError{Err: errors.New("--stdout and --stderr cannot be used together"),
					HintText: "print one stream at a time: its bytes as recorded, to standard output"}
			}
			if (out || errs) && opts.JSON {
				// The saved bytes are not JSON: printing them for --json
				// would hand a script something else than it asked for.
				return &cli.UsageError{Err: errors.New("--json cannot be used with --stdout or --stderr"),
					HintText: "--json shows the record (with its outputs' lengths and sha256); --stdout and --stderr print a stream's bytes as recorded"}
			}
			return opts.start(&ShowOptions{Options: opts, Key: args[0], Stdout: out, Stderr: errs})
		},
	}
	show.Flags().Bool("stdout", false, "print the recorded standard output's bytes")
	show.Flags().Bool("stderr", false, "print the recorded standard error's bytes")
	settings.CommandLineOnly(show.Flags(), "stdout", "stderr")
	return show
}

func newResolveCmd(opts *Options) *cobra.Command {
	resolve := &cobra.Command{
		Use:   "resolve KEY --as succeeded|failed [--stdout FILE] [--stderr FILE] [--exit-code N]",
		Short: "Settle a step whose outcome is unknown, after checking its owner",
		Long: `Settle a step whose outcome is unknown, after checking with the system that
owns its effect whether it happened: --as succeeded makes later runs replay the
record, --as failed lets the next run try again (or, with --replay-failed,
replays it).

What a replay returns is what the record holds: the output its attempt
recorded before it was lost, if any. --stdout FILE and --stderr FILE
(- for standard input) attach what a replay should print instead — the
pull request's URL, the charge id found at the owner — and --exit-code N
the status it exits with (0 for succeeded, 1 to 255 for failed; by
default 0, and the attempt's own or 1). A replay of a resolved record that
holds no output says so on standard error.`,
		Example: `  idemkey ledger resolve KEY --as failed --reason 'no charge at the PSP'
  echo ch_3Nv0 | idemkey ledger resolve KEY --as succeeded --stdout - --reason 'charge found'`,
		Args: cli.RangeArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.prepare(cmd, args...); err != nil {
				return err
			}
			req, err := opts.resolveRequest(cmd, args[0])
			if err != nil {
				return err
			}
			return opts.start(&ResolveOptions{Options: opts, Request: req})
		},
	}
	fl := resolve.Flags()
	fl.String("as", "", "succeeded or failed")
	fl.String("reason", "", "what was checked, kept in the record")
	fl.String("stdout", "", "what a replay prints on standard output: this file's bytes (- for standard input)")
	fl.String("stderr", "", "what a replay prints on standard error: this file's bytes (- for standard input)")
	fl.Int("exit-code", -1, "the exit status a replay returns (succeeded: 0; failed: 1 to 255)")
	settings.CommandLineOnly(fl, "as", "reason", "stdout", "stderr", "exit-code")
	cli.CompleteValues(resolve, "as", string(ledger.Succeeded), string(ledger.Failed))
	return resolve
}

func newForgetCmd(opts *Options) *cobra.Command {
	c := &cobra.Command{
		Use:   "forget KEY",
		Short: "Remove a record: the next run of its step is its next attempt",
		Long: `Remove a key's record: the next run of its step is its next attempt.

A record whose outcome is unknown is refused without --yes: forgetting it
lets the next run run the step again, which makes its effect twice if the
unknown attempt made it (settle it with 'idemkey ledger resolve' instead).
--dry-run says what would be removed and removes nothing.`,
		Args: cli.RangeArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.prepare(cmd, args...); err != nil {
				return err
			}
			dry, _ := cmd.Flags().GetBool("dry-run")
			yes, _ := cmd.Flags().GetBool("yes")
			return opts.start(&ForgetOptions{Options: opts, Key: args[0], DryRun: dry, Yes: yes})
		},
	}
	c.Flags().Bool("dry-run", false, "say what would be forgotten; remove nothing")
	c.Flags().Bool("yes", false, "forget a record whose outcome is unknown (its step may run twice)")
	settings.CommandLineOnly(c.Flags(), "dry-run", "yes")
	return c
}

func newGCCmd(opts *Options) *cobra.Command {
	gc := &cobra.Command{
		Use:   "gc",
		Short: "Remove records older than --older-than (default: the retention, --retain, 7d)",
		Long: `Remove records whose last change is older than --older-than, by default
the retention run uses (--retain, IDEMKEY_RETAIN or the config file's
retain; 7d): the records run ignores. With a retention of 0 (records kept
for ever), gc without --older-than removes nothing. Running and unknown
records are never removed: an unknown outcome waits for ledger resolve or
forget.`,
		Args: cli.RangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.prepare(cmd); err != nil {
				return err
			}
			f := opts.f
			if !f.Config.IsSet("older-than") {
				return opts.start(&GCOptions{Options: opts, OlderThan: opts.Retain, ByRetention: true})
			}
			d, err := cli.ParseDays(f.Config.GetString("older-than"))
			if err != nil {
				return cli.Usagef("invalid --older-than: %v", err)
			}
			return opts.start(&GCOptions{Options: opts, OlderThan: d})
		},
	}
	gc.Flags().String("older-than", "", "remove records whose last change is older than this (default: the retention)")
	return gc
}

func newInitCmd(opts *Options) *cobra.Command {
	return &cobra.Command{
		Use:   "init",
		Short: "Create the ledger (the file, or a shared store's table)",
		Args:  cli.RangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.prepare(cmd); err != nil {
				return err
			}
			return opts.start(&InitOptions{opts})
		},
	}
}

// keyFlagError is the usage error of a flag that did not parse; when the
// "flag" is a key (its --prefix starts with '-'), the hint says it goes
// after --.
func keyFlagError(c *cobra.Command, err error) error {
	msg := err.Error()
	tok := ""
	if i := strings.LastIndex(msg, " in -"); i >= 0 && strings.HasPrefix(msg, "unknown shorthand flag:") {
		tok = msg[i+len(" in "):]
	} else if t, ok := strings.CutPrefix(msg, "unknown flag: "); ok {
		tok = t
	}
	if _, _, isKey := keyDigest(tok); isKey && cli.PlainText(tok) {
		return &cli.UsageError{Err: err, HintText: fmt.Sprintf("a key that starts with - goes after --: %s -- %s", c.CommandPath(), tok)}
	}
	return &cli.UsageError{Err: err, HintText: fmt.Sprintf("run '%s --help' for usage", c.CommandPath())}
}

// open opens the ledger for a command that reads or settles records. A
// ledger that does not exist (a SQLite file, a PostgreSQL table) is not
// created: a mistyped --ledger or table= would leave a new file and
// directory, or a table, behind. It holds no records, and a line on
// stderr says where the command looked.
func (opts *Options) open(ctx context.Context) (ledger.Store, error) {
	spec := opts.Ledger
	var s ledger.Store
	var err error
	if path, ok := localLedgerPath(spec); ok {
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			return nil, &ledgeropts.Unavailable{Spec: path, Err: &cli.UsageError{Err: errors.New("is a directory, not a ledger file"),
				HintText: "give the ledger's file, e.g. --ledger " + shownText(filepath.Join(path, "ledger.db"))}}
		}
		spec = path
		s, err = ledgeropts.OpenSQLiteExisting(ctx, path)
	} else if strings.HasPrefix(spec, "postgres://") || strings.HasPrefix(spec, "postgresql://") {
		s, err = ledgeropts.OpenPostgresExisting(ctx, spec)
	} else {
		return ledgeropts.Open(ctx, opts.f, spec)
	}
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(opts.f.IO.Err, "idemkey: no ledger at %s yet (run, post --ledger or ledger init creates it)\n", shownText(stores.Redact(spec)))
		return noLedger{}, nil
	}
	if err != nil {
		return nil, &ledgeropts.Unavailable{Spec: spec, Err: err}
	}
	return s, nil
}

// localLedgerPath returns the SQLite file a ledger spec names, as
// Options.open reads it; false for a URL or a connection string.
func localLedgerPath(spec string) (string, bool) { return stores.LocalPath(spec) }

// noLedger is a ledger that does not exist: it holds no records, and is
// never written.
type noLedger struct{}

var errNoLedger = errors.New("the ledger does not exist")

func (noLedger) Get(context.Context, string) (*ledger.Record, bool, error) { return nil, false, nil }
func (noLedger) Insert(context.Context, *ledger.Record, time.Duration) (bool, error) {
	return false, errNoLedger
}
func (noLedger) Swap(context.Context, ledger.Version, bool, *ledger.Record, time.Duration) (bool, error) {
	return false, errNoLedger
}
func (noLedger) Renew(context.Context, string, ledger.Version, time.Duration) (bool, error) {
	return false, errNoLedger
}
func (noLedger) List(context.Context, ledger.Filter) ([]*ledger.Record, error) { return nil, nil }
func (noLedger) Delete(context.Context, string, *ledger.Version) (bool, error) { return false, nil }
func (noLedger) Close() error                                                  { return nil }

// errLockHeld: another process holds the key's kernel lock, as a run of
// the key finds it: a process of its step (or of a reconcile) still runs.
var errLockHeld = errors.New("its lock is held: a process of its step still runs")

// withLock runs fn holding the key's kernel lock when the store has one
// (locked reports whether it did). When another process holds it, the
// key is in progress, as run judges it: errLockHeld, fn not called.
func withLock(s ledger.Store, key string, fn func(locked bool) error) error {
	kl, ok := s.(stores.KeyLocker)
	if !ok {
		return fn(false)
	}
	lock, err := stores.FileLocker{KL: kl}.TryLock(key)
	if err != nil {
		return err
	}
	if lock == nil {
		return errLockHeld
	}
	defer lock.Close()
	return fn(true)
}

// effective is rec as the next run of its key would see it
// (ledger.Effective): a running record whose lease ran out on the store's
// clock (expired: Get's, or ledger.LeaseExpired for a record from List),
// or whose holder is gone (holderGone), reads unknown, with how its
// holder ended in its reason (not running).
func effective(s ledger.Store, rec *ledger.Record, expired bool) *ledger.Record {
	if rec != nil && rec.State == ledger.Unknown && lockHeld(s, rec.Key) {
		// A run of the key finds it in progress: so does ls.
		r := *rec
		r.State = ledger.Running
		r.Reason = "in progress: " + errLockHeld.Error() + " (recorded: " + string(rec.State) + ", " + rec.Reason + ")"
		return &r
	}
	if rec == nil || rec.State != ledger.Running {
		return rec
	}
	return ledger.Effective(rec, expired, !expired && holderGone(s, rec))
}

// holderGone reports whether a running record's holder is gone, on a
// store with kernel locks (SQLite): its lock is free (lockHeld, or taken
// for a moment where that cannot tell), and the store, if it can check
// the recorded holder (HolderAlive), does not vouch for it. On a lease
// store it is false: the lease decides.
func holderGone(s ledger.Store, rec *ledger.Record) bool {
	if _, ok := s.(stores.KeyLocker); !ok || lockHeld(s, rec.Key) {
		return false
	}
	return !holderAlive(s, rec)
}

// holderAlive reports whether the store vouches for rec's recorded holder
// (a SQLite ledger on the holder's machine, see sqlite.HolderAlive).
func holderAlive(s ledger.Store, rec *ledger.Record) bool {
	ha := stores.HolderCheck(s)
	return ha != nil && rec != nil && ha(rec)
}

// lockHeld reports whether another process holds key's kernel lock (on
// a store that has them), without taking it where the system can tell;
// elsewhere it is taken for a moment. An error reads as held: alive.
func lockHeld(s ledger.Store, key string) bool {
	kl, ok := s.(stores.KeyLocker)
	if !ok {
		return false
	}
	if lp, ok := s.(interface{ LockPath(string) string }); ok {
		if held, known := proc.LockHeld(lp.LockPath(key)); known {
			return held
		}
	}
	lock, err := stores.FileLocker{KL: kl}.TryLock(key)
	if err != nil || lock == nil {
		return true
	}
	lock.Close()
	return false
}

// recordJSON writes the fields of a record that ls and show print: r as
// a run would see it (see effective), recorded the state the store holds.
func recordJSON(o *cli.JSONObject, r *ledger.Record, recorded ledger.State, retain time.Duration) {
	o.Str("key", r.Key).Str("state", string(r.State))
	o.Key("attempt")
	o.Buf = strconv.AppendInt(o.Buf, r.Attempt, 10)
	o.Str("task", r.Task).Str("tool", r.Tool).Str("kind", r.Kind)
	o.Key("exit_code")
	if r.ExitCode == ledger.NoExit {
		o.Buf = append(o.Buf, "null"...)
	} else {
		o.Buf = strconv.AppendInt(o.Buf, int64(r.ExitCode), 10)
	}
	o.Str("started_at", r.StartedAt.UTC().Format(time.RFC3339Nano))
	for _, t := range []struct {
		name string
		at   time.Time
	}{{"ended_at", r.EndedAt}, {"lease_until", r.LeaseUntil}} {
		if t.at.IsZero() {
			o.Raw(t.name, []byte("null"))
		} else {
			o.Str(t.name, t.at.UTC().Format(time.RFC3339Nano))
		}
	}
	o.Str("holder", r.Holder).Str("reason", r.Reason).Str("fingerprint", r.Fingerprint)
	o.Bool("expired", ledger.Expired(r, retain, time.Now()))
	o.Str("recorded_state", string(recorded))
	for _, s := range []struct {
		name string
		out  ledger.Output
	}{{"stdout", r.Stdout}, {"stderr", r.Stderr}} {
		o.Key(s.name)
		b := o.Buf
		b = append(b, `{"length":`...)
		b = strconv.AppendInt(b, s.out.Length, 10)
		b = append(b, `,"sha256":`...)
		b = strconv.AppendQuote(b, s.out.SHA256)
		b = append(b, `,"truncated":`...)
		b = strconv.AppendBool(b, s.out.Truncated)
		o.Buf = append(b, '}')
	}
}

func (opts *Options) ls(flt ledger.Filter) error {
	ctx := context.Background()
	s, err := opts.open(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	recs, recorded, err := listEffective(ctx, s, flt)
	if err != nil {
		return err
	}
	out := opts.f.IO.Out
	if opts.JSON {
		b := []byte{'['}
		for i, r := range recs {
			if i > 0 {
				b = append(b, ',')
			}
			o := &cli.JSONObject{}
			recordJSON(o, r, recorded[i], opts.Retain)
			b = append(b, o.Line()...)
			b = b[:len(b)-1]
		}
		_, err := out.Write(append(b, ']', '\n'))
		return err
	}
	if len(recs) == 0 {
		fmt.Fprintln(opts.f.IO.Err, "idemkey: no records")
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tSTATE\tATTEMPT\tEXIT\tTASK\tTOOL\tSTARTED\tENDED")
	for _, r := range recs {
		exit := "-"
		if r.ExitCode != ledger.NoExit {
			exit = strconv.Itoa(r.ExitCode)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", shownText(r.Key), r.State, r.Attempt, exit, shownText(r.Task), shownText(r.Tool), cli.Stamp(r.StartedAt), cli.Stamp(r.EndedAt))
	}
	return tw.Flush()
}

// listEffective lists the records flt selects, each as a run would see it
// (effective), with the state each has in the store: a state filter is
// applied to the effective state, so --state unknown lists a running
// record whose holder is gone, and --state running does not.
func listEffective(ctx context.Context, s ledger.Store, flt ledger.Filter) ([]*ledger.Record, []ledger.State, error) {
	want := flt.State
	if want == ledger.Running || want == ledger.Unknown {
		flt.State = ""
	}
	all, err := s.List(ctx, flt)
	if err != nil {
		return nil, nil, err
	}
	var recs []*ledger.Record
	var recorded []ledger.State
	for _, r := range all {
		e := effective(s, r, ledger.LeaseExpired(r))
		if want == "" || e.State == want {
			recs, recorded = append(recs, e), append(recorded, r.State)
		}
	}
	return recs, recorded, nil
}

// shownText is a recorded text as a table shows it: as it is, or quoted
// when it holds a control character (a newline or an escape sequence in a
// task id must not break the table or reach the terminal).
func shownText(s string) string {
	if cli.PlainText(s) {
		return s
	}
	return strconv.Quote(s)
}

// notFound is the negative answer for a key without a record, with a
// hint naming the recorded keys that look like it (see similarKey).
func notFound(ctx context.Context, s ledger.Store, key string) error {
	err := &cli.HintedError{Msg: "no record for key " + key}
	if recs, lerr := s.List(ctx, ledger.Filter{}); lerr == nil {
		var like []string
		for _, r := range recs {
			if similarKey(key, r.Key) {
				like = append(like, shownText(r.Key))
			}
		}
		const most = 3
		switch n := len(like); {
		case n == 1:
			err.HintText = "a key is matched exactly; a recorded key looks like it: " + like[0]
		case n > most:
			err.HintText = fmt.Sprintf("a key is matched exactly; %d recorded keys look like it: %s, …", n, strings.Join(like[:most], ", "))
		case n > 1:
			err.HintText = fmt.Sprintf("a key is matched exactly; %d recorded keys look like it: %s", n, strings.Join(like, ", "))
		}
	}
	return &cli.CodeError{Code: cli.ExitNegative, Err: err}
}

// similarKey reports whether a recorded key looks like the one given
// (spaces around it ignored): it holds the given text, ignoring case (an
// abridged key, one without its --prefix, or upper-case); it starts and
// ends as a key abridged with an ellipsis does ("fbc7…002c",
// "fbc7...002c"); or both encode the same digest in any --format and
// with any --prefix.
func similarKey(given, recorded string) bool {
	given = strings.TrimSpace(given) // pasted with a space or a newline
	g, r := strings.ToLower(given), strings.ToLower(recorded)
	if len(g) >= 4 && strings.Contains(r, g) {
		return true
	}
	for _, dots := range []string{"…", "..."} {
		if head, tail, ok := strings.Cut(g, dots); ok && len(head)+len(tail) >= 4 &&
			strings.HasPrefix(r, head) && strings.HasSuffix(r[len(head):], tail) {
			return true
		}
	}
	gd, gu, ok1 := keyDigest(given)
	rd, ru, ok2 := keyDigest(recorded)
	if !ok1 || !ok2 {
		return false
	}
	if gu || ru {
		// A uuid holds the digest's first 16 bytes, with version and
		// variant bits set.
		a, b := [16]byte(gd[:16]), [16]byte(rd[:16])
		for _, u := range []*[16]byte{&a, &b} {
			u[6] &= 0x0F
			u[8] &= 0x3F
		}
		return a == b
	}
	return bytes.Equal(gd, rd)
}

// keyDigest decodes the digest a formatted key ends with (after any
// prefix): 32 bytes of hex or base64url, or a uuid's 16 bytes.
func keyDigest(key string) (digest []byte, isUUID, ok bool) {
	if len(key) >= 64 {
		if d, err := hex.DecodeString(key[len(key)-64:]); err == nil {
			return d, false, true
		}
	}
	if len(key) >= 36 {
		u := key[len(key)-36:]
		if u[8] == '-' && u[13] == '-' && u[18] == '-' && u[23] == '-' {
			if d, err := hex.DecodeString(strings.ReplaceAll(u, "-", "")); err == nil {
				return d, true, true
			}
		}
	}
	if len(key) >= 43 {
		if d, err := base64.RawURLEncoding.DecodeString(key[len(key)-43:]); err == nil && len(d) == 32 {
			return d, false, true
		}
	}
	return nil, false, false
}

func (opts *Options) show(key string, stdout, stderr bool) error {
	ctx := context.Background()
	s, err := opts.open(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	stored, expired, err := s.Get(ctx, key)
	if err != nil {
		return err
	}
	if stored == nil {
		return notFound(ctx, s, key)
	}
	r := effective(s, stored, expired)
	ios := opts.f.IO
	if stdout || stderr {
		name, out := "stdout", r.Stdout
		if stderr {
			name, out = "stderr", r.Stderr
		}
		return opts.showStream(r, stored.State, name, out)
	}
	if opts.JSON {
		o := &cli.JSONObject{}
		recordJSON(o, r, stored.State, opts.Retain)
		_, err := ios.Out.Write(o.Line())
		return err
	}
	tw := tabwriter.NewWriter(ios.Out, 0, 4, 1, ' ', 0)
	exit := "-"
	if r.ExitCode != ledger.NoExit {
		exit = strconv.Itoa(r.ExitCode)
	}
	fmt.Fprintf(tw, "key:\t%s\n", shownText(r.Key))
	if r.State != stored.State {
		fmt.Fprintf(tw, "state:\t%s (recorded %s)\n", r.State, stored.State)
	} else {
		fmt.Fprintf(tw, "state:\t%s\n", r.State)
	}
	fmt.Fprintf(tw, "attempt:\t%d\n", r.Attempt)
	fmt.Fprintf(tw, "task:\t%s\n", shownText(r.Task))
	fmt.Fprintf(tw, "tool:\t%s\n", shownText(r.Tool))
	fmt.Fprintf(tw, "kind:\t%s\n", r.Kind)
	fmt.Fprintf(tw, "exit code:\t%s\n", exit)
	fmt.Fprintf(tw, "holder:\t%s\n", shownText(r.Holder))
	fmt.Fprintf(tw, "started:\t%s\n", cli.Stamp(r.StartedAt))
	fmt.Fprintf(tw, "ended:\t%s\n", cli.Stamp(r.EndedAt))
	if !r.LeaseUntil.IsZero() && r.State == ledger.Running {
		fmt.Fprintf(tw, "lease until:\t%s\n", cli.Stamp(r.LeaseUntil))
	}
	if r.Reason != "" {
		fmt.Fprintf(tw, "reason:\t%s\n", shownText(r.Reason))
	}
	showOutputs(tw, r)
	if ledger.Expired(r, opts.Retain, time.Now()) {
		fmt.Fprintf(tw, "expired:\tyes (older than the retention, %s)\n", opts.f.Config.GetString("retain"))
	}
	return tw.Flush()
}

// showOutputs writes show's lines for the record's streams.
func showOutputs(tw io.Writer, r *ledger.Record) {
	for _, o := range []struct {
		name string
		out  ledger.Output
	}{{"stdout", r.Stdout}, {"stderr", r.Stderr}} {
		t := ""
		if o.out.Truncated {
			t = fmt.Sprintf(" (truncated: %d bytes kept)", len(o.out.Data))
		}
		switch {
		case o.out.SHA256 == "" && r.Kind == "post" && o.name == "stderr":
			fmt.Fprintf(tw, "%s:\tnone (post records the response's body as stdout)\n", o.name)
			continue
		case o.out.SHA256 == "":
			fmt.Fprintf(tw, "%s:\tnot recorded\n", o.name)
			continue
		}
		fmt.Fprintf(tw, "%s:\t%d bytes, sha256 %s%s\n", o.name, o.out.Length, o.out.SHA256, t)
	}
}

// showStream prints a recorded stream's bytes as they are, and says on
// stderr when they are not the whole stream: a stream past the cap kept
// its first bytes only; an attempt whose holder died before recording its
// outcome (a record running, or unknown from it) has no stream at all,
// which is a negative answer, not an empty output.
func (opts *Options) showStream(r *ledger.Record, recorded ledger.State, name string, out ledger.Output) error {
	if out.SHA256 == "" {
		why := fmt.Sprintf("its attempt %d ended without its output recorded (state %s)", r.Attempt, r.State)
		switch {
		case r.Kind == "post" && name == "stderr":
			why = "post records the response's body (--stdout), no stderr"
		case r.State == ledger.Running:
			why = fmt.Sprintf("its attempt %d is running: its output is recorded when it ends", r.Attempt)
		case recorded == ledger.Running:
			why = fmt.Sprintf("its attempt %d's holder is gone, and never recorded its output (%s)", r.Attempt, r.Reason)
		}
		return &cli.CodeError{Code: cli.ExitNegative, Err: fmt.Errorf("%s has no recorded %s: %s", shownText(r.Key), name, why)}
	}
	if _, err := opts.f.IO.Out.Write(out.Data); err != nil {
		return err
	}
	if out.Truncated {
		fmt.Fprintf(opts.f.IO.Err, "idemkey: the recorded %s was truncated: printed %d of its %d bytes (sha256 %s)\n", name, len(out.Data), out.Length, out.SHA256)
	}
	return nil
}

// maxResolveOutput bounds a stream attached by ledger resolve: it is held
// in memory, and written in the record.
const maxResolveOutput = 64 << 20

// resolveRequest reads resolve's flags: --as, --reason, and what a replay
// returns (--stdout, --stderr, --exit-code).
func (opts *Options) resolveRequest(cmd *cobra.Command, key string) (ledger.ResolveRequest, error) {
	fl := cmd.Flags()
	asFlag, _ := fl.GetString("as")
	req := ledger.ResolveRequest{Key: key, As: ledger.State(asFlag)}
	if asFlag == "" {
		return req, &cli.UsageError{Err: errors.New("resolve needs --as succeeded or --as failed"),
			HintText: "check with the owner whether the effect happened: --as succeeded replays the record from now on, --as failed lets the next run try again"}
	}
	if req.As != ledger.Succeeded && req.As != ledger.Failed {
		return req, cli.Usagef("--as must be succeeded or failed, not %q", req.As)
	}
	req.Reason, _ = fl.GetString("reason")
	if fl.Changed("exit-code") {
		code, _ := fl.GetInt("exit-code")
		switch {
		case req.As == ledger.Succeeded && code != 0:
			return req, &cli.UsageError{Err: fmt.Errorf("--exit-code %d with --as succeeded: a succeeded step exits 0", code),
				HintText: "a step that exited with an error status is resolved --as failed"}
		case req.As == ledger.Failed && (code < 1 || code > 255):
			return req, cli.Usagef("--exit-code %d with --as failed: want 1 to 255", code)
		}
		req.ExitCode = &code
	}
	stdinUsed := false
	for _, o := range []struct {
		flag string
		out  **ledger.Output
	}{{"stdout", &req.Stdout}, {"stderr", &req.Stderr}} {
		name, _ := fl.GetString(o.flag)
		if !fl.Changed(o.flag) {
			continue
		}
		if name == "-" || name == "" {
			if stdinUsed {
				return req, cli.Usagef("--stdout and --stderr cannot both read standard input (-)")
			}
			stdinUsed = true
		}
		data, display, err := input.Read(opts.f, name)
		if err != nil {
			return req, err
		}
		if len(data) > maxResolveOutput {
			return req, cli.Usagef("--%s %s: %d bytes, more than a record holds here (%d MiB)", o.flag, display, len(data), maxResolveOutput>>20)
		}
		sum := sha256.Sum256(data)
		*o.out = &ledger.Output{Data: data, Length: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}
	}
	return req, nil
}

func (opts *Options) resolve(req ledger.ResolveRequest) error {
	ctx := context.Background()
	s, err := opts.open(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	key := req.Key
	if err := checkResolvable(ctx, s, req); err != nil {
		return err
	}
	var r *ledger.Record
	err = withLock(s, key, func(locked bool) error {
		var err error
		req.LocallyLocked = locked
		req.HolderAlive = stores.HolderCheck(s)
		r, err = ledger.Resolve(ctx, s, req)
		return err
	})
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return notFound(ctx, s, key)
	case errors.Is(err, ledger.ErrBusy):
		return &cli.CodeError{Code: cli.ExitNegative, Err: fmt.Errorf("%s is running: its holder is alive", key)}
	case errors.Is(err, errLockHeld):
		return inProgress(key, "resolved")
	case errors.Is(err, ledger.ErrNotUnknown):
		return &cli.CodeError{Code: cli.ExitNegative, Err: fmt.Errorf("%s is %s, not unknown: only an unknown outcome can be resolved", key, r.State)}
	case err != nil:
		return err
	}
	if opts.JSON {
		o := &cli.JSONObject{}
		recordJSON(o, r, r.State, opts.Retain)
		_, err := opts.f.IO.Out.Write(o.Line())
		return err
	}
	next := "later runs replay it"
	if req.As == ledger.Failed {
		next = "the next run tries again"
	}
	if req.As == ledger.Succeeded && !hasOutput(r) {
		next += ", with no output (--stdout FILE attaches what a replay prints)"
	}
	fmt.Fprintf(opts.f.IO.Err, "idemkey: resolved %s as %s (attempt %d): %s\n", key, req.As, r.Attempt, next)
	return nil
}

// checkResolvable refuses what a later call of a post record could not
// replay: post replays a succeeded record's saved response (status,
// headers and body), which resolve cannot attach.
func checkResolvable(ctx context.Context, s ledger.Store, req ledger.ResolveRequest) error {
	r, _, err := s.Get(ctx, req.Key)
	if err != nil || r == nil || r.Kind != "post" {
		return err
	}
	key := shownText(req.Key)
	if req.Stdout != nil || req.Stderr != nil || req.ExitCode != nil {
		return &cli.UsageError{Err: fmt.Errorf("%s is a post: --stdout, --stderr and --exit-code attach what a run replays", key),
			HintText: "post replays the response it saved; --as failed lets the next post send the request again with the same key"}
	}
	if req.As == ledger.Succeeded && len(r.Meta) == 0 {
		return &cli.CodeError{Code: cli.ExitNegative, Err: &cli.HintedError{
			Msg:      fmt.Sprintf("%s is a post with no saved response: as succeeded, post would have nothing to replay", key),
			HintText: "--as failed lets the next post send the request again with the same key (the owner dedupes by it); or forget the record",
		}}
	}
	return nil
}

// errForgetUnknown: forget of an unknown outcome without --yes.
var errForgetUnknown = errors.New("the record's outcome is unknown")

// inProgress refuses to settle a key whose lock another process holds.
func inProgress(key, what string) error {
	return &cli.CodeError{Code: cli.ExitNegative, Err: &cli.HintedError{
		Msg:      fmt.Sprintf("%s is running: its holder is alive (%v); it cannot be %s while it runs", shownText(key), errLockHeld, what),
		HintText: "wait for it to end ('idemkey run --wait' waits for a key), then look again with 'idemkey ledger show'",
	}}
}

// hasOutput reports whether a record holds any output to replay.
func hasOutput(r *ledger.Record) bool { return r.Stdout.Length > 0 || r.Stderr.Length > 0 }

// resolvedReplayNote is the note a replay of rec prints on standard error
// (after its "replayed" line, for run), or "": a record settled by ledger
// resolve that holds no output replays nothing, which a reader of the
// step's output would take for the step's own silence.
// ledger.Resolve's reasons start with "resolved as".
func resolvedReplayNote(key string, rec *ledger.Record) string {
	if rec == nil || !strings.HasPrefix(rec.Reason, "resolved as ") || hasOutput(rec) {
		return ""
	}
	return fmt.Sprintf("%s was settled by hand (%s) and holds no output: the replay prints nothing", shownText(key), shownText(rec.Reason))
}

func (opts *Options) forget(key string, dryRun, yes bool) error {
	ctx := context.Background()
	s, err := opts.open(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	var ok bool
	var found *ledger.Record
	err = withLock(s, key, func(locked bool) error {
		stored, expired, err := s.Get(ctx, key)
		if err != nil {
			return err
		}
		// Under the key's lock (or on a lease store): its holder is dead
		// if the store does not vouch for it.
		found = ledger.Effective(stored, expired, !expired && locked && !holderAlive(s, stored))
		if found == nil {
			return nil
		}
		if found.State == ledger.Unknown && !yes {
			return errForgetUnknown
		}
		if dryRun {
			if found.State == ledger.Running {
				return ledger.ErrBusy
			}
			ok = true
			return nil
		}
		ok, err = ledger.Forget(ctx, s, ledger.ForgetRequest{Key: key, LocallyLocked: locked, HolderAlive: stores.HolderCheck(s)})
		return err
	})
	if errors.Is(err, errForgetUnknown) {
		return &cli.CodeError{Code: cli.ExitNegative, Err: &cli.HintedError{
			Msg: fmt.Sprintf("%s is unknown (attempt %d: %s): forgetting it lets the next run run the step again, twice if the attempt made its effect",
				shownText(key), found.Attempt, shownText(found.Reason)),
			HintText: fmt.Sprintf("check with the owner, then settle it: idemkey ledger resolve %s --as succeeded or --as failed; --yes forgets it all the same", shownText(key)),
		}}
	}
	if dryRun && err == nil && ok {
		if opts.JSON {
			o := (&cli.JSONObject{}).Str("key", key).Bool("forgotten", false).Bool("dry_run", true).Str("state", string(found.State)).Int("attempt", int(found.Attempt))
			_, err := opts.f.IO.Out.Write(o.Line())
			return err
		}
		fmt.Fprintf(opts.f.IO.Err, "idemkey: would forget %s (%s, attempt %d); nothing removed (--dry-run)\n", shownText(key), found.State, found.Attempt)
		return nil
	}
	if errors.Is(err, ledger.ErrBusy) {
		return &cli.CodeError{Code: cli.ExitNegative, Err: fmt.Errorf("%s is running: its holder is alive", key)}
	}
	if errors.Is(err, errLockHeld) {
		return inProgress(key, "forgotten")
	}
	if err != nil {
		return err
	}
	if kl, isKL := s.(stores.KeyLocker); isKL {
		_ = kl.RemoveLock(key)
	}
	if !ok {
		return notFound(ctx, s, key)
	}
	if opts.JSON {
		o := (&cli.JSONObject{}).Str("key", key).Bool("forgotten", true)
		_, err := opts.f.IO.Out.Write(o.Line())
		return err
	}
	fmt.Fprintf(opts.f.IO.Err, "idemkey: forgot %s\n", key)
	return nil
}

// gc removes the records older than olderThan; byRetention: olderThan is
// the retention, and 0 means records are kept for ever.
func (opts *Options) gc(olderThan time.Duration, byRetention bool) error {
	if byRetention && olderThan <= 0 {
		if opts.JSON {
			_, err := fmt.Fprintf(opts.f.IO.Out, "{\"removed\":0}\n")
			return err
		}
		fmt.Fprintf(opts.f.IO.Err, "idemkey: the retention (%s) is 0, records are kept for ever: nothing removed (give --older-than to remove old records)\n", opts.f.Config.Source("retain"))
		return nil
	}
	ctx := context.Background()
	s, err := opts.open(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	kl, isKL := s.(stores.KeyLocker)
	// Running and unknown records are never collected (ledger.GC).
	req := ledger.GCRequest{OlderThan: olderThan}
	before, err := s.List(ctx, ledger.Filter{})
	if err != nil {
		return err
	}
	n, err := ledger.GC(ctx, s, req)
	if err != nil {
		return err
	}
	if cp, ok := s.(ledger.Checkpointer); ok {
		// Copy the records into the file itself (SQLite's WAL).
		if err := cp.Checkpoint(ctx); err != nil {
			fmt.Fprintf(opts.f.IO.Err, "idemkey: warning: %v\n", err)
		}
	}
	if isKL {
		after, err := s.List(ctx, ledger.Filter{})
		if err == nil {
			left := map[string]bool{}
			for _, r := range after {
				left[r.Key] = true
			}
			for _, r := range before {
				if !left[r.Key] {
					_ = kl.RemoveLock(r.Key)
				}
			}
		}
	}
	if opts.JSON {
		_, err := fmt.Fprintf(opts.f.IO.Out, "{\"removed\":%d}\n", n)
		return err
	}
	fmt.Fprintf(opts.f.IO.Err, "idemkey: removed %d %s older than %s\n", n, recordsWord(n), olderThan)
	return nil
}

func (opts *Options) init() error {
	ctx := context.Background()
	s, err := ledgeropts.Open(ctx, opts.f, opts.Ledger)
	if err != nil {
		return err
	}
	defer s.Close()
	if in, ok := s.(interface{ Init(context.Context) error }); ok {
		// A shared store that creates its table on request.
		if err := in.Init(ctx); err != nil {
			return err
		}
	}
	if cp, ok := s.(ledger.Checkpointer); ok {
		if err := cp.Checkpoint(ctx); err != nil {
			return err
		}
	}
	// The URL is redacted alone: a space in it may be a password's.
	desc := shownText(stores.Redact(opts.Ledger))
	if v, ok := s.(interface {
		Schema(context.Context) (int, error)
	}); ok {
		// Checked after Init: ready only when the ledger is there.
		n, err := v.Schema(ctx)
		if err != nil {
			return err
		}
		desc += fmt.Sprintf(" (schema version %d)", n)
	}
	if opts.JSON {
		// JSON text is UTF-8: a path's other bytes show as U+FFFD.
		o := (&cli.JSONObject{}).Str("ledger", strings.ToValidUTF8(stores.Redact(opts.Ledger), "\uFFFD"))
		_, err := opts.f.IO.Out.Write(o.Line())
		return err
	}
	fmt.Fprintf(opts.f.IO.Err, "idemkey: ledger ready: %s\n", desc)
	return nil
}

func recordsWord(n int) string {
	if n == 1 {
		return "record"
	}
	return "records"
}
