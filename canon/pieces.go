package canon

import (
	"io"
	"runtime"
	"sync"
)

// pieceSize is the amount of input serialized as one piece by
// writeParallel; at most pieceWindow pieces are held at a time, so the
// extra memory stays a few MiB whatever the document's size.
const (
	pieceSize   = 1 << 20
	pieceWindow = 4
)

// unit is a step of the canonical output: literal bytes (an opening
// bracket, a comma, a member name and colon), then, if off >= 0, the
// canonical form of the value at src[off], size bytes of input.
type unit struct {
	lit0, lit1 int // the literal is lits[lit0:lit1]
	off        int
	size       int
}

// writeParallel writes the canonical form of the value at src[off], which
// spans size bytes of input, to w: the value is cut into pieces of about
// pieceSize input bytes along its structure, the pieces are serialized on
// every core, and written in order.
func (d *Document) writeParallel(w io.Writer, off, size int) (int64, error) {
	var units []unit
	var lits []byte
	units, lits = d.expand(units, lits, off, size)
	// Group consecutive units into pieces.
	var pieces [][]unit
	start, acc := 0, 0
	for k, u := range units {
		acc += u.size + u.lit1 - u.lit0
		if acc >= pieceSize {
			pieces = append(pieces, units[start:k+1])
			start, acc = k+1, 0
		}
	}
	if start < len(units) {
		pieces = append(pieces, units[start:])
	}

	results := make([]chan []byte, len(pieces))
	for i := range results {
		results[i] = make(chan []byte, 1)
	}
	jobs := make(chan int)
	window := make(chan struct{}, pieceWindow)
	free := make(chan []byte, pieceWindow+1)
	stop := make(chan struct{})
	go func() {
		defer close(jobs)
		for i := range pieces {
			select {
			case window <- struct{}{}:
			case <-stop:
				return
			}
			select {
			case jobs <- i:
			case <-stop:
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for k := 0; k < runtime.GOMAXPROCS(0); k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				var buf []byte
				select {
				case buf = <-free:
				default:
					buf = make([]byte, 0, pieceSize+pieceSize/4)
				}
				e := encoder{d: d, buf: buf[:0]}
				for _, u := range pieces[i] {
					e.buf = append(e.buf, lits[u.lit0:u.lit1]...)
					if u.off >= 0 {
						e.value(u.off)
					}
				}
				results[i] <- e.buf
			}
		}()
	}
	var n int64
	var err error
	for i := range pieces {
		buf := <-results[i]
		if err == nil {
			var m int
			m, err = w.Write(buf)
			n += int64(m)
			if err != nil {
				close(stop)
			}
		}
		select {
		case free <- buf:
		default:
		}
		<-window
	}
	wg.Wait()
	return n, err
}

// expand appends the units that write the value at src[off] (size bytes
// of input): the value itself if it is small or a scalar, otherwise its
// brackets, member names and commas as literals around the expansion of
// each child.
func (d *Document) expand(units []unit, lits []byte, off, size int) ([]unit, []byte) {
	src := d.src
	if size <= pieceSize || (src[off] != '{' && src[off] != '[') {
		return append(units, unit{lit0: len(lits), lit1: len(lits), off: off, size: size}), lits
	}
	// lit adds the literal written since start as a unit of its own.
	lit := func(start int) {
		units = append(units, unit{lit0: start, lit1: len(lits), off: -1})
	}
	start := len(lits)
	lits = append(lits, src[off])
	if src[off] == '{' {
		for k, m := range (Node{d, off}).Members() {
			if k > 0 {
				lits = append(lits, ',')
			}
			lits = AppendQuoted(lits, m.Name)
			lits = append(lits, ':')
			lit(start)
			units, lits = d.expand(units, lits, m.Value.Offset(), m.Value.End()-m.Value.Offset())
			start = len(lits)
		}
		lits = append(lits, '}')
	} else {
		j := skipWS(src, off+1)
		for k := 0; src[j] != ']'; k++ {
			if k > 0 {
				lits = append(lits, ',')
			}
			end := d.skip(j)
			lit(start)
			units, lits = d.expand(units, lits, j, end-j)
			start = len(lits)
			j = skipWS(src, end)
			if src[j] == ',' {
				j = skipWS(src, j+1)
			}
		}
		lits = append(lits, ']')
	}
	lit(start)
	return units, lits
}
