//go:build linux

package key_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/cmd/internal/input"
	"github.com/idemkey/idemkey/derive"
)

// TestTruncatedMappedFile maps a file, truncates it, and checks that
// reading past its new end inside GuardFaults is an input error, not a
// crash.
func TestTruncatedMappedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "args.json")
	doc := "[\n" + strings.Repeat("{\"a\": 1},\n", input.MapMin/10) + "{}\n]\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &cli.Factory{IO: &cli.IOStreams{In: strings.NewReader("")}}
	data, name, release, err := input.ReadMapped(f, path)
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
	err = input.GuardFaults(name, func() error {
		sum := 0
		for i := 0; i < len(data); i += 4096 {
			sum += int(data[i])
		}
		t.Errorf("read past the end of a truncated file without a fault (%d)", sum)
		return nil
	})
	var ie *cli.InputError
	if !errors.As(err, &ie) || ie.Name != path || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("error %v (%T), want an input error about the truncation", err, err)
	}
	if err := input.GuardFaults(name, func() error { return nil }); err != nil {
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
		f := &cli.Factory{IO: &cli.IOStreams{In: strings.NewReader("")}}
		data, name, release, err := input.ReadMapped(f, path)
		if err != nil || release == nil {
			t.Fatalf("not mapped (%v)", err)
		}
		if err := os.Truncate(path, keep); err != nil {
			t.Fatal(err)
		}
		err = input.GuardFaults(name, func() error {
			_, err := derive.Text{Task: "t", Tool: "x", Args: data, Scheme: canon.JS}.Key()
			return err
		})
		release()
		var ie *cli.InputError
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

// TestMappedRootFlipped is the race of a large mapped file whose first
// byte another writer flips between '[' and '{' while key runs: key
// decides to map the file while it starts with '[', and finds '{' when it
// looks again. It must then copy the data before it unmaps it. The runs
// happen in a child process (this test binary again), so that a crash
// there is reported as this test's failure; they stop after a count or a
// time, whichever comes first: without the copy, the child crashes within
// its first few runs (0.2 to 0.3 s).
func TestMappedRootFlipped(t *testing.T) {
	t.Parallel()
	if path := os.Getenv("IDEMKEY_TEST_FLIP_FILE"); path != "" {
		flipChild(t, path)
		return
	}
	if testing.Short() {
		t.Skip("stress test")
	}
	path := filepath.Join(t.TempDir(), "args.json")
	var b bytes.Buffer
	b.WriteString("[\n")
	for i := 0; b.Len() < canon.ParallelMin+(2<<20); i++ {
		fmt.Fprintf(&b, "{\"n\": %d, \"s\": \"é%d\"},\n", i, i)
	}
	b.WriteString("{}\n]\n")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMappedRootFlipped$", "-test.v")
	cmd.Env = append(os.Environ(), "IDEMKEY_TEST_FLIP_FILE="+path)
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("flip runs:")) {
		t.Fatalf("child: %v\n%.3000s", err, out)
	}
	t.Logf("%s", bytes.TrimSpace(out[bytes.Index(out, []byte("flip runs:")):]))
}

// flipChild runs key on path up to 30 times or for 2 seconds while a
// goroutine flips the file's first byte; every run must print a key (exit
// 0, '[') or report the invalid input (exit 2, '{').
func flipChild(t *testing.T, path string) {
	fh, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; !stop.Load(); i++ {
			fh.WriteAt([]byte{"[{"[i%2]}, 0)
			time.Sleep(50 * time.Microsecond)
		}
		fh.WriteAt([]byte{'['}, 0)
	}()
	deadline := time.Now().Add(2 * time.Second)
	runs, keys, invalid := 0, 0, 0
	for ; runs < 30 && time.Now().Before(deadline); runs++ {
		out, stderr, code := clitest.Run(t, "", "key", "--task", "t", "--tool", "x", path)
		switch {
		case code == 0 && len(out) == 65:
			keys++
		case code == cli.ExitUsage && out == "" && strings.Contains(stderr, path+":"):
			invalid++
		default:
			t.Errorf("run %d: exit %d, stdout %q, stderr %q", runs, code, out, stderr)
		}
	}
	stop.Store(true)
	<-done
	fmt.Printf("flip runs: %d (%d keys, %d invalid inputs)\n", runs, keys, invalid)
}
