package cmd

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"
)

// TestRunSlowReaderGetsAllOutput: a reader that pauses after the command
// has exited (a pager, a terminal held with ^S, a slow network pipe) gets
// the command's whole output, and the record has all of it. idemkey stops
// waiting for output 2 s after the command's exit (processes the command
// left behind may write for ever); it closed its pipes then, and what the
// command had written that the reader had not taken yet was lost: 98294 of
// 138894 bytes reached the reader.
func TestRunSlowReaderGetsAllOutput(t *testing.T) {
	r := newRig(t)
	// 120000 bytes fit in the pipes between the command and the reader,
	// so the command exits while the reader pauses.
	script := `head -c 120000 /dev/zero | tr '\000' a; touch ` + r.path("mark")
	c := r.cmd("run", "--task", "t1", "--tool", "slow", "--", "sh", "-c", script)
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	c.Stderr = &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	first := make([]byte, 10)
	if _, err := io.ReadFull(out, first); err != nil {
		t.Fatal(err)
	}
	r.waitFile("mark")
	time.Sleep(3 * time.Second) // past idemkey's 2 s wait for output after the exit
	rest, err := io.ReadAll(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(); err != nil {
		t.Fatalf("idemkey: %v: %s", err, errb.String())
	}
	if n := len(first) + len(rest); n != 120000 || strings.Trim(string(rest), "a") != "" {
		t.Fatalf("the reader got %d bytes of the command's 120000", n)
	}
	s := r.show(r.cmdKey("t1", "slow", "sh", "-c", script))
	if s.State != "succeeded" || s.Stdout.Length != 120000 || s.Stdout.Truncated {
		t.Fatalf("record: %+v, want succeeded with all 120000 bytes", s)
	}
}
