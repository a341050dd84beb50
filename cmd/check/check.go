// Package check is the face of 'idemkey check': pinned keys in JSON
// Lines recomputed, every mismatch reported.
package check

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/input"
	"github.com/idemkey/idemkey/cmd/internal/keyflags"
	"github.com/idemkey/idemkey/cmd/internal/settings"
	"github.com/idemkey/idemkey/derive"
	"github.com/spf13/cobra"
)

// Options are check's settings.
type Options struct {
	f      *cli.Factory
	Files  []string // "-" or none: standard input
	Scheme canon.Scheme
	From   string
	Key    keyflags.Key
	Sel    *derive.Spec // --only and --omit, and each tool's in the config file
	JSON   bool         // each mismatch as a JSON object on its own line
}

// NewCmd builds 'idemkey check': its options, its flags, and run; with
// runF, runF instead of run, once the options are read (a test's seam for
// the flags and settings).
func NewCmd(f *cli.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{f: f}
	cmd := &cobra.Command{
		Use:   "check [VECTORS.jsonl|-]...",
		Short: "Recompute pinned keys and report every mismatch",
		Long: `Recompute the key of every vector in JSON Lines files (standard input
when no file or - is given), one vector a line:

  {"task":"…","tool":"…","args":…,"key":"…"}    (optional "scheme":"js"|"jcs")

The key is compared as 'idemkey key' would print it with the same --format,
--prefix and --secret-env, so vectors can pin the keys a server logs.
Each mismatch is printed on standard output with its file and line number
(with --json, as one JSON object a line, for CI: {"file","line","task",
"tool","scheme","args","want","got"}, "args" the canonical arguments the
key was derived from, after --from, --only and --omit); the exit code is 1 if any key differs, 2 if any line is invalid or a file
holds no vector. Blank lines are skipped. A CI job pins canonicalization
across upgrades this way.`,
		Example: `  idemkey check testdata/vectors.jsonl
  idemkey check --format uuid --prefix pay- pinned/*.jsonl
  idemkey check --json testdata/vectors.jsonl > mismatches.jsonl
  gen-vectors | idemkey check`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Files = args
			if len(args) == 0 {
				opts.Files = []string{"-"}
			}
			var err error
			if opts.Scheme, err = keyflags.Scheme(f); err != nil {
				return err
			}
			if opts.From = f.Config.GetString("from"); !derive.ValidFrom(opts.From) || opts.From == derive.FromCall {
				return f.Config.Invalid("from", "want args, mcp, openai, anthropic or auto for check")
			}
			if opts.Key, err = keyflags.KeyFrom(f); err != nil {
				return err
			}
			v := f.Config
			opts.JSON = v.GetBool("json")
			opts.Sel = &derive.Spec{Only: v.GetStringSlice("only"), Omit: v.GetStringSlice("omit"), AllowMissing: v.GetBool("allow-missing")}
			if err := keyflags.CheckPointers(v.Source("only"), v.Source("omit"), opts.Sel.Only, opts.Sel.Omit); err != nil {
				return err
			}
			if opts.Sel.Tools, err = keyflags.ToolSelections(f); err != nil {
				return err
			}
			if err := stdinOnce(opts.Files); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return run(opts)
		},
	}
	fl := cmd.Flags()
	fl.String("scheme", "js", "scheme for vectors that name none: js or jcs")
	settings.OneOf(fl, "scheme", canon.SchemeNames...)
	fl.String("from", derive.FromArgs, "format of each vector's \"args\": "+strings.Join(checkFroms, ", ")+` (the tool then comes from the envelope)`)
	settings.OneOf(fl, "from", checkFroms...)
	cli.CompleteValues(cmd, "from", checkFroms...)
	keyflags.AddFormatFlags(fl)
	fl.StringArray("only", nil, "derive each key from just this part of the args, as key does (an RFC 6901 `POINTER`; repeatable)")
	fl.StringArray("omit", nil, "drop this part of the args before deriving, as key does (an RFC 6901 `POINTER`; repeatable)")
	settings.ReadPerTool(fl, "only", "omit")
	fl.Bool("allow-missing", false, "let --only pointers that match nothing be ignored")
	fl.Bool("json", false, "print each mismatch as a JSON object on its own line: file, line, the call, want and got")
	return cmd
}

// checkFroms are the --from values check takes: a vector carries its task,
// so not call.
var checkFroms = []string{derive.FromArgs, derive.FromMCP, derive.FromOpenAI, derive.FromAnthropic, derive.FromAuto}

// stdinOnce refuses standard input (-) named twice, before anything is
// read or reported: a usage error is the only line then.
func stdinOnce(files []string) error {
	seen := false
	for _, file := range files {
		if file == "-" || file == "" {
			if seen {
				return cli.Usagef("standard input (-) given more than once")
			}
			seen = true
		}
	}
	return nil
}

// vector is one line of a vectors file.
type vector struct {
	call derive.Call
	want string
	s    canon.Scheme
}

func run(opts *Options) error {
	ios := opts.f.IO
	total, mismatches, invalid := 0, 0, 0
	for _, file := range opts.Files {
		found, bad, mismatched, err := opts.checkFile(file)
		invalid += bad
		mismatches += mismatched
		if err != nil {
			invalid++
			opts.f.PrintError(err)
		}
		total += found
	}
	fmt.Fprintf(ios.Err, "idemkey: checked %d %s: %d mismatched, %d invalid\n", total, cli.Plural(total, "vector", "vectors"), mismatches, invalid)
	switch {
	case invalid > 0:
		return &cli.ExitError{Code: cli.ExitUsage}
	case mismatches > 0:
		return &cli.ExitError{Code: cli.ExitNegative}
	}
	return nil
}

