package cli

import (
	"bytes"
	"testing"
)

// TestOutClosed: a standard output closed when idemkey started is seen
// behind the write watcher; a buffer is not taken for one.
func TestOutClosed(t *testing.T) {
	if !(&IOStreams{Out: WatchWrites(ClosedWriter{})}).OutClosed() {
		t.Error("a closed stdout behind the watcher is not seen")
	}
	if (&IOStreams{Out: WatchWrites(&bytes.Buffer{})}).OutClosed() {
		t.Error("a buffer is taken for a closed stdout")
	}
}
