//go:build linux

package canon

import (
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
)

// mapTruncated writes doc to a file, maps it, and truncates the file to
// keep bytes, so that reading the mapping past them faults.
func mapTruncated(t *testing.T, doc []byte, keep int64) []byte {
	t.Helper()
	name := filepath.Join(t.TempDir(), "doc.json")
	if err := os.WriteFile(name, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := syscall.Mmap(int(f.Fd()), 0, len(doc), syscall.PROT_READ, syscall.MAP_PRIVATE|syscall.MAP_POPULATE)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	t.Cleanup(func() { syscall.Munmap(b) })
	if err := f.Truncate(keep); err != nil {
		t.Fatal(err)
	}
	return b
}

// faultOf runs fn with faults turned into panics on this goroutine, and
// returns what it recovered.
func faultOf(fn func()) (r any) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() { r = recover() }()
	fn()
	return nil
}

// TestFaultsReachTheCaller truncates a mapped document under
// WriteCanonical's paths (the parallel runs, on goroutines of their own,
// with guessed and with scanned boundaries, and the one pass on the
// caller's) and checks that the fault comes back
// to the calling goroutine as a panic it can recover, not as a crash.
func TestFaultsReachTheCaller(t *testing.T) {
	var lines, flat strings.Builder
	lines.WriteString("[\n")
	flat.WriteString("[")
	for i := 0; lines.Len() < ParallelMin+(1<<20); i++ {
		if i > 0 {
			lines.WriteString(",\n")
			flat.WriteString(",")
		}
		rec := `{"b":"` + strings.Repeat("x", 100) + `","a":[1.50,2e3,{"d":null,"c":true}]}`
		lines.WriteString(rec)
		flat.WriteString(rec)
	}
	lines.WriteString("\n]\n")
	flat.WriteString("]")
	write := func(src []byte) { WriteCanonical(io.Discard, src, JS) }
	for _, tc := range []struct {
		name string
		doc  string
		keep int // bytes left in the file
	}{
		{"runs", lines.String(), lines.Len() / 2},
		{"last runs", lines.String(), lines.Len() - 3<<20},
		{"runs, scanned", flat.String(), flat.Len() / 2},
		{"one pass", `{"items":` + flat.String() + `}`, flat.Len() / 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := mapTruncated(t, []byte(tc.doc), int64(tc.keep))
			if r := faultOf(func() { write(src) }); !IsFault(r) {
				t.Fatalf("recovered %v (%T), want a memory fault", r, r)
			}
		})
	}
	// Truncated inside a page: the rest of the page reads as zeros, which
	// the one pass rejects as it reads them (Parse's index would not).
	for _, doc := range []string{lines.String(), flat.String()} {
		src := mapTruncated(t, []byte(doc), int64(len(doc)/2+100))
		var err error
		r := faultOf(func() { _, err = WriteCanonical(io.Discard, src, JS) })
		if !IsFault(r) && err == nil {
			t.Fatalf("a truncated document gave neither a fault nor an error (recovered %v)", r)
		}
	}
	if IsFault(faultOf(func() { panic("not a fault") })) {
		t.Fatal("IsFault says a plain panic is a fault")
	}
}
