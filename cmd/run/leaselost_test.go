package run_test

import (
	"context"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/derive/ledger/stores"
)

// TestVerboseLeaseLostSaysWhose: the step's record removed while it runs:
// the hold is lost, the command killed, and -v's last line says the 76 is
// idemkey's (lease lost, the command killed), not the command's own.
func TestVerboseLeaseLostSaysWhose(t *testing.T) {
	t.Parallel()
	r := clitest.NewProcs(t)
	p := r.Start("run", "-v", "--lease", "30ms", "--task", "t", "--tool", "lost", "--", "sh", "-c", "echo $$ > step.pid; exec sleep 60")
	waitFor(t, "the step", func() bool { return alive(r.PidIn("step.pid")) })
	s, err := stores.Open(context.Background(), r.Ledger, stores.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if ok, err := s.Delete(context.Background(), r.OnlyKey(), nil); err != nil || !ok {
		t.Fatalf("delete: %v %v", ok, err)
	}
	p.Wait(t)
	if p.Code != 76 || !strings.Contains(p.Stderr.String(), "exit 76: idemkey's: lease lost, the command was killed; attempt 1 not recorded\n") {
		t.Fatalf("exit %d:\n%s", p.Code, p.Stderr.String())
	}
}
