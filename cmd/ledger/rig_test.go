package ledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/idemkey/idemkey/derive/ledger/stores"
)

// rig is a clitest.Procs whose SQLite ledger the test opens too.
type rig struct {
	*clitest.Procs
	store ledger.Store
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{Procs: clitest.NewProcs(t)}
	var err error
	if r.store, err = stores.Open(context.Background(), r.Ledger, stores.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.store.Close() })
	return r
}

type result struct {
	code           int
	stdout, stderr string
}

// run runs idemkey with args and waits for it.
func (r *rig) run(args ...string) result {
	r.T.Helper()
	p := r.Run(args...)
	return result{p.Code, p.Stdout.String(), p.Stderr.String()}
}

// put writes a record of key in state (attempt 1, ended now).
func (r *rig) put(key string, state ledger.State) {
	r.T.Helper()
	rec := &ledger.Record{Key: key, Task: "t1", Tool: "x", Kind: "run", Fingerprint: "f", Request: []byte("{}"),
		State: state, Attempt: 1, Holder: "h pid 1", ExitCode: 137, Reason: "killed by signal 9 (killed)",
		StartedAt: time.Now(), EndedAt: time.Now()}
	if ok, err := r.store.Insert(context.Background(), rec, time.Minute); err != nil || !ok {
		r.T.Fatalf("insert %s: %v %v", key, ok, err)
	}
}

// lock takes key's kernel lock in this process, as a step's process
// holding it; unlock lets it go.
func (r *rig) lock(key string) (unlock func()) {
	r.T.Helper()
	f, err := r.store.(stores.KeyLocker).LockKey(key)
	if err != nil {
		r.T.Fatal(err)
	}
	return func() { f.Close() }
}
