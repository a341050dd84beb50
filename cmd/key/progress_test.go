package key

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestProgressLine draws the batch progress line as it would on a
// terminal: a bar with the share of the input read, then a clean line.
func TestProgressLine(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	start := time.Now().Add(-2 * time.Second)
	p := &progress{w: &b, on: true, size: 1000, start: start, last: start}
	p.update(4096, 500)
	if got := b.String(); !strings.HasPrefix(got, "\r[###############...............]  50.0% 4096 lines, ") || !strings.HasSuffix(got, " keys/s") {
		t.Errorf("progress line %q", got)
	}
	b.Reset()
	p.update(8192, 600) // within 200ms of the last: not redrawn
	if b.Len() != 0 {
		t.Errorf("redrawn too soon: %q", b.String())
	}
	p.clear()
	if b.String() != "\r\033[K" {
		t.Errorf("clear wrote %q", b.String())
	}
	off := &progress{w: &b, on: false, start: start, last: start}
	b.Reset()
	off.update(4096, 500)
	off.clear()
	if b.Len() != 0 {
		t.Errorf("progress drawn when standard error is not a terminal: %q", b.String())
	}
}
