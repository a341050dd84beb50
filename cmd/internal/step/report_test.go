package step

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/idemkey/idemkey/derive/ledger/stores"
	"github.com/idemkey/idemkey/derive/ledger/testserver"
)

func TestMain(m *testing.M) { os.Exit(testserver.Main(m)) }

// TestLossLineStoreAnswered: a hold whose renewals the ledger refuses (a
// role that lost UPDATE on the table mid-step) is lost after a lease, and
// the line says the ledger answered with an error, and which; not that it
// did not answer.
func TestLossLineStoreAnswered(t *testing.T) {
	url := testserver.Postgres(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	s0, err := stores.Open(ctx, url, stores.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s0.(interface{ Init(context.Context) error }).Init(ctx); err != nil {
		t.Fatal(err)
	}
	s0.Close()
	if _, err := admin.Exec(ctx, `CREATE ROLE lossline LOGIN; GRANT SELECT, INSERT, UPDATE, DELETE ON idemkey_ledger, idemkey_ledger_attempts TO lossline`); err != nil {
		t.Fatal(err)
	}
	s, err := stores.Open(ctx, strings.Replace(url, "postgres@", "lossline@", 1), stores.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const lease = 900 * time.Millisecond
	h, err := ledger.Hold(ctx, s, ledger.HoldRequest{Claim: ledger.ClaimRequest{
		Record: ledger.Record{Key: "k", Task: "t", Tool: "x", Kind: "run", Fingerprint: "fp", Holder: "test"}, Lease: lease}})
	if err != nil || h.Action != ledger.ActRun {
		t.Fatalf("claim: %+v %v", h, err)
	}
	defer h.Hold.Close()
	if _, err := admin.Exec(ctx, `REVOKE UPDATE ON idemkey_ledger FROM lossline`); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Hold.Lost():
	case <-time.After(time.Minute):
		t.Fatal("the hold was never lost")
	}
	line := LossLine(ctx, s, h.Hold, "k", lease)
	if !strings.Contains(line, "lease lost: the ledger answered every renewal with an error for a whole lease (900ms): ") ||
		!strings.Contains(line, "permission denied") || strings.Contains(line, "did not answer") {
		t.Fatalf("loss line %q", line)
	}
}
