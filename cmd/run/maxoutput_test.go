package run_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/cmd/internal/step"
)

// TestRunMaxOutputAtTheCap: a step whose two streams both fill the largest
// --max-output is recorded in full and replayed on every store. At the
// former cap (256MiB a stream) PostgreSQL's completion failed with "message
// body too large" (pgx sends a bytea as hex, in one message of at most
// 1 GiB): the command had run, and the record was left to go unknown.
func TestRunMaxOutputAtTheCap(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 2 x 128MiB through each store")
	}
	t.Parallel()
	n := step.MaxRecordedOutput
	check := func(t *testing.T, s *clitest.Store) {
		fl := clitest.NewFleet(t, s, nil)
		for i := range 2 {
			c := exec.Command(fl.Bin, "run", "--task", "t-cap", "--tool", "big", "--max-output", fmt.Sprint(n), "--",
				"sh", "-c", fmt.Sprintf("echo ran >> ran; head -c %d /dev/zero; head -c %d /dev/zero >&2", n, n))
			c.Dir, c.Env = fl.Dir, append(slices.Clip(fl.Env), "XDG_STATE_HOME="+filepath.Join(fl.Dir, "state"))
			var out, errs zeros
			c.Stdout, c.Stderr = &out, &errs
			err := c.Run()
			said := errs.other.String() // what idemkey says, without the command's NUL bytes
			if err != nil || out.n != n || out.other.Len() != 0 || errs.n != n {
				t.Fatalf("run %d: %v, stdout %d NUL bytes (+%d others), stderr %d (want %d each): %s", i+1, err, out.n, out.other.Len(), errs.n, n, said)
			}
			if strings.Contains(said, "warning") || strings.Contains(said, "truncated") || (i == 1) != strings.Contains(said, "replayed") {
				t.Fatalf("run %d: %q", i+1, said)
			}
		}
		if ran, _ := os.ReadFile(filepath.Join(fl.Dir, "ran")); string(ran) != "ran\n" {
			t.Fatalf("the command ran %q", ran)
		}
	}
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		check(t, &clitest.Store{URL: filepath.Join(t.TempDir(), "ledger.db")})
	})
	clitest.EachStore(t, check)
}

// zeros counts the NUL bytes written to it and keeps the others.
type zeros struct {
	n     int
	other bytes.Buffer
}

func (z *zeros) Write(p []byte) (int, error) {
	n := bytes.Count(p, []byte{0})
	z.n += n
	if n < len(p) {
		for _, b := range p {
			if b != 0 {
				z.other.WriteByte(b)
			}
		}
	}
	return len(p), nil
}
