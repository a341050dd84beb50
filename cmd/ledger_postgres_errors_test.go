package cmd

import (
	"strings"
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/derive/ledger/testserver"
)

// TestPostgresErrorNamesLedgerOnce: an error met while creating the
// table on first use (a schema that does not exist) is one line that names
// the ledger once; it said "ledger at URL: ledger at URL: creating table".
func TestPostgresErrorNamesLedgerOnce(t *testing.T) {
	url := testserver.Postgres(t) + "&table=no_such_schema.steps"
	if !strings.Contains(url, "?") {
		url = strings.Replace(url, "&table=", "?table=", 1)
	}
	fl := newFleet(t, &fleetStore{url: url}, nil)
	step := fl.script("step.sh", `echo x >> ran`)
	w := fl.run("a", "run", "--task", "t", "--tool", "x", "--", step)
	if w.code != cli.ExitRunFailed {
		t.Fatalf("exit %d, want 125:\n%s", w.code, w.stderr.String())
	}
	if len(fl.lines("ran")) != 0 {
		t.Fatal("the command ran without its claim recorded")
	}
	errs := w.stderr.String()
	if n := strings.Count(errs, "ledger at postgres://"); n != 1 || strings.Count(errs, "\n") != 1 ||
		!strings.HasPrefix(errs, "idemkey: error: ") || !strings.Contains(errs, `creating table "no_such_schema"."steps"`) || w.stdout.Len() != 0 {
		t.Fatalf("want one error line naming the ledger once, got (%d times):\n%s", n, errs)
	}
}
