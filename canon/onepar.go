package canon

import (
	"io"
	"runtime"
	"sync"
	"sync/atomic"
)

// writeRunsParallel is WriteCanonical for a large document whose root is
// an array: runs of about runSize bytes of elements are canonicalized on
// every core and written in order. The run boundaries are found ahead of
// the runs: guessed from the line structure when the array is written one
// element a line (see guessSplit), found by a structural scan otherwise
// (see findSplit); either way they are proven as the runs are parsed: a
// run that starts at a true element boundary and ends, at depth one,
// exactly on the comma found as its end makes the next run's start true as
// well. The first run that cannot prove its end, because the guess was
// wrong or the input is invalid, is redone, with the rest of the document,
// by one sequential pass from its start, which is a true boundary.
//
// It reports false, having written nothing, when the root is not an
// array, or is an empty one. valid is false when the input is invalid; werr is the first error
// of w.
func writeRunsParallel(w io.Writer, src []byte, s Scheme, runSize int) (n int64, werr error, valid, done bool) {
	root := skipWS(src, 0)
	if root >= len(src) || src[root] != '[' {
		return 0, nil, false, false
	}
	last := len(src) - 1
	for last > root && isWS(src[last]) {
		last--
	}
	if src[last] != ']' || skipWS(src, root+1) == last {
		return 0, nil, false, false // not an array, or an empty one
	}
	bw := &countWriter{w: w}
	valid = writeRuns(bw, src, s, runSize, root, last, 0)
	return bw.n, bw.err, valid, true
}

// writeRuns writes the canonical form of the array that opens at
// src[root] and closes at src[last], which holds at least one element, to
// bw in runs on every core, as writeRunsParallel describes, and reports
// whether it is valid. outer is the number of containers around the
// array, which count towards MaxDepth.
func writeRuns(bw *countWriter, src []byte, s Scheme, runSize, root, last, outer int) (valid bool) {
	lines := guessSplit(src, root, root+1) >= 0

	type run struct {
		from, stop int // parse elements from src[from]; end on the comma at stop, or (stop < 0) on the closing bracket
		out        []byte
		ok         bool
		fault      any // a memory fault while reading src (see fault.go)
		done       chan struct{}
	}
	var cancel atomic.Bool
	var prodFault any
	order := make(chan *run, pieceWindow)
	jobs := make(chan *run, pieceWindow)
	window := make(chan struct{}, pieceWindow)
	free := make(chan []byte, pieceWindow+1)
	go func() {
		guard()
		defer close(order)
		defer close(jobs)
		defer catchFault(&prodFault)
		from := root + 1
		for !cancel.Load() {
			// Runs get shorter towards the end, so that the cores finish
			// together.
			size := runSize
			if last-from < 8*runSize {
				size = max(runSize/8, min(runSize, 4<<10))
			}
			stop := -1
			if from+2*size < last {
				if lines {
					stop = guessSplit(src, root, from+size)
				} else if stop = guessComma(src, from+size, last); stop < 0 {
					stop = findSplit(src, from, from+size)
				}
				if stop >= last {
					stop = -1
				}
			}
			r := &run{from: from, stop: stop, done: make(chan struct{})}
			window <- struct{}{}
			order <- r
			jobs <- r
			if stop < 0 {
				return
			}
			from = stop + 1
		}
	}()
	var wg sync.WaitGroup
	for k := 0; k < runtime.GOMAXPROCS(0); k++ {
		wg.Add(1)
		go func() {
			guard()
			defer wg.Done()
			var c onepass
			for r := range jobs {
				if cancel.Load() {
					close(r.done)
					continue
				}
				var out []byte
				select {
				case out = <-free:
				default:
					out = make([]byte, 0, runSize+runSize/4)
				}
				c.init(src, s, out, nil) // also after a run that failed midway
				c.maxDepth -= outer
				func() {
					defer catchFault(&r.fault)
					r.ok = c.elements(r.from, r.stop, last)
				}()
				r.out = c.out
				close(r.done)
			}
		}()
	}

	bw.Write([]byte{'['})
	valid = true
	first, redone := true, false
	var fault any
	for r := range order {
		<-r.done
		<-window
		if redone {
			continue // draining after a failed run
		}
		if r.fault != nil {
			fault = r.fault
			cancel.Store(true)
			redone = true
			continue
		}
		if !r.ok {
			// Redo from this run's start, which is a true boundary, to the
			// end, sequentially.
			cancel.Store(true)
			redone = true
			var c onepass
			c.init(src, s, make([]byte, 0, flushAt+4096), bw)
			c.maxDepth -= outer
			if !first {
				c.out = append(c.out, ',')
			}
			func() {
				defer catchFault(&fault)
				valid = c.elements(r.from, -1, last)
			}()
			c.flush()
			continue
		}
		if !first {
			bw.Write([]byte{','})
		}
		bw.Write(r.out)
		first = false
		select {
		case free <- r.out[:0]:
		default:
		}
	}
	wg.Wait()
	if fault == nil {
		fault = prodFault
	}
	if fault != nil {
		panic(fault) // on the caller's goroutine, for it to recover
	}
	if !valid {
		return false
	}
	bw.Write([]byte{']'})
	return true
}

// elements canonicalizes the root array's elements from src[from] on,
// separated by commas, into c.out (flushing it when c.w is set). It ends,
// reporting true, on the comma at stop, or with stop < 0 on the closing
// bracket at src[last].
func (c *onepass) elements(from, stop, last int) bool {
	src := c.src
	j := skipWS(src, from)
	for {
		if j >= len(src) {
			return false
		}
		var ok bool
		if j, ok = c.value(j, 1); !ok {
			return false
		}
		if c.w != nil && len(c.out) >= flushAt {
			c.flush()
		}
		j = skipWS(src, j)
		if j >= len(src) {
			return false
		}
		switch src[j] {
		case ',':
			if j == stop {
				return true
			}
			if stop >= 0 && j > stop {
				return false // the guessed end was not a boundary
			}
			c.out = append(c.out, ',')
			j = skipWS(src, j+1)
			continue
		case ']':
			return stop < 0 && j == last
		}
		return false
	}
}

// countWriter counts what it writes and keeps the first error.
type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (cw *countWriter) Write(b []byte) (int, error) {
	if cw.err != nil {
		return 0, cw.err
	}
	n, err := cw.w.Write(b)
	cw.n += int64(n)
	cw.err = err
	return n, err
}
