package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/idemkey/idemkey/derive/ledger"
)

// BenchmarkOpenClose is what every idemkey run pays before and after its
// step: opening the file (pragmas, schema check) and closing it.
func BenchmarkOpenClose(b *testing.B) {
	path := filepath.Join(b.TempDir(), "ledger.db")
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	s.Close()
	for b.Loop() {
		s, err := Open(context.Background(), path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := s.Get(context.Background(), "k"); err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

// BenchmarkStep is one step's ledger work on an open file: claim (get,
// insert) and complete.
func BenchmarkStep(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "ledger.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	i := 0
	for b.Loop() {
		i++
		d, err := ledger.Claim(ctx, s, ledger.ClaimRequest{Record: ledger.Record{Key: fmt.Sprint(i), Task: "t", Tool: "x", Kind: "run", Fingerprint: "f"}, LocallyLocked: true})
		if err != nil {
			b.Fatal(err)
		}
		r := *d.Record
		r.State, r.ExitCode, r.EndedAt = ledger.Succeeded, 0, time.Now()
		if _, err := ledger.Complete(ctx, s, &r); err != nil {
			b.Fatal(err)
		}
	}
}
