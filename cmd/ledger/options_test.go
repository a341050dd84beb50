package ledger_test

import (
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/cmd/ledger"
)

// ledgerView is what a test checks of a ledger subcommand's options: which
// subcommand, the shared settings, and its own.
type ledgerView struct {
	Sub         string
	Ledger      string
	JSON        bool
	Retain      time.Duration
	Key         string
	Keys        []string
	Task, State string // ls's filter
	Stdout      bool   // show --stdout
	As, Reason  string // resolve's request
	Attached    string // what resolve --stdout attached
	DryRun, Yes bool
	All         bool
	OlderThan   time.Duration
	ByRetention bool
	Lease       time.Duration
}

// TestLedgerOptions: each ledger subcommand's flags, arguments, IDEMKEY_*
// variables and config file become its options through NewCmd's one runF
// seam, no ledger opened: the shared settings (the ledger, --json, the
// retention) and the subcommand's own; an unknown --state is refused
// before anything runs.
func TestLedgerOptions(t *testing.T) {
	view := func(s ledger.Sub) ledgerView {
		var v ledgerView
		var shared *ledger.Options
		switch o := s.(type) {
		case *ledger.LsOptions:
			v = ledgerView{Sub: "ls", Task: o.Filter.Task, State: string(o.Filter.State)}
			shared = o.Options
		case *ledger.ShowOptions:
			v = ledgerView{Sub: "show", Key: o.Key, Stdout: o.Stdout}
			shared = o.Options
		case *ledger.ResolveOptions:
			r := o.Request
			v = ledgerView{Sub: "resolve", Key: r.Key, As: string(r.As), Reason: r.Reason}
			if r.Stdout != nil {
				v.Attached = string(r.Stdout.Data)
			}
			shared = o.Options
		case *ledger.ForgetOptions:
			v = ledgerView{Sub: "forget", Key: o.Key, DryRun: o.DryRun, Yes: o.Yes}
			shared = o.Options
		case *ledger.GCOptions:
			v = ledgerView{Sub: "gc", OlderThan: o.OlderThan, ByRetention: o.ByRetention}
			shared = o.Options
		case *ledger.InitOptions:
			v = ledgerView{Sub: "init"}
			shared = o.Options
		case *ledger.ReconcileOptions:
			return ledgerView{Sub: "reconcile", Ledger: o.Ledger, JSON: o.JSON, Keys: o.Keys, All: o.All, DryRun: o.DryRun, Lease: o.Lease}
		}
		v.Ledger, v.JSON, v.Retain = shared.Ledger, shared.JSON, shared.Retain
		return v
	}
	week := 7 * 24 * time.Hour
	clitest.CheckOptions(t, ledger.NewCmd, view, []clitest.OptionsCase[ledgerView]{
		{Name: "ls", Args: []string{"ledger", "ls", "--ledger", "/srv/l.db", "--task", "t-1", "--state", "unknown", "--json"},
			Want: ledgerView{Sub: "ls", Ledger: "/srv/l.db", JSON: true, Retain: week, Task: "t-1", State: "unknown"}},
		{Name: "show, the ledger from a variable, the retention from the config file", Env: map[string]string{"IDEMKEY_LEDGER": "postgres://db/ops"},
			Config: "retain: 3d\n", Args: []string{"ledger", "show", "--stdout", "--", "-k1"},
			Want: ledgerView{Sub: "show", Ledger: "postgres://db/ops", Retain: 72 * time.Hour, Key: "-k1", Stdout: true}},
		{Name: "resolve, a replay's output from standard input", Stdin: "ch_3Nv0\n",
			Args: []string{"ledger", "resolve", "k2", "--as", "succeeded", "--stdout", "-", "--reason", "charge found", "--ledger", "/srv/l.db"},
			Want: ledgerView{Sub: "resolve", Ledger: "/srv/l.db", Retain: week, Key: "k2", As: "succeeded", Reason: "charge found", Attached: "ch_3Nv0\n"}},
		{Name: "forget, the default ledger", Env: map[string]string{"XDG_STATE_HOME": "/state"}, Args: []string{"ledger", "forget", "k3", "--dry-run", "--yes"},
			Want: ledgerView{Sub: "forget", Ledger: "/state/idemkey/ledger.db", Retain: week, Key: "k3", DryRun: true, Yes: true}},
		{Name: "gc by the retention", Env: map[string]string{"IDEMKEY_RETAIN": "2d", "IDEMKEY_LEDGER": "/srv/l.db"}, Args: []string{"ledger", "gc"},
			Want: ledgerView{Sub: "gc", Ledger: "/srv/l.db", Retain: 48 * time.Hour, OlderThan: 48 * time.Hour, ByRetention: true}},
		{Name: "gc older than", Env: map[string]string{"IDEMKEY_LEDGER": "/srv/l.db"}, Args: []string{"ledger", "gc", "--older-than", "5d", "--json"},
			Want: ledgerView{Sub: "gc", Ledger: "/srv/l.db", JSON: true, Retain: week, OlderThan: 120 * time.Hour}},
		{Name: "init", Args: []string{"ledger", "init", "--ledger", "redis://127.0.0.1:6379/0"},
			Want: ledgerView{Sub: "init", Ledger: "redis://127.0.0.1:6379/0", Retain: week}},
		{Name: "reconcile", Env: map[string]string{"IDEMKEY_LEDGER": "/srv/l.db", "IDEMKEY_LEASE": "20s"},
			Args: []string{"ledger", "reconcile", "k4", "k5", "--reconcile", "./exists.sh", "--dry-run", "--json"},
			Want: ledgerView{Sub: "reconcile", Ledger: "/srv/l.db", JSON: true, Keys: []string{"k4", "k5"}, DryRun: true, Lease: 20 * time.Second}},
		{Name: "unknown state", Args: []string{"ledger", "ls", "--state", "lost"}, Code: 2, Stderr: `invalid --state "lost"`},
	})
}
