package run_test

import (
	"strings"
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/derive/ledger/testserver"
)

// TestPostgresErrorNamesLedgerOnce: an error met while creating the
// table on first use (a schema that does not exist) is one line that names
// the ledger once; it said "ledger at URL: ledger at URL: creating table".
func TestPostgresErrorNamesLedgerOnce(t *testing.T) {
	t.Parallel()
	url := testserver.Postgres(t) + "&table=no_such_schema.steps"
	if !strings.Contains(url, "?") {
		url = strings.Replace(url, "&table=", "?table=", 1)
	}
	fl := clitest.NewFleet(t, &clitest.Store{URL: url}, nil)
	step := fl.Script("step.sh", `echo x >> ran`)
	w := fl.Run("a", "run", "--task", "t", "--tool", "x", "--", step)
	if w.Code != cli.ExitRunFailed {
		t.Fatalf("exit %d, want 125:\n%s", w.Code, w.Stderr.String())
	}
	if len(fl.Lines("ran")) != 0 {
		t.Fatal("the command ran without its claim recorded")
	}
	errs := w.Stderr.String()
	if n := strings.Count(errs, "ledger at postgres://"); n != 1 || strings.Count(errs, "\n") != 1 ||
		!strings.HasPrefix(errs, "idemkey: error: ") || !strings.Contains(errs, `creating table "no_such_schema"."steps"`) || w.Stdout.Len() != 0 {
		t.Fatalf("want one error line naming the ledger once, got (%d times):\n%s", n, errs)
	}
}
