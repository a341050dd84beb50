package drift

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/cmd/internal/keyflags"
	"github.com/idemkey/idemkey/derive"
	"github.com/idemkey/idemkey/derive/drift/opsgen"
)

// TestDriftCanonicalKey checks that the key drift derives from the
// canonical text, without writing it again, is the key key derives, with
// and without a secret, on every line of a generated log.
func TestDriftCanonicalKey(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	if _, err := opsgen.Generate(opsgen.Config{Seed: 5, Calls: 300}, &log); err != nil {
		t.Fatal(err)
	}
	for _, secret := range [][]byte{nil, []byte("s3cret")} {
		opts := &Options{Key: keyflags.Key{Secret: secret}}
		for _, l := range bytes.Split(bytes.TrimSpace(log.Bytes()), []byte("\n")) {
			var rec struct {
				Task, Tool string
				Args       json.RawMessage
			}
			if err := json.Unmarshal(l, &rec); err != nil {
				t.Fatal(err)
			}
			text, err := canon.AppendCanonical(nil, rec.Args, canon.JS)
			if err != nil {
				t.Fatal(err)
			}
			got, err1 := opts.canonicalKey(derive.Text{Task: rec.Task, Tool: rec.Tool, Args: text, Scheme: canon.JS})
			want, err2 := opts.Key.SumText(derive.Text{Task: rec.Task, Tool: rec.Tool, Args: rec.Args, Scheme: canon.JS})
			if err1 != nil || err2 != nil || got != want {
				t.Fatalf("%s: %x (%v), want %x (%v)", l, got, err1, want, err2)
			}
		}
	}
	if _, err := (&Options{}).canonicalKey(derive.Text{Task: "", Tool: "x", Args: []byte("{}")}); err == nil {
		t.Error("an empty task is not checked")
	}
}
