package cmd

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/idemkey/idemkey/canon"
	"github.com/spf13/cobra"
)

type keyOptions struct {
	f        *Factory
	File     string
	Spec     *callSpec
	Format   *keyFormat
	Secret   []byte
	JSON     bool
	Batch    bool
	FailFast bool
}

func newKeyCmd(f *Factory) *cobra.Command {
	opts := &keyOptions{f: f}
	cmd := &cobra.Command{
		Use:   "key [FILE|-]",
		Short: "Print the idempotency key of a tool call",
		Long: `Print the idempotency key of a tool call: the lower-case hex SHA-256 of the
canonical JSON of [TASK, TOOL, ARGS], where ARGS is read from FILE (or
standard input when FILE is absent or -). The key equals the reference
harness's idempotencyKey(task, tool, args) byte for byte.

--from reads the call from an envelope (an MCP tools/call request, an OpenAI
tool call, an Anthropic tool_use block, or a {"task","tool","args"} record);
the task id comes from --task unless --from call. --batch reads JSON Lines,
one call a line, and writes one key a line.`,
		Example: `  idemkey key --task t-42 --tool open_pull_request args.json
  echo '{"b":1,"a":2}' | IDEMKEY_TASK=t-42 IDEMKEY_TOOL=pay idemkey key --json
  idemkey key --task t-42 --from openai --format uuid tool_call.json
  idemkey key --batch --from call calls.jsonl > keys.txt`,
		Args: rangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				opts.File = args[0]
			}
			var err error
			if opts.Spec, err = f.callSpec(); err != nil {
				return err
			}
			if opts.Format, err = f.keyFormat(); err != nil {
				return err
			}
			if opts.Secret, err = f.secret(); err != nil {
				return err
			}
			opts.JSON = f.Config.GetBool("json")
			opts.Batch = f.Config.GetBool("batch")
			opts.FailFast = f.Config.GetBool("fail-fast")
			if opts.Batch {
				return runKeyBatch(opts)
			}
			return runKey(opts)
		},
	}
	fl := cmd.Flags()
	addCallFlags(fl)
	addKeyFormatFlags(fl)
	fl.Bool("json", false, "print JSON: key, scheme, from, task, tool and the hashed canonical text")
	fl.Bool("batch", false, "read JSON Lines, one call a line; write one key a line")
	fl.Bool("fail-fast", false, "with --batch, stop at the first bad line")
	return cmd
}

func addKeyFormatFlags(fl interface {
	String(name, value, usage string) *string
	Int(name string, value int, usage string) *int
}) {
	fl.String("format", "hex", "key format: hex (64 chars), base64url (43) or uuid (36, RFC 9562 version 8)")
	fl.String("prefix", "", "string to put in front of the key")
	fl.Int("max-len", 0, "fail if prefix and key are longer than this (0: no limit)")
	fl.String("secret-env", "", "derive an HMAC-SHA-256 key with the secret in this environment variable")
}

// key derives and formats the key of a loaded call.
func (opts *keyOptions) key(dst []byte, lc loadedCall) []byte {
	if opts.Secret != nil {
		return opts.Format.append(dst, lc.Call.HMAC(opts.Secret))
	}
	return opts.Format.append(dst, lc.Call.Key())
}

// inputErr attaches the input's name (and line) to an error from load.
func inputErr(name string, line int, err error) error {
	var ue *UsageError
	if errors.As(err, &ue) {
		return err
	}
	return &InputError{Name: name, Line: line, Err: err}
}

func runKey(opts *keyOptions) error {
	data, name, err := opts.f.readInput(opts.File)
	if err != nil {
		return err
	}
	lc, err := opts.Spec.load(data)
	if err != nil {
		return inputErr(name, 0, err)
	}
	key := opts.key(nil, lc)
	out := opts.f.IO.Out
	if !opts.JSON {
		_, err = out.Write(append(key, '\n'))
		return err
	}
	o := &jsonObject{}
	o.str("key", string(key)).
		str("format", opts.Format.Name).
		str("scheme", opts.Spec.Scheme.String()).
		str("from", lc.From).
		str("task", lc.Call.Task).
		str("tool", lc.Call.Tool)
	if opts.Secret != nil {
		o.str("hash", "hmac-sha256")
	} else {
		o.str("hash", "sha256")
	}
	if lc.Selected {
		o.raw("selected", lc.Call.Args.Append(nil))
	}
	o.key("canonical")
	o.b = canon.AppendQuoted(o.b, string(lc.Call.AppendText(nil)))
	_, err = out.Write(o.line())
	return err
}

