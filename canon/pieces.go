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
// canonical form of the value at src[off].
type unit struct {
	lit0, lit1 int // the literal is piece.lits[lit0:lit1]
	off        int
}

// piece is a run of units, about pieceSize bytes of input, serialized by
// one worker into done.
type piece struct {
	units []unit
	lits  []byte
	done  chan []byte
}

// writeParallel writes the canonical form of the value at src[off], which
// spans size bytes of input, to w. A producer walks the value and cuts it
// into pieces of about pieceSize input bytes along its structure, workers
// on every core serialize the pieces, and they are written in order, with
// at most pieceWindow pieces in flight.
func (d *Document) writeParallel(w io.Writer, off, size int) (int64, error) {
	order := make(chan *piece, pieceWindow)
	jobs := make(chan *piece, pieceWindow)
	window := make(chan struct{}, pieceWindow)
	free := make(chan []byte, pieceWindow+1)
	go func() {
		pr := producer{d: d, cur: &piece{done: make(chan []byte, 1)}}
		pr.emit = func(p *piece) {
			window <- struct{}{}
			order <- p
			jobs <- p
		}
		pr.value(off, size)
		pr.flush()
		close(order)
		close(jobs)
	}()
	var wg sync.WaitGroup
	for k := 0; k < runtime.GOMAXPROCS(0); k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range jobs {
				var buf []byte
				select {
				case buf = <-free:
				default:
					buf = make([]byte, 0, pieceSize+pieceSize/4)
				}
				e := encoder{d: d, buf: buf[:0]}
				for _, u := range p.units {
					e.buf = append(e.buf, p.lits[u.lit0:u.lit1]...)
					if u.off >= 0 {
						e.value(u.off)
					}
				}
				p.done <- e.buf
			}
		}()
	}
	var n int64
	var err error
	for p := range order {
		buf := <-p.done
		if err == nil {
			var m int
			m, err = w.Write(buf)
			n += int64(m)
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

// producer cuts a value into pieces.
type producer struct {
	d       *Document
	cur     *piece
	pending int // start of the literal not yet in a unit
	acc     int // input bytes in the current piece
	emit    func(*piece)
}

// value adds the value at src[off] (size bytes of input): the value itself
// if it is small or a scalar, otherwise its brackets, member names and
// commas as literals around each child, recursively.
func (pr *producer) value(off, size int) {
	src := pr.d.src
	if size <= pieceSize || (src[off] != '{' && src[off] != '[') {
		pr.cur.units = append(pr.cur.units, unit{lit0: pr.pending, lit1: len(pr.cur.lits), off: off})
		pr.pending = len(pr.cur.lits)
		if pr.acc += size; pr.acc >= pieceSize {
			pr.flush()
		}
		return
	}
	pr.cur.lits = append(pr.cur.lits, src[off])
	if src[off] == '{' {
		for k, m := range (Node{pr.d, off}).Members() {
			if k > 0 {
				pr.cur.lits = append(pr.cur.lits, ',')
			}
			pr.cur.lits = AppendQuoted(pr.cur.lits, m.Name)
			pr.cur.lits = append(pr.cur.lits, ':')
			pr.value(m.Value.Offset(), m.Value.End()-m.Value.Offset())
		}
		pr.cur.lits = append(pr.cur.lits, '}')
		return
	}
	j := skipWS(src, off+1)
	for k := 0; src[j] != ']'; k++ {
		if k > 0 {
			pr.cur.lits = append(pr.cur.lits, ',')
		}
		end := pr.d.skip(j)
		pr.value(j, end-j)
		j = skipWS(src, end)
		if src[j] == ',' {
			j = skipWS(src, j+1)
		}
	}
	pr.cur.lits = append(pr.cur.lits, ']')
}

// flush hands the current piece, with any pending literal, to emit.
func (pr *producer) flush() {
	p := pr.cur
	if pr.pending < len(p.lits) {
		p.units = append(p.units, unit{lit0: pr.pending, lit1: len(p.lits), off: -1})
	}
	if len(p.units) > 0 {
		pr.emit(p)
	}
	pr.cur, pr.pending, pr.acc = &piece{done: make(chan []byte, 1)}, 0, 0
}
