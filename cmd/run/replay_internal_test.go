package run

import (
	"bytes"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/derive/ledger"
)

// TestReplayOutputsNotKept: a record whose outputs were not kept (the
// store refused them for their size) says the truncation of a stream
// that had bytes, and nothing of an empty one ("replayed 0 of its 0
// bytes" is not a truncation).
func TestReplayOutputsNotKept(t *testing.T) {
	for _, c := range []struct {
		out, err ledger.Output
		want     []string
		not      string
	}{
		{out: ledger.Output{Length: 5, SHA256: "ab", Truncated: true}, err: ledger.Output{Truncated: true},
			want: []string{"the recorded stdout was truncated: replayed 0 of its 5 bytes (sha256 ab)"}, not: "stderr"},
		{out: ledger.Output{Data: []byte("he"), Length: 5, SHA256: "ab", Truncated: true},
			want: []string{"the recorded stdout was truncated: replayed 2 of its 5 bytes (sha256 ab)"}, not: "stderr"},
	} {
		var out, errb bytes.Buffer
		st := &runStep{opts: &Options{f: &cli.Factory{IO: &cli.IOStreams{Out: &out, Err: &errb}}, Quiet: true}, key: "k"}
		if err := st.replay(&ledger.Record{State: ledger.Succeeded, Stdout: c.out, Stderr: c.err}); err != nil {
			t.Fatal(err)
		}
		for _, w := range c.want {
			if !strings.Contains(errb.String(), w) {
				t.Errorf("%+v: no %q in\n%s", c.out, w, errb.String())
			}
		}
		if strings.Contains(errb.String(), c.not) {
			t.Errorf("%+v: said of the empty %s:\n%s", c.out, c.not, errb.String())
		}
	}
}