// runKeyBatch derives one key per line of JSON Lines input. Output line N
// belongs to input line N: a blank or bad input line gives a blank output
// line (with --json, an object with "error"), and the bad line is reported
// on standard error with its line number.
func runKeyBatch(opts *keyOptions) error {
	ios := opts.f.IO
	in, name := ios.In, stdinName
	var size int64
	if opts.File != "" && opts.File != "-" {
		fh, err := os.Open(opts.File)
		if err != nil {
			return &InputError{Name: opts.File, Err: fileErr(err)}
		}
		defer fh.Close()
		if st, err := fh.Stat(); err == nil {
			if st.IsDir() {
				return &InputError{Name: opts.File, Err: errors.New("is a directory, not a file")}
			}
			size = st.Size()
		}
		in, name = fh, opts.File
	}
	r := bufio.NewReaderSize(in, 1<<20)
	w := bufio.NewWriterSize(ios.Out, 64<<10)
	prog := newProgress(ios, size)
	var line []byte
	var buf []byte
	failed, lineNo := 0, 0
	var read int64
	for {
		chunk, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			line = append(line[:0], chunk...)
			for err == bufio.ErrBufferFull {
				chunk, err = r.ReadSlice('\n')
				line = append(line, chunk...)
			}
		} else {
			line = chunk
		}
		if err != nil && err != io.EOF {
			return &InputError{Name: name, Err: err}
		}
		if len(line) == 0 && err == io.EOF {
			break
		}
		lineNo++
		read += int64(len(line))
		body := trimEOL(line)
		buf = buf[:0]
		if len(body) == 0 {
			buf = append(buf, '\n')
		} else if lc, lerr := opts.Spec.load(body); lerr != nil {
			failed++
			lerr = inputErr(name, lineNo, lerr)
			prog.clear()
			opts.f.printError(lerr)
			if opts.JSON {
				o := &jsonObject{}
				buf = o.int("line", lineNo).str("error", oneLine(lerr.Error())).line()
			} else {
				buf = append(buf, '\n')
			}
			if opts.FailFast {
				w.Write(buf)
				w.Flush()
				return &ExitError{Code: exitUsage}
			}
		} else if opts.JSON {
			o := &jsonObject{}
			o.int("line", lineNo)
			o.key("key")
			o.b = append(o.b, '"')
			o.b = opts.key(o.b, lc)
			o.b = append(o.b, '"')
			o.str("from", lc.From).str("task", lc.Call.Task).str("tool", lc.Call.Tool)
			buf = o.line()
		} else {
			buf = append(opts.key(buf, lc), '\n')
		}
		if _, werr := w.Write(buf); werr != nil {
			return werr
		}
		if lineNo&0xFFF == 0 {
			prog.update(lineNo, read)
		}
		if err == io.EOF {
			break
		}
	}
	prog.clear()
	if err := w.Flush(); err != nil {
		return err
	}
	if failed > 0 {
		fmt.Fprintf(ios.Err, "idemkey: %d of %d lines failed\n", failed, lineNo)
		return &ExitError{Code: exitUsage}
	}
	return nil
}

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return b
}

// progress draws a one-line progress report on standard error for long
// batches, only when standard error is a terminal.
type progress struct {
	w     io.Writer
	on    bool
	size  int64
	start time.Time
	last  time.Time
	drawn bool
}

func newProgress(ios *IOStreams, size int64) *progress {
	now := time.Now()
	return &progress{w: ios.Err, on: isTerminal(ios.Err), size: size, start: now, last: now}
}

func (p *progress) update(lines int, read int64) {
	if !p.on {
		return
	}
	now := time.Now()
	if now.Sub(p.start) < time.Second || now.Sub(p.last) < 200*time.Millisecond {
		return
	}
	p.last = now
	rate := float64(lines) / now.Sub(p.start).Seconds()
	if p.size > 0 {
		pct := float64(read) * 100 / float64(p.size)
		const width = 30
		bar := make([]byte, width)
		for i := range bar {
			if float64(i) < pct*width/100 {
				bar[i] = '#'
			} else {
				bar[i] = '.'
			}
		}
		fmt.Fprintf(p.w, "\r[%s] %5.1f%% %d lines, %.0f keys/s", bar, pct, lines, rate)
	} else {
		fmt.Fprintf(p.w, "\r%d lines, %.0f keys/s", lines, rate)
	}
	p.drawn = true
}

func (p *progress) clear() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}
