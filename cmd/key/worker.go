package key

import (
	"bytes"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/input"
	"github.com/idemkey/idemkey/cmd/internal/keyflags"
	"github.com/idemkey/idemkey/derive"
)

// batchWorker is what one goroutine of a batch reuses from line to line.
type batchWorker struct {
	spec       *derive.Spec
	pass       canon.Pass // for quickKey
	keyer      *derive.Keyer
	quick      bool   // lines may take quickKey
	task, tool []byte // --task and --tool quoted, for --from args
}

func (opts *Options) newBatchWorker() *batchWorker {
	w := &batchWorker{spec: opts.Spec.Copy(), keyer: derive.NewKeyer(opts.Key.Secret)}
	s := w.spec
	s.Warn = nil // summed up in batchWarnings by writeBatch
	w.quick = !opts.JSON && len(s.Only) == 0 && len(s.Omit) == 0
	switch s.From {
	case derive.FromCall:
	case derive.FromArgs:
		t := derive.Text{Task: s.Task, Tool: s.Tool, Scheme: s.Scheme}
		_, perTool := s.Tools[s.Tool]
		w.quick = w.quick && !perTool && t.Validate() == nil
		w.task, w.tool = canon.AppendQuoted(nil, s.Task), canon.AppendQuoted(nil, s.Tool)
	default:
		w.quick = false
	}
	return w
}

// quickKey derives the key of a line as load and key would, in one pass
// over it (canon.Pass) without a parsed document, for the common lines: a
// call record whose task and tool are plain strings (no escapes) that
// agree with --task and --tool, or bare arguments that are not shaped like
// an envelope. ok is false for any other line, and for an invalid one:
// load then reads it and says what is wrong, or what to warn about.
func (w *batchWorker) quickKey(body []byte) (key [32]byte, ok bool) {
	s := w.spec
	if s.From == derive.FromArgs {
		if !s.FromSet && derive.MayHaveShape(body) {
			return key, false
		}
		return w.keyer.KeyText(w.task, w.tool, &w.pass, body, s.Scheme)
	}
	mems, ok := w.pass.Members(body, s.Scheme)
	if !ok {
		return key, false
	}
	var task, tool, args []byte
	for _, m := range mems {
		switch string(m.Name) {
		case "task":
			task = m.Value
		case "tool":
			tool = m.Value
		case "args":
			args = m.Value
		}
	}
	if args == nil || !plainString(task, s.Task) || !plainString(tool, s.Tool) {
		return key, false
	}
	if _, perTool := s.Tools[string(tool[1:len(tool)-1])]; perTool {
		return key, false // the tool's own --only and --omit apply: load does it
	}
	return w.keyer.Key(task, tool, args), true
}

// plainString reports whether v, a canonical JSON value, is a non-empty
// string written without escapes, equal to want unless want is empty. Its
// text is then valid UTF-8 without lone surrogates (canon escapes those),
// which derive.Call.Validate accepts.
func plainString(v []byte, want string) bool {
	if len(v) < 3 || v[0] != '"' || bytes.IndexByte(v, '\\') >= 0 {
		return false
	}
	return want == "" || string(v[1:len(v)-1]) == want
}

func (opts *Options) deriveChunk(w *batchWorker, c *batchChunk, name string) {
	spec := w.spec
	for i, ln := range c.lines {
		lineNo := c.first + i
		c.n++
		body := c.data[ln[0] : ln[0]+ln[1]]
		if input.BlankLine(body) {
			c.out = append(c.out, '\n')
			continue
		}
		if w.quick {
			if k, ok := w.quickKey(body); ok {
				c.warns.loaded++
				c.out = append(opts.Key.Format.Append(c.out, k), '\n')
				continue
			}
		}
		lc, err := keyflags.Load(spec, body)
		if err == nil {
			c.warns.note(lc, lineNo)
		}
		if err != nil {
			err = cli.InputErr(name, lineNo, err)
			c.errs = append(c.errs, err)
			if opts.JSON {
				o := &cli.JSONObject{Buf: c.out[len(c.out):]}
				c.out = append(c.out, o.Int("line", lineNo).Str("error", cli.OneLine(err.Error())).Line()...)
			} else {
				c.out = append(c.out, '\n')
			}
			if opts.FailFast {
				return
			}
			continue
		}
		if !opts.JSON {
			c.out = append(opts.Key.Append(c.out, lc.Call), '\n')
			continue
		}
		o := &cli.JSONObject{}
		o.Int("line", lineNo)
		o.Key("key")
		o.Buf = append(o.Buf, '"')
		o.Buf = opts.Key.Append(o.Buf, lc.Call)
		o.Buf = append(o.Buf, '"')
		o.Str("from", lc.From).Str("task", lc.Call.Task).Str("tool", lc.Call.Tool)
		c.out = append(c.out, o.Line()...)
	}
}
