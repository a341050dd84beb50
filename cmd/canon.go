package cmd

import (
	"bufio"
	"bytes"
	"fmt"

	"github.com/idemkey/idemkey/canon"
	"github.com/spf13/cobra"
)

type canonOptions struct {
	f      *Factory
	Files  []string
	Scheme canon.Scheme
	Call   bool
	Spec   *callSpec
	Check  bool
}

func newCanonCmd(f *Factory) *cobra.Command {
	opts := &canonOptions{f: f}
	cmd := &cobra.Command{
		Use:   "canon [FILE|-]\n  idemkey canon --from FORMAT [--tool NAME] [FILE|-]\n  idemkey canon --call --task ID --tool NAME [FILE|-]\n  idemkey canon --check FILE...",
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
one newline) and exit 1 if any is listed: a CI gate.`,
		Example: `  idemkey canon args.json
  idemkey canon --from openai tool_call.json
  idemkey canon --call --task t-42 --tool pay args.json | tr -d '\n' | sha256sum
  idemkey canon --check testdata/*.json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if changed(cmd.Flags(), "check") {
				if len(args) == 0 {
					return &UsageError{Err: fmt.Errorf("--check needs at least one FILE")}
				}
				return nil
			}
			return rangeArgs(0, 1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Files = args
			if err := opts.load(cmd); err != nil {
				return err
			}
			if opts.Check {
				return runCanonCheck(opts)
			}
			return runCanon(opts)
		},
	}
	fl := cmd.Flags()
	addCallFlags(fl)
	fl.Bool("call", false, "print the hashed call text [TASK,TOOL,ARGS]")
	fl.Bool("check", false, "list the FILEs that are not canonical; exit 1 if any")
	return cmd
}

// load reads canon's settings: the scheme, and --call, --check or --from
// with the flags that go with each.
func (opts *canonOptions) load(cmd *cobra.Command) error {
	f := opts.f
	var err error
	if opts.Scheme, err = f.scheme(); err != nil {
		return err
	}
	opts.Call = f.Config.GetBool("call")
	opts.Check = f.Config.GetBool("check")
	if opts.Call && opts.Check {
		return usageErrorf("--call and --check cannot be used together")
	}
	from := f.Config.GetString("from")
	switch {
	case opts.Call:
		if opts.Spec, err = f.callSpec(); err != nil {
			return err
		}
	case opts.Check && changed(cmd.Flags(), "from"):
		return usageErrorf("--from does not go with --check")
	case from != fromArgs:
		if !validFrom(from) {
			return f.Config.Invalid("from", "want "+orList(fromNames))
		}
		// The arguments out of an envelope: the task id is not
		// part of what is printed, so none is asked for.
		opts.Spec = &callSpec{From: from, Tool: f.Config.GetString("tool"), Scheme: opts.Scheme, NoTask: true}
	}
	if !opts.Call {
		for _, name := range []string{"only", "omit", "allow-missing", "task"} {
			if changed(cmd.Flags(), name) {
				return usageErrorf("--%s goes with --call", name)
			}
		}
		if changed(cmd.Flags(), "tool") && opts.Spec == nil {
			return usageErrorf("--tool goes with --call or --from")
		}
	}
	return nil
}

func runCanon(opts *canonOptions) error {
	file := ""
	if len(opts.Files) > 0 {
		file = opts.Files[0]
	}
	data, name, err := opts.f.readJSON(file)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(opts.f.IO.Out, 64<<10)
	if opts.Call {
		lc, err := opts.Spec.load(data)
		if err != nil {
			return inputErr(name, 0, err)
		}
		err = lc.Call.WriteText(w)
	} else if opts.Spec != nil {
		lc, err := opts.Spec.load(data)
		if err != nil {
			return inputErr(name, 0, err)
		}
		_, err = w.Write(lc.Args.Append(nil))
		if err != nil {
			return err
		}
	} else {
		doc, perr := parseDoc(data, name, opts.Scheme)
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

func runCanonCheck(opts *canonOptions) error {
	ios := opts.f.IO
	bad, invalid := 0, 0
	for _, file := range opts.Files {
		data, name, err := opts.f.readJSON(file)
		if err == nil {
			var doc *canon.Document
			if doc, err = parseDoc(data, name, opts.Scheme); err == nil {
				c := doc.Append(make([]byte, 0, len(data)))
				body := bytes.TrimSuffix(data, []byte{'\n'})
				if bytes.Equal(body, c) {
					continue
				}
				bad++
				fmt.Fprintf(ios.Out, "%s\n", name)
				line, col := canon.Position(data, firstDiff(data, c))
				fmt.Fprintf(ios.Err, "idemkey: %s:%d:%d: not canonical (%s)\n", name, line, col, opts.Scheme)
				continue
			}
		}
		invalid++
		opts.f.printError(err)
	}
	switch {
	case invalid > 0:
		return &ExitError{Code: exitUsage}
	case bad > 0:
		fmt.Fprintf(ios.Err, "idemkey: %d of %d files not canonical\nhint: 'idemkey canon FILE' prints the canonical form\n", bad, len(opts.Files))
		return &ExitError{Code: exitNegative}
	}
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
