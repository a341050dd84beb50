package post

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestSpoolAndResponse: a body past SpoolMem goes to the file; the
// exchange's response reader (for a ledger) and the writer read it whole,
// independently.
func TestSpoolAndResponse(t *testing.T) {
	t.Parallel()
	want := bytes.Repeat([]byte("0123456789"), (SpoolMem+1<<20)/10)
	sp := &Spool{}
	if err := sp.Fill(bytes.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if !sp.Spilled() || sp.Size() != int64(len(want)) {
		t.Fatalf("spilled %v, size %d", sp.Spilled(), sp.Size())
	}
	ex := &Result{Final: Attempt{Resp: &http.Response{StatusCode: 201, Header: http.Header{"X": {"1"}}}, Body: sp}}
	status, h, body, err := ex.Response()
	if err != nil || status != 201 || h.Get("X") != "1" {
		t.Fatalf("response: %d %v %v", status, h, err)
	}
	got, _ := io.ReadAll(body)
	var out bytes.Buffer
	if err := sp.CopyTo(&out); err != nil || !bytes.Equal(got, want) || !bytes.Equal(out.Bytes(), want) {
		t.Errorf("reader %d bytes, writer %d bytes (%v), want %d", len(got), out.Len(), err, len(want))
	}
	small := &Spool{}
	small.Fill(strings.NewReader("ok"))
	if small.Spilled() {
		t.Error("a 2-byte body spilled")
	}
}
