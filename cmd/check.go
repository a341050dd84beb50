package cmd

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/derive"
	"github.com/spf13/cobra"
)

type checkOptions struct {
	f      *Factory
	File   string
	Scheme canon.Scheme
	From   string
}

func newCheckCmd(f *Factory) *cobra.Command {
	opts := &checkOptions{f: f}
	cmd := &cobra.Command{
		Use:   "check VECTORS.jsonl",
		Short: "Recompute pinned keys and report every mismatch",
		Long: `Recompute the key of every vector in a JSON Lines file, one vector a line:

  {"task":"…","tool":"…","args":…,"key":"…"}    (optional "scheme":"js"|"jcs")

Each mismatch is printed on standard output with its line number; the exit
code is 1 if any key differs, 2 if any line is invalid. Blank lines are
skipped. A CI job pins canonicalization across upgrades this way.`,
		Example: `  idemkey check testdata/vectors.jsonl`,
		Args:    rangeArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.File = args[0]
			var err error
			if opts.Scheme, err = f.scheme(); err != nil {
				return err
			}
			if opts.From = f.Config.GetString("from"); !validFrom(opts.From) || opts.From == fromCall {
				return usageErrorf("invalid --from %q for check (want args, mcp, openai, anthropic or auto)", opts.From)
			}
			return runCheck(opts)
		},
	}
	cmd.Flags().String("scheme", "js", "scheme for vectors that name none: js or jcs")
	cmd.Flags().String("from", fromArgs, "format of each vector's \"args\": "+strings.Join(fromNames, ", ")+` (the tool then comes from the envelope)`)
	return cmd
}

// vector is one line of a vectors file.
type vector struct {
	call derive.Call
	want string
	s    canon.Scheme
}

func runCheck(opts *checkOptions) error {
	data, name, err := opts.f.readInput(opts.File)
	if err != nil {
		return err
	}
	ios := opts.f.IO
	total, mismatches, invalid := 0, 0, 0
	for lineNo, line := range bytes.Split(data, []byte{'\n'}) {
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if blankLine(line) {
			continue
		}
		total++
		v, err := parseVector(line, opts.Scheme, opts.From)
		if err != nil {
			invalid++
			opts.f.printError(&InputError{Name: name, Line: lineNo + 1, Err: err})
			continue
		}
		key := v.call.Key()
		got := hex.EncodeToString(key[:])
		if got != v.want {
			mismatches++
			fmt.Fprintf(ios.Out, "%s:%d: key mismatch: want %s, got %s\n", name, lineNo+1, v.want, got)
		}
	}
	fmt.Fprintf(ios.Err, "idemkey: checked %d %s: %d mismatched, %d invalid\n", total, plural(total, "vector", "vectors"), mismatches, invalid)
	switch {
	case invalid > 0:
		return &ExitError{Code: exitUsage}
	case mismatches > 0:
		return &ExitError{Code: exitNegative}
	case total == 0:
		return &InputError{Name: name, Err: errors.New("no vectors found")}
	}
	return nil
}

// parseVector reads one vector line. The line is parsed under the scheme it
// names, so that a jcs vector's arguments are held to RFC 8785.
func parseVector(line []byte, def canon.Scheme, from string) (vector, error) {
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
	if _, ok := root.Get("tool"); ok || from == fromArgs {
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
	if from != fromArgs {
		// The arguments are an envelope: the tool comes from it.
		spec := &callSpec{From: from, Task: v.call.Task, Tool: v.call.Tool, Scheme: v.s}
		lc, err := spec.load(args.Raw())
		if err != nil {
			return vector{}, err
		}
		v.call = lc.Call
	}
	if err := v.call.Validate(); err != nil {
		return vector{}, err
	}
	if !isHexKey(v.want) {
		return vector{}, fmt.Errorf(`"key" must be 64 lower-case hex digits, not %q`, v.want)
	}
	return v, nil
}

func isHexKey(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
