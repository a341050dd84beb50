package input

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// randReader hands out its input in reads of random sizes, and fails with
// err (if not nil) once it has handed out failAt bytes.
type randReader struct {
	r      *rand.Rand
	data   []byte
	failAt int
	err    error
	off    int
}

func (rr *randReader) Read(p []byte) (int, error) {
	if rr.err != nil && rr.off >= rr.failAt {
		return 0, rr.err
	}
	rest := rr.data[rr.off:]
	if rr.err != nil {
		rest = rr.data[rr.off:rr.failAt]
	}
	if len(rest) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(rest), 1+rr.r.IntN(1+len(rest)))
	if rr.r.IntN(4) == 0 {
		n = min(len(p), len(rest))
	}
	copy(p, rest[:n])
	rr.off += n
	return n, nil
}

// TestChunkReaderMatchesLines checks ChunkReader, which reads a batch in
// chunks of whole lines without looking at each line, against splitting
// the whole input into lines: the chunks hold exactly the lines before the
// first one longer than the limit (or before the line a read error cut
// short), in order, each chunk whole lines; the line numbers, the long
// line's number and the error are reported as the simple split gives them.
// Inputs mix short, empty, CRLF, long and over-long lines, with and
// without a last line end, read in random pieces.
func TestChunkReaderMatchesLines(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	errRead := errors.New("read failed")
	for n := 0; n < 1500; n++ {
		limit := []int{8, 100, 1000, 70 << 10, 300 << 10}[r.IntN(5)]
		var in []byte
		for k := r.IntN(40); k >= 0; k-- {
			var l int
			switch r.IntN(30) {
			case 0, 1, 2:
				l = 0
			case 3, 4, 5:
				l = limit - 2 + r.IntN(5) // around the limit
			case 6:
				l = r.IntN(3 * ChunkSize) // across chunks
			default:
				l = r.IntN(min(limit, 2000) + 1)
			}
			in = append(in, bytes.Repeat([]byte{'a' + byte(k%26)}, l)...)
			switch r.IntN(6) {
			case 0:
				in = append(in, '\r', '\n')
			default:
				in = append(in, '\n')
			}
		}
		if r.IntN(3) == 0 {
			in = in[:len(in)-1-r.IntN(min(len(in), 5))] // no last line end, or a line cut short
		}
		rr := &randReader{r: r, data: in}
		if r.IntN(4) == 0 {
			rr.err, rr.failAt = errRead, r.IntN(len(in)+1)
		}

		// The simple split: whole lines up to the first long one, or to
		// the one the error cuts short.
		avail := in
		if rr.err != nil {
			avail = in[:rr.failAt]
		}
		var want [][]byte
		wantLong := 0
		for i := 0; i < len(avail); {
			j := bytes.IndexByte(avail[i:], '\n') + 1
			if j == 0 {
				if rr.err != nil {
					break // cut short by the error
				}
				j = len(avail) - i
			}
			line := avail[i : i+j]
			if len(TrimEOL(line)) > limit {
				wantLong = len(want) + 1
				break
			}
			want = append(want, line)
			i += j
		}
		if wantLong == 0 && rr.err != nil {
			// A line cut short by the error is dropped, unless what was
			// read of it is already longer than the limit allows.
			if rest := avail[len(bytes.Join(want, nil)):]; len(rest) > limit+2 {
				wantLong = len(want) + 1
			}
		}
		cr := &ChunkReader{In: rr, Limit: limit}
		var got [][]byte
		var buf []byte
		first := 1
		for chunks := 0; ; chunks++ {
			if chunks > 10000 {
				t.Fatal("no end")
			}
			if cr.LineNo+1 != first {
				t.Fatalf("case %d: line number %d after %d lines", n, cr.LineNo, first-1)
			}
			buf = cr.Next(buf[:0])
			if len(buf) > 0 && !cr.Done && buf[len(buf)-1] != '\n' {
				t.Fatalf("case %d: a chunk ends inside a line", n)
			}
			for i := 0; i < len(buf); {
				j := bytes.IndexByte(buf[i:], '\n') + 1
				if j == 0 {
					j = len(buf) - i
				}
				got = append(got, bytes.Clone(buf[i:i+j]))
				i += j
			}
			first = len(got) + 1
			if cr.Done {
				break
			}
		}
		if cr.LineNo != len(got) {
			t.Fatalf("case %d: lineNo %d for %d lines", n, cr.LineNo, len(got))
		}
		if cr.TooLong != wantLong {
			t.Fatalf("case %d (limit %d): too long at line %d, want %d", n, limit, cr.TooLong, wantLong)
		}
		if wantLong == 0 && (cr.Err != nil) != (rr.err != nil) {
			t.Fatalf("case %d: error %v, want %v", n, cr.Err, rr.err)
		}
		if len(got) != len(want) {
			t.Fatalf("case %d (limit %d): %d lines, want %d", n, limit, len(got), len(want))
		}
		for k := range got {
			if !bytes.Equal(got[k], want[k]) {
				t.Fatalf("case %d: line %d is %q, want %q", n, k+1, trunc(got[k]), trunc(want[k]))
			}
		}
	}
}

func trunc(b []byte) string {
	if len(b) > 40 {
		return string(b[:20]) + "…" + string(b[len(b)-20:])
	}
	return strings.Clone(string(b))
}
