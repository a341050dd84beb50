package key

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"runtime"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/input"
)

// runBatch derives one key per line of JSON Lines input. Output line N
// belongs to input line N: a blank input line (see input.BlankLine) gives an
// empty output line, with --json too, and is no error; a bad input line
// gives an empty output line (with --json, an object with "error") and is
// reported on standard error with its line number. Chunks of lines are
// derived in parallel on every core and written in input order.
func runBatch(opts *Options) error {
	in, name, size, closeIn, err := input.OpenLines(opts.f, opts.File)
	if err != nil {
		return err
	}
	defer closeIn()
	workers := runtime.GOMAXPROCS(0)
	b := &batch{
		name: name,
		// A chunk queued for each worker, and one more for the writer:
		// each queued chunk is a buffer in memory, and more of them only
		// faulted in more pages (the workers are the bottleneck).
		todo:  make(chan *batchChunk, workers),
		order: make(chan *batchChunk, workers+1),
		quit:  make(chan struct{}),
		// The chunks read and not yet written hold at most this many MiB
		// (or one chunk, if it is larger), whatever the lengths of the lines.
		mem: make(chan struct{}, 4*workers+2*input.LineLimit>>20),
	}
	// Chunks written out come back to the reader, so that their buffers
	// are reused while they are warm in the cache.
	b.free = make(chan *batchChunk, cap(b.mem)+1)
	defer close(b.quit)
	go b.read(in)
	for i := 0; i < workers; i++ {
		bw := opts.newBatchWorker()
		go func() {
			for c := range b.todo {
				c.split()
				opts.deriveChunk(bw, c, name)
				close(c.done)
			}
		}()
	}
	return opts.writeBatch(b, size)
}

// batch is the pipeline of a key --batch: a reader splits the input into
// chunks of whole lines (todo, and order for the writer), workers derive
// their keys, the writer writes them in input order.
type batch struct {
	name        string
	todo, order chan *batchChunk
	free        chan *batchChunk // written out: their buffers are reused
	quit        chan struct{}
	mem         chan struct{} // a MiB of the memory budget a chunk holds
	readErr     error
	tooLong     int // the line past input.LineLimit, where reading stopped
}

// read splits in into chunks of whole lines, hands them to the workers
// and the writer, and closes both channels at the end of the input, a
// read error or a line over input.LineLimit.
func (b *batch) read(in io.Reader) {
	defer close(b.todo)
	defer close(b.order)
	r := input.NewChunkReader(in)
	for {
		var c *batchChunk
		select {
		case c = <-b.free: // written out: its buffers are free
			*c = batchChunk{data: c.data[:0], lines: c.lines[:0], out: c.out[:0]}
		default:
			c = &batchChunk{data: make([]byte, 0, input.ChunkSize+64<<10)}
		}
		c.first, c.done = r.LineNo+1, make(chan struct{})
		c.data = r.Next(c.data)
		c.read = int64(len(c.data))
		b.tooLong, b.readErr = r.TooLong, r.Failure(b.name)
		if len(c.data) > 0 && !b.send(c) {
			return
		}
		if r.Done {
			return
		}
	}
}

// send takes c's share of the memory budget and hands c on; false when the
// batch is given up.
func (b *batch) send(c *batchChunk) bool {
	c.mib = min(1+cap(c.data)>>20, cap(b.mem))
	for range c.mib {
		select {
		case b.mem <- struct{}{}:
		case <-b.quit:
			return false
		}
	}
	for _, ch := range []chan *batchChunk{b.order, b.todo} {
		select {
		case ch <- c:
		case <-b.quit:
			return false
		}
	}
	return true
}

// writeBatch writes the chunks' output in input order as they are done,
// reports their bad lines and, at the end, what went wrong. size is the
// input's, for the progress line.
func (opts *Options) writeBatch(b *batch, size int64) error {
	ios := opts.f.IO
	w := bufio.NewWriterSize(ios.Out, 64<<10)
	prog := newProgress(ios, size)
	failed, lines := 0, 0
	var read int64
	// Each omit pointer in the order given: --omit first, then each
	// tool's, as lines show them.
	var sum batchWarnings
	for _, p := range opts.Spec.Omit {
		sum.omit("", p)
	}
	defer func() { sum.print(opts.f, b.name) }()
	for c := range b.order {
		<-c.done
		sum.add(&c.warns)
		for _, err := range c.errs {
			prog.clear()
			opts.f.PrintError(err)
		}
		failed += len(c.errs)
		lines += c.n
		read += c.read
		if _, err := w.Write(c.out); err != nil {
			return err
		}
		for range c.mib {
			<-b.mem
		}
		if cap(c.data) <= 2<<20 {
			select {
			case b.free <- c:
			default:
			}
		}
		if opts.FailFast && len(c.errs) > 0 {
			w.Flush()
			return &cli.ExitError{Code: cli.ExitUsage}
		}
		prog.update(lines, read)
	}
	prog.clear()
	return opts.endBatch(b, w, failed, lines)
}

// endBatch ends a batch whose chunks are all written: the line too long to
// read, a read error, the count of the bad lines.
func (opts *Options) endBatch(b *batch, w *bufio.Writer, failed, lines int) error {
	ios := opts.f.IO
	if b.tooLong > 0 {
		// The long line's output line, then the report: reading stopped.
		if opts.JSON {
			w.Write((&cli.JSONObject{}).Int("line", b.tooLong).Str("error", cli.OneLine(b.readErr.Error())).Line())
		} else {
			w.WriteByte('\n')
		}
		if err := w.Flush(); err != nil {
			return err
		}
		opts.f.PrintError(b.readErr)
		fmt.Fprintf(ios.Err, "idemkey: %d of %d lines failed; the lines after line %d were not read\n", failed+1, lines+1, b.tooLong)
		return &cli.ExitError{Code: cli.ExitUsage}
	}
	if b.readErr != nil {
		return b.readErr
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if failed > 0 {
		fmt.Fprintf(ios.Err, "idemkey: %d of %d lines failed\n", failed, lines)
		return &cli.ExitError{Code: cli.ExitUsage}
	}
	return nil
}

// batchChunk is a run of input lines and, once done is closed, their output.
type batchChunk struct {
	first int      // line number of the first line
	data  []byte   // the lines' bytes
	lines [][2]int // start and length (without the line end) of each line
	read  int64    // input bytes, line ends included
	done  chan struct{}
	out   []byte  // one output line per input line
	errs  []error // the bad lines' errors, in order
	n     int     // lines processed (fewer than len(lines) after --fail-fast)
	mib   int     // MiB of the batch's memory budget it holds
	warns batchWarnings
}

// split finds the lines of c.data.
func (c *batchChunk) split() {
	for i := 0; i < len(c.data); {
		j := bytes.IndexByte(c.data[i:], '\n') + 1
		if j == 0 {
			j = len(c.data) - i
		}
		c.lines = append(c.lines, [2]int{i, len(input.TrimEOL(c.data[i : i+j]))})
		i += j
	}
}
