//go:build unix

package sqlite

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemkey/idemkey/derive/ledger"
)

// bigOutput is the output of the stopped completion: as large as run
// records (--max-output 128MiB).
const bigOutput = 120 << 20

// TestHelperBigCompletion is the child of TestStoppedBigCompletion: it
// claims key "big" in the ledger IDEMKEY_TEST_LEDGER and completes it with
// a 120 MB output.
func TestHelperBigCompletion(t *testing.T) {
	path := os.Getenv("IDEMKEY_TEST_LEDGER")
	if path == "" {
		t.Skip("the child of TestStoppedBigCompletion")
	}
	ctx := context.Background()
	s := open(t, path, Options{})
	d, err := ledger.Claim(ctx, s, ledger.ClaimRequest{Record: ledger.Record{Key: "big", Task: "t", Tool: "x", Kind: "run", Fingerprint: "f"}})
	if err != nil || d.Action != ledger.ActRun {
		t.Fatal(d, err)
	}
	r := *d.Record
	r.State, r.ExitCode, r.EndedAt = ledger.Succeeded, 0, time.Now()
	data := bytes.Repeat([]byte("0123456789abcdef"), bigOutput/16)
	sum := sha256.Sum256(data)
	r.Stdout = ledger.Output{Data: data, Length: bigOutput, SHA256: hex.EncodeToString(sum[:])}
	os.WriteFile(path+".claimed", nil, 0o600)
	if _, err := ledger.Complete(ctx, s, &r); err != nil {
		t.Fatal(err)
	}
}

// TestStoppedBigCompletion: a process stopped (SIGSTOP) in the middle of
// recording a 120 MB output does not hold the ledger's write lock: a
// claim and a completion of another key, by another store with a busy
// timeout of 2 s, go through while it is stopped (the output was written
// into the row, inside the transaction: every other key waited out the
// busy timeout and failed). Once continued, its outcome is recorded, and
// replays in full.
func TestStoppedBigCompletion(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s := open(t, path, Options{BusyTimeout: 2 * time.Second})
	c := exec.Command(os.Args[0], "-test.run=^TestHelperBigCompletion$", "-test.count=1")
	c.Env = append(os.Environ(), "IDEMKEY_TEST_LEDGER="+path)
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if stopped {
			c.Process.Signal(syscall.SIGCONT)
		}
		c.Process.Kill()
	}()
	// Stop it once its output is being written: a file growing in the
	// output directory, or the WAL growing past 8 MB (the row's write).
	deadline := time.Now().Add(60 * time.Second)
	for !writing(path) {
		if time.Now().After(deadline) {
			t.Fatalf("the child never started writing its output:\n%s", out.String())
		}
		time.Sleep(200 * time.Microsecond)
	}
	if err := c.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped = true
	ctx := context.Background()
	d, err := ledger.Claim(ctx, s, ledger.ClaimRequest{Record: ledger.Record{Key: "other", Task: "t", Tool: "x", Kind: "run", Fingerprint: "f"}})
	if err != nil || d.Action != ledger.ActRun {
		t.Fatalf("claim of another key while a big completion is stopped: %v %v", d, err)
	}
	done := *d.Record
	done.State, done.ExitCode, done.EndedAt = ledger.Succeeded, 0, time.Now()
	if _, err := ledger.Complete(ctx, s, &done); err != nil {
		t.Fatalf("completion of another key while a big completion is stopped: %v", err)
	}
	c.Process.Signal(syscall.SIGCONT)
	stopped = false
	if err := c.Wait(); err != nil {
		t.Fatalf("child: %v\n%s", err, out.String())
	}
	rec, _, err := s.Get(ctx, "big")
	if err != nil || rec == nil || rec.State != ledger.Succeeded || len(rec.Stdout.Data) != bigOutput {
		t.Fatalf("big record: %v, %v", rec != nil, err)
	}
	if !bytes.Equal(rec.Stdout.Data[:32], []byte("0123456789abcdef0123456789abcdef")) {
		t.Fatalf("big output starts %q", rec.Stdout.Data[:32])
	}
}

// writing reports whether the child is writing its output: a temporary
// file in the output directory, or a WAL past 8 MB.
func writing(path string) bool {
	if _, err := os.Stat(path + ".claimed"); err != nil {
		return false
	}
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 8<<20 {
		return true
	}
	entries, _ := os.ReadDir(path + ".outputs")
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && strings.HasPrefix(e.Name(), ".tmp-") && fi.Size() > 0 {
			return true
		}
	}
	return false
}

