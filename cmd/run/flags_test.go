package run_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/clitest"
	runcmd "github.com/idemkey/idemkey/cmd/run"
	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/spf13/cobra"
)

// TestRunOptions: run's flags and IDEMKEY_* variables become its options
// (read through NewCmd's runF seam: no ledger opened, nothing run); the
// command after -- is the step's, its own flags included; a bad value
// exits 125 before anything runs.
func TestRunOptions(t *testing.T) {
	var got *runcmd.Options
	build := func(f *cli.Factory) *cobra.Command {
		return runcmd.NewCmd(f, func(o *runcmd.Options) error { got = o; return nil })
	}
	env := map[string]string{"IDEMKEY_WAIT": "10s", "IDEMKEY_RECOVER": "retry"}
	o := clitest.Streams{Env: env}.RunFace(t, "run", build, "run", "--task", "t-1", "--tool", "deploy",
		"--lease", "45s", "--retain", "2d", "--max-output", "2MiB", "--replay-failed", "-q", "--", "./deploy.sh", "--wait", "prod")
	if o.Code != 0 || got == nil {
		t.Fatalf("exit %d, runF called: %v\n%s", o.Code, got != nil, o.Stderr)
	}
	if got.Spec.Task != "t-1" || got.Spec.Tool != "deploy" || got.Wait != 10*time.Second || got.Lease != 45*time.Second ||
		got.Retain != 48*time.Hour || got.MaxOutput != 2<<20 || !got.ReplayFailed || !got.Quiet ||
		got.Recover != ledger.RecoverRetry || !reflect.DeepEqual(got.Command, []string{"./deploy.sh", "--wait", "prod"}) {
		t.Fatalf("options: %+v", *got)
	}
	got = nil
	o = clitest.Streams{}.RunFace(t, "run", build, "run", "--task", "t", "--tool", "x", "--lease", "1ms", "--", "true")
	if o.Code != 125 || got != nil || !strings.Contains(o.Stderr, "lease") {
		t.Fatalf("a lease under 3ms: exit %d, runF called: %v\n%s", o.Code, got != nil, o.Stderr)
	}
}
