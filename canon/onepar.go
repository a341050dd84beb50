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
//
// The runs are written in order as they are made: the worker that
// finishes the run next in order writes it at once (and then any later
// ones finished meanwhile), so that a hash behind bw digests each run while
// it is still in that core's cache, beside the making of the runs that
// follow, never after them on a goroutine of its own.
func writeRuns(bw *countWriter, src []byte, s Scheme, runSize, root, last, outer int) (valid bool) {
	lines := guessSplit(src, root, root+1) >= 0
	var cancel atomic.Bool
	var prodFault any
	jobs := make(chan *run, pieceWindow)
	window := make(chan struct{}, pieceWindow) // runs made or in the making, not yet written
	free := make(chan []byte, pieceWindow+1)
	ord := &runOrder{bw: bw, window: window, free: free, cancel: &cancel}
	bw.Write([]byte{'['})
	go func() {
		guard()
		defer close(jobs)
		defer catchFault(&prodFault)
		from := root + 1
		for seq := 0; !cancel.Load(); seq++ {
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
			window <- struct{}{}
			jobs <- &run{seq: seq, from: from, stop: stop}
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
				if !cancel.Load() {
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
				}
				ord.done(r)
			}
		}()
	}
	wg.Wait()
	fault := ord.fault
	if fault == nil {
		fault = prodFault
	}
	if fault == nil && ord.failed != nil {
		// Redo from the failed run's start, which is a true boundary, to
		// the end, sequentially.
		r := ord.failed
		var c onepass
		c.init(src, s, make([]byte, 0, flushAt+4096), bw)
		c.maxDepth -= outer
		if r.seq > 0 {
			c.out = append(c.out, ',')
		}
		func() {
			defer catchFault(&fault)
			valid = c.elements(r.from, -1, last)
		}()
		c.flush()
	} else {
		valid = true
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

// A run is a stretch of a large array's elements made by one worker.
type run struct {
	seq        int
	from, stop int // parse elements from src[from]; end on the comma at stop, or (stop < 0) on the closing bracket
	out        []byte
	ok         bool
	fault      any // a memory fault while reading src (see fault.go)
}

// runOrder writes runs in order, whichever worker made them. The first run
// that failed (not proven, or a fault) stops the writing: it and the rest
// are redone, or the fault raised, once the workers are done.
type runOrder struct {
	bw     *countWriter
	window chan struct{}
	free   chan []byte
	cancel *atomic.Bool

	mu      sync.Mutex
	next    int          // the seq of the run to write next
	ready   map[int]*run // runs made before their turn
	writing bool         // a worker is writing
	failed  *run         // the first run in order that failed
	fault   any
}

// done takes a finished (or, after a failure, skipped) run: it writes it,
// and every run after it that is ready, if its turn has come and no other
// worker is writing; otherwise it leaves it for the worker whose turn it is.
func (o *runOrder) done(r *run) {
	o.mu.Lock()
	if o.failed != nil || o.fault != nil {
		o.mu.Unlock()
		<-o.window // after the failure: nothing more is written
		return
	}
	if o.ready == nil {
		o.ready = map[int]*run{}
	}
	o.ready[r.seq] = r
	if o.writing {
		o.mu.Unlock()
		return
	}
	o.writing = true
	for {
		r, ok := o.ready[o.next]
		if !ok || o.failed != nil || o.fault != nil {
			break
		}
		delete(o.ready, o.next)
		if r.fault != nil || !r.ok {
			o.failed, o.fault = r, r.fault
			o.cancel.Store(true)
			<-o.window
			// The runs made after it are written no more.
			for k, later := range o.ready {
				delete(o.ready, k)
				_ = later
				<-o.window
			}
			break
		}
		o.next++
		o.mu.Unlock()
		if r.seq > 0 {
			o.bw.Write([]byte{','})
		}
		o.bw.Write(r.out)
		select {
		case o.free <- r.out[:0]:
		default:
		}
		<-o.window
		o.mu.Lock()
	}
	o.writing = false
	o.mu.Unlock()
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
