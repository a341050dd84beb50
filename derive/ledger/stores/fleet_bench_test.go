package stores

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkey/idemkey/derive/ledger"
)

// BenchmarkFleet is claims and completions per second through the
// library: W goroutines (1, 8, 32) of one process on one store, each
// step a fresh key: ledger.Hold (the claim, and for SQLite the key's
// kernel lock), then Complete. The ledger is IDEMKEY_BENCH_LEDGER
// (scripts/bench_fleet.sh starts the servers and sets it), or a SQLite
// file in a temporary directory. steps/s is the figure; ns/op is a step's
// share of the wall time.
func BenchmarkFleet(b *testing.B) {
	spec := os.Getenv("IDEMKEY_BENCH_LEDGER")
	if spec == "" {
		spec = filepath.Join(b.TempDir(), "ledger.db")
	}
	for _, w := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			ctx := context.Background()
			s, err := Open(ctx, spec, Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			locker, _ := s.(ledger.KeyLocker)
			prefix := fmt.Sprintf("bench-%d-%d-", time.Now().UnixNano(), w)
			var next atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, w)
			b.ResetTimer()
			start := time.Now()
			for range w {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
						if err := benchStep(ctx, s, locker, prefix+strconv.FormatInt(i, 10)); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			select {
			case err := <-errs:
				b.Fatal(err)
			default:
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "steps/s")
		})
	}
}

// benchStep claims key and records it succeeded.
func benchStep(ctx context.Context, s ledger.Store, locker ledger.KeyLocker, key string) error {
	h, err := ledger.Hold(ctx, s, ledger.HoldRequest{
		Claim:  ledger.ClaimRequest{Record: ledger.Record{Key: key, Task: "bench", Tool: "x", Kind: "run", Fingerprint: "f", Holder: "bench"}, Lease: 30 * time.Second},
		Locker: locker,
	})
	if err != nil {
		return err
	}
	if h.Action != ledger.ActRun {
		return fmt.Errorf("%s: %v, want a run", key, h.Action)
	}
	if c := h.Hold.Complete(ctx, ledger.Outcome{State: ledger.Succeeded}); c.Err != nil {
		return c.Err
	}
	return nil
}
