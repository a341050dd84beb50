package run_test

import (
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
	runcmd "github.com/idemkey/idemkey/cmd/run"
	"github.com/idemkey/idemkey/derive/ledger"
)

// runView is what a test checks of run's options.
type runView struct {
	Task, Tool          string
	Wait, Lease, Retain time.Duration
	MaxOutput           int64
	ReplayFailed, Quiet bool
	Recover             ledger.Policy
	Command             []string
}

// TestRunOptions: run's flags, IDEMKEY_* variables and config file become
// its options (read through NewCmd's runF seam: no ledger opened, nothing
// run), with the defaults the README gives (retain 7 days, 1 MiB of output
// a stream); the command after -- is the step's, its own flags included; a bad
// value exits 125 before anything runs.
func TestRunOptions(t *testing.T) {
	view := func(o *runcmd.Options) runView {
		return runView{Task: o.Spec.Task, Tool: o.Spec.Tool, Wait: o.Wait, Lease: o.Lease, Retain: o.Retain,
			MaxOutput: o.MaxOutput, ReplayFailed: o.ReplayFailed, Quiet: o.Quiet, Recover: o.Recover, Command: o.Command}
	}
	clitest.CheckOptions(t, runcmd.NewCmd, view, []clitest.OptionsCase[runView]{
		{Name: "flags and variables", Env: map[string]string{"IDEMKEY_WAIT": "10s", "IDEMKEY_RECOVER": "retry"},
			Args: []string{"run", "--task", "t-1", "--tool", "deploy", "--lease", "45s", "--retain", "2d", "--max-output", "2MiB",
				"--replay-failed", "-q", "--", "./deploy.sh", "--wait", "prod"},
			Want: runView{Task: "t-1", Tool: "deploy", Wait: 10 * time.Second, Lease: 45 * time.Second, Retain: 48 * time.Hour,
				MaxOutput: 2 << 20, ReplayFailed: true, Quiet: true, Recover: ledger.RecoverRetry, Command: []string{"./deploy.sh", "--wait", "prod"}}},
		{Name: "a config file and its tool's section", Config: "lease: 90s\ntools:\n  deploy:\n    recover: retry\n",
			Args: []string{"run", "--task", "t", "--tool", "deploy", "--", "true"},
			Want: runView{Task: "t", Tool: "deploy", Lease: 90 * time.Second, Retain: 7 * 24 * time.Hour, MaxOutput: 1 << 20, Recover: ledger.RecoverRetry, Command: []string{"true"}}},
		{Name: "a lease under 3ms", Args: []string{"run", "--task", "t", "--tool", "x", "--lease", "1ms", "--", "true"}, Code: 125, Stderr: "lease"},
	})
}
