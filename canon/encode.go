package canon

// The semantic layer: writing a parsed Document in canonical form.

import (
	"io"
	"sync"
)

// bufPool holds the output buffers of WriteTo, so that deriving many small
// keys does not allocate and clear a buffer each time.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, flushAt+4096); return &b }}

const flushAt = 32 << 10

// Append appends the canonical form of d to dst.
func (d *Document) Append(dst []byte) []byte {
	e := encoder{d: d, buf: dst}
	e.value(d.root)
	return e.buf
}

// WriteTo writes the canonical form of d to w, streaming: it holds at most
// a small buffer of output, never the whole canonical text.
func (d *Document) WriteTo(w io.Writer) (int64, error) {
	return d.Root().WriteTo(w)
}

// Append parses src under scheme s and appends its canonical form to dst.
func Append(dst, src []byte, s Scheme) ([]byte, error) {
	d, err := Parse(src, s)
	if err != nil {
		return dst, err
	}
	return d.Append(dst), nil
}

type encoder struct {
	d   *Document
	buf []byte
	w   io.Writer
	n   int64
	err error
}

func (e *encoder) flush() {
	if e.w == nil || e.err != nil {
		return
	}
	n, err := e.w.Write(e.buf)
	e.n += int64(n)
	e.err = err
	e.buf = e.buf[:0]
}

// value writes the value at src[i] and returns the offset just past it.
func (e *encoder) value(i int) int {
	src := e.d.src
	switch c := src[i]; c {
	case '{':
		return e.object(i)
	case '[':
		e.buf = append(e.buf, '[')
		j := skipWS(src, i+1)
		if src[j] == ']' {
			e.buf = append(e.buf, ']')
			return j + 1
		}
		for {
			j = skipWS(src, e.value(j))
			if len(e.buf) >= flushAt {
				e.flush()
			}
			if src[j] == ']' {
				e.buf = append(e.buf, ']')
				return j + 1
			}
			e.buf = append(e.buf, ',')
			j = skipWS(src, j+1)
		}
	case '"':
		end, esc := stringEnd(src, i)
		if !esc {
			// No escapes in the input, so nothing that needs one: the token
			// is already canonical (RFC 8785 §3.2.2.2).
			e.buf = append(e.buf, src[i:end]...)
		} else {
			e.buf = appendRequoted(e.buf, src[i+1:end-1])
		}
		return end
	case 't':
		e.buf = append(e.buf, "true"...)
		return i + 4
	case 'f':
		e.buf = append(e.buf, "false"...)
		return i + 5
	case 'n':
		e.buf = append(e.buf, "null"...)
		return i + 4
	}
	buf, end, ok := appendNumberToken(e.buf, src, i)
	if !ok {
		// Only the JS scheme gets here (JCS rejected the number while
		// parsing): JSON.stringify writes ±Infinity as null.
		buf = append(buf, "null"...)
	}
	e.buf = buf
	return end
}

func (e *encoder) object(i int) int {
	d := e.d
	o := d.object(i)
	e.buf = append(e.buf, '{')
	for k, m := range d.mems[o.first : o.first+o.n] {
		if k > 0 {
			e.buf = append(e.buf, ',')
		}
		if m.name&inArena != 0 {
			e.buf = appendQuoted(e.buf, d.name(m))
		} else {
			e.buf = append(e.buf, '"')
			e.buf = append(e.buf, d.src[m.name:m.name+m.nlen]...)
			e.buf = append(e.buf, '"')
		}
		e.buf = append(e.buf, ':')
		e.value(d.valueOffset(m))
		if len(e.buf) >= flushAt {
			e.flush()
		}
	}
	e.buf = append(e.buf, '}')
	return int(o.end)
}
