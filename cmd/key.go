package cmd

import (
	"encoding/hex"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/derive"
	"github.com/spf13/cobra"
)

type keyOptions struct {
	f      *Factory
	File   string
	Task   string
	Tool   string
	Scheme canon.Scheme
	JSON   bool
}

func newKeyCmd(f *Factory) *cobra.Command {
	opts := &keyOptions{f: f}
	cmd := &cobra.Command{
		Use:   "key [FILE|-]",
		Short: "Print the idempotency key of a tool call",
		Long: `Print the idempotency key of a tool call: the lower-case hex SHA-256 of the
canonical JSON of [TASK, TOOL, ARGS], where ARGS is read from FILE (or
standard input when FILE is absent or -). The key equals the reference
harness's idempotencyKey(task, tool, args) byte for byte.`,
		Example: `  idemkey key --task t-42 --tool open_pull_request args.json
  echo '{"b":1,"a":2}' | IDEMKEY_TASK=t-42 IDEMKEY_TOOL=pay idemkey key --json`,
		Args: rangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				opts.File = args[0]
			}
			var err error
			if opts.Task, opts.Tool, err = f.taskTool(); err != nil {
				return err
			}
			if opts.Scheme, err = f.scheme(); err != nil {
				return err
			}
			opts.JSON = f.Config.GetBool("json")
			return runKey(opts)
		},
	}
	fl := cmd.Flags()
	fl.String("task", "", "task id that scopes the key (IDEMKEY_TASK)")
	fl.String("tool", "", "tool name (IDEMKEY_TOOL)")
	fl.String("scheme", "js", "canonical form: js (the reference harness) or jcs (RFC 8785)")
	fl.Bool("json", false, "print one JSON object with key, scheme, task, tool and canonical")
	return cmd
}

func runKey(opts *keyOptions) error {
	data, name, err := opts.f.readInput(opts.File)
	if err != nil {
		return err
	}
	doc, err := parseDoc(data, name, opts.Scheme)
	if err != nil {
		return err
	}
	call := derive.Call{Task: opts.Task, Tool: opts.Tool, Args: doc.Root()}
	key := call.Key()
	out := opts.f.IO.Out
	if !opts.JSON {
		var b [65]byte
		hex.Encode(b[:64], key[:])
		b[64] = '\n'
		_, err = out.Write(b[:])
		return err
	}
	o := &jsonObject{}
	o.str("key", hex.EncodeToString(key[:])).
		str("scheme", opts.Scheme.String()).
		str("task", opts.Task).
		str("tool", opts.Tool)
	o.key("canonical")
	o.b = canon.AppendQuoted(o.b, string(call.AppendText(nil)))
	_, err = out.Write(o.line())
	return err
}
