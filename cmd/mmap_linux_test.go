//go:build linux

package cmd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/derive"
)

// TestTruncatedMappedFile maps a file, truncates it, and checks that
// reading past its new end inside guardFaults is an input error, not a
// crash.
func TestTruncatedMappedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "args.json")
	doc := "[\n" + strings.Repeat("{\"a\": 1},\n", mapMin/10) + "{}\n]\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &Factory{IO: &IOStreams{In: strings.NewReader("")}}
	data, name, release, err := f.readMapped(path)
	if err != nil || release == nil {
		t.Fatalf("not mapped (%v)", err)
	}
	defer release()
	if string(data) != doc {
		t.Fatalf("mapped %d bytes, want the file's %d", len(data), len(doc))
	}
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	err = guardFaults(name, func() error {
		sum := 0
		for i := 0; i < len(data); i += 4096 {
			sum += int(data[i])
		}
		t.Errorf("read past the end of a truncated file without a fault (%d)", sum)
		return nil
	})
	var ie *InputError
	if !errors.As(err, &ie) || ie.Name != path || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("error %v (%T), want an input error about the truncation", err, err)
	}
	if err := guardFaults(name, func() error { return nil }); err != nil {
		t.Fatalf("no fault: %v", err)
	}
}

// TestTruncatedMappedFileKey runs the whole key path (derive.Text, canon's
// parallel runs and the hashing pipe) on a mapped file truncated under it:
// an input error, and no goroutine left behind.
func TestTruncatedMappedFileKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "args.json")
	var b strings.Builder
	b.WriteString("[\n")
	for i := 0; b.Len() < canon.ParallelMin+(2<<20); i++ {
		fmt.Fprintf(&b, "{\"n\": %d, \"s\": \"é%d\", \"b\": [1.50, true]},\n", i, i)
	}
	b.WriteString("{}\n]\n")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	for _, keep := range []int64{int64(b.Len()) / 2, int64(b.Len()) - 1<<20} {
		f := &Factory{IO: &IOStreams{In: strings.NewReader("")}}
		data, name, release, err := f.readMapped(path)
		if err != nil || release == nil {
			t.Fatalf("not mapped (%v)", err)
		}
		if err := os.Truncate(path, keep); err != nil {
			t.Fatal(err)
		}
		err = guardFaults(name, func() error {
			_, err := derive.Text{Task: "t", Tool: "x", Args: data, Scheme: canon.JS}.Key()
			return err
		})
		release()
		var ie *InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), "truncated") {
			t.Fatalf("kept %d bytes: error %v (%T), want an input error about the truncation", keep, err, err)
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; runtime.NumGoroutine() > before && i < 100; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines left behind", n-before)
	}
}