// checkFile checks the vectors of one JSON Lines file, read in chunks of
// whole lines by the reader key --batch and drift use (a line may be as
// long as a document may): how many it found, how many lines were invalid
// (each reported) and how many keys mismatched (each on standard output).
// The error is what kept the file from being read to its end, or that it
// holds no vector.
func (opts *Options) checkFile(file string) (found, invalid, mismatches int, err error) {
	in, name, _, closeIn, err := input.OpenLines(opts.f, file)
	if err != nil {
		return 0, 0, 0, err
	}
	defer closeIn()
	plain := opts.Key.Format.Name == "hex" && opts.Key.Format.Prefix == ""
	r := &input.ChunkReader{In: in, Limit: int(canon.MaxSize)}
	lineNo := 0
	var buf []byte
	for !r.Done {
		buf = r.Next(buf)
		for rest := buf; len(rest) > 0; {
			l := len(rest)
			if i := bytes.IndexByte(rest, '\n'); i >= 0 {
				l = i + 1
			}
			line := input.TrimEOL(rest[:l])
			rest = rest[l:]
			lineNo++
			if input.BlankLine(line) {
				continue
			}
			found++
			v, err := parseVector(line, opts.Scheme, opts.From, plain, opts.Sel)
			if err != nil {
				invalid++
				opts.f.PrintError(&cli.InputError{Name: name, Line: lineNo, Err: err})
				continue
			}
			if got := string(opts.Key.Append(nil, v.call)); got != v.want {
				mismatches++
				if opts.JSON {
					var o cli.JSONObject
					o.Str("file", name).Int("line", lineNo).Str("task", v.call.Task).Str("tool", v.call.Tool).Str("scheme", v.s.String())
					o.Raw("args", v.call.Args.Append(nil)).Str("want", v.want).Str("got", got)
					opts.f.IO.Out.Write(o.Line())
					continue
				}
				fmt.Fprintf(opts.f.IO.Out, "%s:%d: key mismatch: want %s, got %s\n", name, lineNo, cli.EscapeControls(v.want), got)
			}
		}
	}
	if err := r.Failure(name); err != nil {
		return found, invalid, mismatches, err
	}
	if found == 0 {
		return 0, invalid, mismatches, &cli.InputError{Name: name, Err: errors.New("no vectors found")}
	}
	return found, invalid, mismatches, nil
}

// parseVector reads one vector line. The line is parsed under the scheme it
// names, so that a jcs vector's arguments are held to RFC 8785.
// plain says the keys are bare hex (no --format, --prefix), as the
// harness prints them, so a "key" of another shape is refused as invalid.
//
// sel, if not nil, gives the --only and --omit (the tool's, from the
// config file's tools section, where it has them) applied to the
// arguments, as key applies them.
func parseVector(line []byte, def canon.Scheme, from string, plain bool, sel *derive.Spec) (vector, error) {
	doc, err := canon.Parse(line, canon.JS)
	if err != nil {
		return vector{}, err
	}
	root := doc.Root()
	if root.Kind() != canon.Object {
		return vector{}, errors.New("a vector must be a JSON object")
	}
	v := vector{s: def}
	if sn, ok := root.Get("scheme"); ok {
		if sn.Kind() != canon.String {
			return vector{}, errors.New(`"scheme" must be a string`)
		}
		if v.s, err = canon.ParseScheme(sn.Text()); err != nil {
			return vector{}, err
		}
	}
	if v.s != canon.JS {
		// Hold the whole line, and so the arguments, to the vector's scheme.
		if doc, err = canon.Parse(line, v.s); err != nil {
			return vector{}, err
		}
		root = doc.Root()
	}
	str := func(field string) (string, error) {
		n, ok := root.Get(field)
		if !ok {
			return "", fmt.Errorf("missing %q member", field)
		}
		if n.Kind() != canon.String {
			return "", fmt.Errorf("%q must be a string, not %s", field, n.Kind())
		}
		return n.Text(), nil
	}
	if v.call.Task, err = str("task"); err != nil {
		return vector{}, err
	}
	if _, ok := root.Get("tool"); ok || from == derive.FromArgs {
		if v.call.Tool, err = str("tool"); err != nil {
			return vector{}, err
		}
	}
	if v.want, err = str("key"); err != nil {
		return vector{}, err
	}
	args, ok := root.Get("args")
	if !ok {
		return vector{}, errors.New(`missing "args" member`)
	}
	v.call.Args = args
	if from != derive.FromArgs {
		// The arguments are an envelope: the tool comes from it.
		spec := &derive.Spec{From: from, Task: v.call.Task, Tool: v.call.Tool, Scheme: v.s}
		lc, err := keyflags.Load(spec, args.Raw())
		if err != nil {
			return vector{}, err
		}
		v.call = lc.Call
	}
	if err := v.call.Validate(); err != nil {
		return vector{}, err
	}
	if sel != nil {
		if ts := *sel.ForTool(v.call.Tool); len(ts.Only) > 0 || len(ts.Omit) > 0 {
			ts.Scheme = v.s
			if v.call.Args, _, err = ts.SelectArgs(v.call.Args); err != nil {
				return vector{}, err
			}
		}
	}
	if plain && !keyflags.IsHexKey(v.want) {
		return vector{}, fmt.Errorf(`"key" must be 64 lower-case hex digits, not %q`, v.want)
	}
	return v, nil
}
