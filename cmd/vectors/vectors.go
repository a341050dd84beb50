// Package vectors is the face of 'idemkey vectors': the conformance suite
// (derive/conform) as JSON Lines.
package vectors

import (
	"bufio"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/keyflags"
	"github.com/idemkey/idemkey/cmd/internal/settings"
	"github.com/idemkey/idemkey/derive/conform"
	"github.com/spf13/cobra"
)

// Options are vectors' settings.
type Options struct {
	f      *cli.Factory
	Scheme canon.Scheme
}

// NewCmd builds 'idemkey vectors': its options, its flags, and run; with
// runF, runF instead of run, once the options are read (a test's seam for
// the flags and settings).
func NewCmd(f *cli.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{f: f}
	cmd := &cobra.Command{
		Use:   "vectors",
		Short: "Print the conformance suite as JSON Lines",
		Long: `Print the conformance suite as JSON Lines, one case a line:

  {"id":…,"rule":…,"note":…,"task":…,"tool":…,"args":…,"args_text":"…",
   "canonical":"…","key":"…"}

or "error":true instead of canonical and key for a case the scheme rejects.

args_text holds the exact text of the arguments, as a JSON string, in every
case: parse it to test an implementation, since number text, repeated names
and text that is not JSON (the invalid-json cases) survive only there. args
holds the same arguments inline, for reading, where every JSON parser reads
them alike (I-JSON, RFC 7493, nested at most 200 levels), and is absent
otherwise. A task id or tool name holding a lone surrogate is given as its
JSON string's text in task_text or tool_text instead. Every line is valid
JSON that jq, Python's json.loads, JSON.parse and Go's encoding/json read.

The cases cover every rule of the scheme (see 'idemkey conform'); ids are
never reused and new cases are appended, so the suite can be pinned.`,
		Example: `  idemkey vectors > conformance.jsonl
  idemkey vectors --scheme jcs | jq -c 'select(.rule == "order-utf16")'`,
		Args: cli.RangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if opts.Scheme, err = keyflags.Scheme(f); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return run(opts)
		},
	}
	cmd.Flags().String("scheme", "js", "scheme: js (the reference harness) or jcs (RFC 8785)")
	settings.OneOf(cmd.Flags(), "scheme", canon.SchemeNames...)
	return cmd
}

func run(opts *Options) error {
	w := bufio.NewWriterSize(opts.f.IO.Out, 64<<10)
	var line []byte
	for _, c := range conform.Cases() {
		line = conform.AppendVector(line[:0], c, opts.Scheme)
		line = append(line, '\n')
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
	return w.Flush()
}
