// Package canon is the face of 'idemkey canon': the canonical form of a
// document, of a call's arguments out of an envelope, or of the hashed
// call text, and the --check gate over files (the library: canon/).
package canon

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/input"
	"github.com/idemkey/idemkey/cmd/internal/keyflags"
	"github.com/idemkey/idemkey/cmd/internal/settings"
	"github.com/idemkey/idemkey/derive"
	"github.com/spf13/cobra"
)

// Options are canon's settings.
type Options struct {
	f      *cli.Factory
	Files  []string
	Scheme canon.Scheme
	Call   bool
	Spec   *derive.Spec
	Check  bool
	Write  bool // --write: rewrite the files that are not canonical in place
}

// NewCmd builds 'idemkey canon': its options, its flags, and run; with
// runF, runF instead of run, once the options are read (a test's seam for
// the flags and settings).
func NewCmd(f *cli.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{f: f}
	cmd := &cobra.Command{
		Use:   "canon [FILE|-]\n  idemkey canon --from FORMAT [--tool NAME] [FILE|-]\n  idemkey canon --call --task ID --tool NAME [FILE|-]\n  idemkey canon --check FILE...\n  idemkey canon --write FILE...",
		Short: "Print the canonical form of JSON, or check that files are canonical",
		Long: `Print the canonical form of the JSON in FILE (or standard input) and a newline.

With --from mcp, openai, anthropic, call or auto, print the canonical form
of the call's arguments taken out of the envelope (an OpenAI "arguments"
string is parsed): what the key is derived from.

With --call, print the exact text that is hashed into the key,
["TASK","TOOL",ARGS]: piping it, less the newline, through sha256sum gives
the key.

With --check, list the files that are not already canonical (a file counts
as canonical when its bytes equal its canonical form, optionally followed by
one newline) and exit 1 if any is listed: a CI gate. Standard error says
what is not canonical and where: member order at a pointer, number form,
string form (escapes), a duplicate member, white space, the line ending
(the first five places of each file).

With --write, rewrite each file that is not canonical in place (its
canonical form and one newline, written to a new file in the same
directory that then replaces it, keeping the file's mode) and list the
files rewritten. Only regular files are rewritten; a file that is not valid
JSON is left as it is and reported.`,
		Example: `  idemkey canon args.json
  idemkey canon --from openai tool_call.json
  idemkey canon --call --task t-42 --tool pay args.json | tr -d '\n' | sha256sum
  idemkey canon --check testdata/*.json
  idemkey canon --write testdata/*.json`,
		Args: func(cmd *cobra.Command, args []string) error {
			for _, name := range []string{"check", "write"} {
				if cli.Changed(cmd.Flags(), name) {
					if len(args) == 0 {
						return &cli.UsageError{Err: fmt.Errorf("--%s needs at least one FILE", name)}
					}
					return nil
				}
			}
			return cli.RangeArgs(0, 1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Files = args
			if err := opts.load(cmd); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return run(opts)
		},
	}
	fl := cmd.Flags()
	keyflags.AddCallFlags(fl)
	fl.Bool("call", false, "print the hashed call text [TASK,TOOL,ARGS]")
	fl.Bool("check", false, "list the FILEs that are not canonical, and say what is not; exit 1 if any")
	fl.Bool("write", false, "rewrite the FILEs that are not canonical in place")
	return cmd
}

// load reads canon's settings: the scheme, and --call, --check or --from
// with the flags that go with each.
func (opts *Options) load(cmd *cobra.Command) error {
	f := opts.f
	var err error
	if opts.Scheme, err = keyflags.Scheme(f); err != nil {
		return err
	}
	opts.Call = f.Config.GetBool("call")
	opts.Check = f.Config.GetBool("check")
	opts.Write = cli.Changed(cmd.Flags(), "write") // the command line alone: it changes files
	switch {
	case opts.Check && opts.Write:
		return cli.Usagef("--check and --write cannot be used together")
	case opts.Call && opts.Check:
		return cli.Usagef("--call and --check cannot be used together")
	case opts.Call && opts.Write:
		return cli.Usagef("--call and --write cannot be used together")
	}
	from := f.Config.GetString("from")
	switch {
	case opts.Call:
		if opts.Spec, err = keyflags.Spec(f); err != nil {
			return err
		}
	case opts.Check && cli.Changed(cmd.Flags(), "from"):
		return cli.Usagef("--from does not go with --check")
	case opts.Write && cli.Changed(cmd.Flags(), "from"):
		return cli.Usagef("--from does not go with --write")
	case from != derive.FromArgs:
		if !derive.ValidFrom(from) {
			return f.Config.Invalid("from", "want "+settings.OrList(derive.FromNames))
		}
		// The arguments out of an envelope: the task id is not
		// part of what is printed, so none is asked for.
		opts.Spec = &derive.Spec{From: from, Tool: f.Config.GetString("tool"), Scheme: opts.Scheme, NoTask: true}
	}
	if !opts.Call {
		for _, name := range []string{"only", "omit", "allow-missing", "task"} {
			if cli.Changed(cmd.Flags(), name) {
				return cli.Usagef("--%s goes with --call", name)
			}
		}
		if cli.Changed(cmd.Flags(), "tool") && opts.Spec == nil {
			return cli.Usagef("--tool goes with --call or --from")
		}
	}
	return nil
}

// run prints the canonical form of one input, or checks or rewrites
// files (--check, --write: runCheck).
func run(opts *Options) error {
	if opts.Check || opts.Write {
		return runCheck(opts)
	}
	file := ""
	if len(opts.Files) > 0 {
		file = opts.Files[0]
	}
	data, name, err := input.ReadJSON(opts.f, file)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(opts.f.IO.Out, 64<<10)
	if opts.Call {
		lc, err := keyflags.Load(opts.Spec, data)
		if err != nil {
			return cli.InputErr(name, 0, err)
		}
		err = lc.Call.WriteText(w)
	} else if opts.Spec != nil {
		lc, err := keyflags.Load(opts.Spec, data)
		if err != nil {
			return cli.InputErr(name, 0, err)
		}
		_, err = w.Write(lc.Args.Append(nil))
		if err != nil {
			return err
		}
	} else {
		doc, perr := input.ParseDoc(data, name, opts.Scheme)
		if perr != nil {
			return perr
		}
		_, err = doc.WriteTo(w)
	}
	if err != nil {
		return err
	}
	w.WriteByte('\n')
	return w.Flush()
}

// faultsShown is how many places of a file --check describes.
const faultsShown = 5

// runCheck is --check and --write: each file read and compared with its
// canonical form; with --check what is not canonical is said, with --write
// the file is rewritten.
func runCheck(opts *Options) error {
	ios := opts.f.IO
	bad, invalid := 0, 0
	for _, file := range opts.Files {
		if opts.Write && (file == "-" || file == "") {
			invalid++
			opts.f.PrintError(cli.Usagef("--write rewrites files: standard input (-) has none"))
			continue
		}
		data, name, err := input.ReadJSON(opts.f, file)
		if err == nil {
			var doc *canon.Document
			if doc, err = input.ParseDoc(data, name, opts.Scheme); err == nil {
				c := doc.Append(make([]byte, 0, len(data)+1))
				body := bytes.TrimSuffix(data, []byte{'\n'})
				if bytes.Equal(body, c) {
					continue
				}
				if opts.Write {
					if err = rewrite(file, append(c, '\n')); err == nil {
						fmt.Fprintf(ios.Out, "%s\n", name)
						continue
					}
					err = &cli.InputError{Name: name, Err: err}
				} else {
					bad++
					fmt.Fprintf(ios.Out, "%s\n", name)
					opts.describe(name, doc, data, c)
					continue
				}
			}
		}
		invalid++
		opts.f.PrintError(err)
	}
	switch {
	case invalid > 0:
		return &cli.ExitError{Code: cli.ExitUsage}
	case bad > 0:
		fmt.Fprintf(ios.Err, "idemkey: %d of %d files not canonical\nhint: 'idemkey canon --write FILE' rewrites them; 'idemkey canon FILE' prints the canonical form\n", bad, len(opts.Files))
		return &cli.ExitError{Code: cli.ExitNegative}
	}
	return nil
}

// describe says on standard error what makes a file not canonical, one
// line per place, FILE:LINE:COL first.
func (opts *Options) describe(name string, doc *canon.Document, data, c []byte) {
	w := opts.f.IO.Err
	faults, more := doc.Faults(faultsShown)
	if len(faults) == 0 { // not expected: say where the bytes part
		line, col := canon.Position(data, firstDiff(data, c))
		fmt.Fprintf(w, "idemkey: %s:%d:%d: not canonical (%s)\n", name, line, col, opts.Scheme)
		return
	}
	for _, f := range faults {
		line, col := canon.Position(data, f.Offset)
		what := f.Kind
		switch f.Kind {
		case canon.FaultSpace:
		case canon.FaultLineEnd:
			what += " (CR LF; the canonical form ends in one LF at most)"
		default:
			at := f.Pointer
			if at == "" {
				at = "the top level"
			}
			what += " at " + cli.EscapeControls(at)
		}
		fmt.Fprintf(w, "idemkey: %s:%d:%d: not canonical (%s): %s\n", name, line, col, opts.Scheme, what)
	}
	if more {
		fmt.Fprintf(w, "idemkey: %s: more places not canonical than the %d above\n", name, faultsShown)
	}
}

// rewrite replaces a regular file's contents with data: written to a new
// file in the same directory, synced, given the old file's mode, then
// renamed over it, so that a reader sees the old text or the new one,
// never a part.
func rewrite(path string, data []byte) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return input.FileErr(err)
	}
	if !fi.Mode().IsRegular() {
		return errors.New("not a regular file: not rewritten")
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".idemkey-*")
	if err != nil {
		return fmt.Errorf("cannot write next to it: %w", input.FileErr(err))
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Chmod(fi.Mode().Perm()); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	done = true
	return nil
}

// firstDiff returns the offset of the first byte where a and b differ.
func firstDiff(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