// TestOutputFiles: an output over inlineMax is kept in a file (0600, in a
// 0700 directory), replayed from it; a takeover of its record removes it,
// and so does forget; Checkpoint removes files no record names once they
// are old; a file that is missing is an error naming it, not an empty
// replay.
func TestOutputFiles(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s := open(t, path, Options{})
	big := bytes.Repeat([]byte("x"), inlineMax+1)
	complete := func(key string, state ledger.State) *ledger.Record {
		t.Helper()
		d, err := ledger.Claim(ctx, s, ledger.ClaimRequest{Record: ledger.Record{Key: key, Task: "t", Tool: "x", Kind: "run", Fingerprint: "f"}})
		if err != nil || d.Action != ledger.ActRun {
			t.Fatal(d, err)
		}
		r := *d.Record
		r.State, r.ExitCode, r.EndedAt = state, 1, time.Now()
		r.Stdout = ledger.Output{Data: big, Length: int64(len(big))}
		r.Stderr = ledger.Output{Data: []byte("small"), Length: 5}
		if _, err := ledger.Complete(ctx, s, &r); err != nil {
			t.Fatal(err)
		}
		return &r
	}
	r := complete("k", ledger.Failed)
	file := s.outputFile("k", r.Token, extStdout)
	for p, want := range map[string]os.FileMode{s.OutputDir(): 0o700 | os.ModeDir, file: 0o600} {
		if fi, err := os.Stat(p); err != nil || fi.Mode() != want {
			t.Fatalf("%s: %v %v, want mode %v", p, fi, err, want)
		}
	}
	if _, err := os.Stat(s.outputFile("k", r.Token, extStderr)); err == nil {
		t.Fatal("a small output was written to a file")
	}
	got, _, err := s.Get(ctx, "k")
	if err != nil || !bytes.Equal(got.Stdout.Data, big) || string(got.Stderr.Data) != "small" {
		t.Fatalf("replay: %d bytes %q, %v", len(got.Stdout.Data), got.Stderr.Data, err)
	}
	if recs, err := s.List(ctx, ledger.Filter{}); err != nil || len(recs) != 1 || recs[0].Stdout.Data != nil {
		t.Fatalf("list: %v %v", recs, err)
	}
	// The next attempt (failed → run) replaces the record: the file goes.
	complete("k", ledger.Succeeded)
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("the replaced record's output file is still there: %v", err)
	}
	got, _, _ = s.Get(ctx, "k")
	if _, err := ledger.Forget(ctx, s, ledger.ForgetRequest{Key: "k"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.outputFile("k", got.Token, extStdout)); !os.IsNotExist(err) {
		t.Fatalf("the forgotten record's output file is still there: %v", err)
	}
	// An orphan (a completion that died before its swap), and a young one.
	orphan, young := filepath.Join(s.OutputDir(), "orphan.stdout"), filepath.Join(s.OutputDir(), ".tmp-young")
	os.WriteFile(orphan, []byte("x"), 0o600)
	os.WriteFile(young, []byte("x"), 0o600)
	old := time.Now().Add(-2 * sweepAge)
	os.Chtimes(orphan, old, old)
	kept := complete("kept", ledger.Succeeded)
	if err := s.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Fatal("an old orphan output file was kept")
	}
	for _, p := range []string{young, s.outputFile("kept", kept.Token, extStdout)} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s removed by the sweep: %v", p, err)
		}
	}
	// A copy without the output directory: an error that names it.
	os.Remove(s.outputFile("kept", kept.Token, extStdout))
	if _, _, err := s.Get(ctx, "kept"); err == nil || !strings.Contains(err.Error(), s.OutputDir()) {
		t.Fatalf("get with the output file missing: %v, want an error naming %s", err, s.OutputDir())
	}
}

// TestCheckpointMakesFileComplete: after Checkpoint (ledger gc, ledger
// init), ledger.db alone holds every record: a copy of it without its
// -wal replays them. Without it, the records were in the WAL only (the
// store never checkpoints on close), and such a copy ran every step again.
func TestCheckpointMakesFileComplete(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.db")
	s := open(t, path, Options{})
	for _, k := range []string{"a", "b", "c"} {
		d, err := ledger.Claim(ctx, s, ledger.ClaimRequest{Record: ledger.Record{Key: k, Task: "t", Tool: "x", Kind: "run", Fingerprint: "f"}})
		if err != nil {
			t.Fatal(err)
		}
		r := *d.Record
		r.State, r.ExitCode, r.EndedAt = ledger.Succeeded, 0, time.Now()
		if _, err := ledger.Complete(ctx, s, &r); err != nil {
			t.Fatal(err)
		}
	}
	var cp ledger.Checkpointer = s
	if err := cp.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() != 0 {
		t.Fatalf("WAL after the checkpoint: %v %v, want empty", fi, err)
	}
	copied := filepath.Join(t.TempDir(), "ledger.db")
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	outf, err := os.Create(copied)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(outf, in)
	in.Close()
	outf.Close()
	c := open(t, copied, Options{})
	for _, k := range []string{"a", "b", "c"} {
		if rec, _, err := c.Get(ctx, k); err != nil || rec == nil || rec.State != ledger.Succeeded {
			t.Fatalf("record %s in a copy of ledger.db alone: %v %v", k, rec, err)
		}
	}
}

// TestOutputFileChanged: an output file whose bytes were changed since
// the record was written (the same length) is not replayed: Get fails,
// naming it and both hashes. Unchanged, it replays.
func TestOutputFileChanged(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "ledger.db"), Options{})
	big := bytes.Repeat([]byte("y"), inlineMax+1)
	sum := sha256.Sum256(big)
	d, err := ledger.Claim(ctx, s, ledger.ClaimRequest{Record: ledger.Record{Key: "k", Task: "t", Tool: "x", Kind: "run", Fingerprint: "f"}})
	if err != nil || d.Action != ledger.ActRun {
		t.Fatal(d, err)
	}
	r := *d.Record
	r.State, r.EndedAt = ledger.Succeeded, time.Now()
	r.Stdout = ledger.Output{Data: big, Length: int64(len(big)), SHA256: hex.EncodeToString(sum[:])}
	if _, err := ledger.Complete(ctx, s, &r); err != nil {
		t.Fatal(err)
	}
	if got, _, err := s.Get(ctx, "k"); err != nil || !bytes.Equal(got.Stdout.Data, big) {
		t.Fatalf("unchanged: %v", err)
	}
	file := s.outputFile("k", r.Token, extStdout)
	f, err := os.OpenFile(file, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("z"), 1000)
	f.Close()
	_, _, err = s.Get(ctx, "k")
	if err == nil || !strings.Contains(err.Error(), "was changed since it was recorded") || !strings.Contains(err.Error(), r.Stdout.SHA256) {
		t.Fatalf("changed: %v", err)
	}
}
