package ledger

import (
	"strings"
	"testing"

	"github.com/idemkey/idemkey/derive/ledger"
)

// TestResolvedReplayNote: a replay of a record settled by ledger resolve
// that holds no output says so; one with output, or
// one a run recorded, does not.
func TestResolvedReplayNote(t *testing.T) {
	out := ledger.Output{Data: []byte("x\n"), Length: 2}
	for _, c := range []struct {
		rec  ledger.Record
		note bool
	}{
		{ledger.Record{State: ledger.Succeeded, Reason: "resolved as succeeded: checked (was: killed by signal 9 (killed))"}, true},
		{ledger.Record{State: ledger.Failed, Reason: "resolved as failed"}, true},
		{ledger.Record{State: ledger.Succeeded, Reason: "resolved as succeeded", Stdout: out}, false},
		{ledger.Record{State: ledger.Failed, Reason: "resolved as failed", Stderr: out}, false},
		{ledger.Record{State: ledger.Succeeded}, false},
	} {
		note := resolvedReplayNote("k1", &c.rec)
		if (note != "") != c.note || c.note && !strings.Contains(note, "holds no output: the replay prints nothing") {
			t.Errorf("%+v: note %q", c.rec, note)
		}
	}
}
