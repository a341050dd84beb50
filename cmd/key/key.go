// Package key is the face of 'idemkey key': the key of one call, or of
// every line of JSON Lines input (--batch: batch.go, worker.go,
// warnings.go, progress.go). The key itself is derive's.
package key

import (
	"bytes"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/input"
	"github.com/idemkey/idemkey/cmd/internal/keyflags"
	"github.com/idemkey/idemkey/derive"
	"github.com/spf13/cobra"
)

// Options are key's settings.
type Options struct {
	f        *cli.Factory
	File     string
	Spec     *derive.Spec
	Key      keyflags.Key
	JSON     bool
	Batch    bool
	FailFast bool
}

// NewCmd builds 'idemkey key': its options, its flags, and run; with
// runF, runF instead of run, once the options are read (a test's seam for
// the flags and settings).
func NewCmd(f *cli.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{f: f}
	cmd := &cobra.Command{
		Use:   "key [FILE|-]",
		Short: "Print the idempotency key of a tool call",
		Long: `Print the idempotency key of a tool call: the lower-case hex SHA-256 of the
canonical JSON of [TASK, TOOL, ARGS], where ARGS is read from FILE (or
standard input when FILE is absent or -). The key equals the reference
harness's idempotencyKey(task, tool, args) byte for byte.

--from reads the call from an envelope (an MCP tools/call request, an OpenAI
tool call, an Anthropic tool_use block, or a {"task","tool","args"} record);
--from openai and --from anthropic also take an assistant message holding
one tool call (or several, with --tool naming one), --from openai a whole
Responses API response the same way (its "output" function_call items);
--from auto reads any
of these shapes, a call record as --from call does. The task id comes from
--task unless the input is a call record (whose task must then agree with
--task, if given). Without --from, input of any of these shapes is hashed
as it is, with a warning; --from args says so and silences it.

--batch reads JSON Lines, one call a line, and writes one key a line; a
line may hold up to 64 MiB, an input up to 2 GiB.`,
		Example: `  idemkey key --task t-42 --tool open_pull_request args.json
  echo '{"b":1,"a":2}' | IDEMKEY_TASK=t-42 IDEMKEY_TOOL=pay idemkey key --json
  idemkey key --task t-42 --from openai --format uuid tool_call.json
  idemkey key --batch --from call calls.jsonl > keys.txt`,
		Args: cli.RangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				opts.File = args[0]
			}
			var err error
			if opts.Spec, err = keyflags.Spec(f); err != nil {
				return err
			}
			if opts.Key, err = keyflags.KeyFrom(f); err != nil {
				return err
			}
			opts.JSON = f.Config.GetBool("json")
			opts.Batch = f.Config.GetBool("batch")
			opts.FailFast = f.Config.GetBool("fail-fast")
			if runF != nil {
				return runF(opts)
			}
			if opts.Batch {
				return runBatch(opts)
			}
			return run(opts)
		},
	}
	fl := cmd.Flags()
	keyflags.AddCallFlags(fl)
	keyflags.AddFormatFlags(fl)
	fl.Bool("json", false, "print JSON: key, scheme, from, task, tool and the hashed canonical text")
	fl.Bool("batch", false, "read JSON Lines, one call a line; write one key a line")
	fl.Bool("fail-fast", false, "with --batch, stop at the first bad line")
	return cmd
}

func run(opts *Options) error {
	out := opts.f.IO.Out
	var data []byte
	var name string
	var err error
	if spec := opts.Spec.ForTool(opts.Spec.Tool); !opts.JSON && spec.From == derive.FromArgs && len(spec.Only) == 0 && len(spec.Omit) == 0 {
		// Nothing but the key of the whole input is asked for: validate
		// and canonicalize in one pass (derive.Text), without the parsed
		// document, from the file mapped into memory.
		var key []byte
		if key, data, name, err = opts.onePassKey(spec); err != nil || key != nil {
			if err == nil {
				_, err = out.Write(append(key, '\n'))
			}
			return err
		}
	} else if data, name, err = input.ReadJSON(opts.f, opts.File); err != nil {
		return err
	}
	lc, err := keyflags.Load(opts.Spec, data)
	if err != nil {
		return cli.InputErr(name, 0, err)
	}
	key := opts.Key.Append(nil, lc.Call)
	if !opts.JSON {
		_, err = out.Write(append(key, '\n'))
		return err
	}
	_, err = out.Write(opts.keyJSON(key, lc))
	return err
}

// onePassKey derives the key of the whole input, read as bare arguments,
// in one pass, and warns when it has a known shape. When the one pass is
// not the way (a large object, or invalid input, which load reports as
// every command does), key is nil and data is a copy of the input to load.
func (opts *Options) onePassKey(spec *derive.Spec) (key, data []byte, name string, err error) {
	var release func()
	data, name, release, err = input.ReadMapped(opts.f, opts.File)
	if err != nil {
		return nil, nil, name, err
	}
	shape, shapeWhat := derive.FromArgs, ""
	// keep copies mapped data that load will read: release unmaps it. It
	// runs inside GuardFaults, as every read of the mapping does.
	keep := func() {
		if release != nil {
			data = bytes.Clone(data)
			input.TuneGC(len(data))
		}
	}
	err = input.GuardFaults(name, func() error {
		if !canon.OnePassSuits(data) {
			// A large object the one pass would write on one core,
			// holding the canonical text of its largest child about
			// twice: the indexed path needs less memory.
			keep()
			return nil
		}
		t := derive.Text{Task: spec.Task, Tool: spec.Tool, Args: data, Scheme: spec.Scheme}
		k, err := opts.Key.SumText(t)
		if err != nil {
			keep() // load finds the same problem, from a copy it can trust
			return nil
		}
		key = opts.Key.Format.Append(nil, k)
		if look := derive.ShapeLook(data); !spec.FromSet && look != nil && derive.MayHaveShape(look) {
			shape, shapeWhat = spec.ShapeOf(look) // shaped like an envelope?
		}
		return nil
	})
	if release != nil {
		release() // data is a copy now, if it is still needed
	}
	if err != nil {
		return nil, nil, name, err
	}
	if key != nil && shape != derive.FromArgs {
		spec.Warn(derive.ShapeWarning(shape, shapeWhat, "the input looks like"))
	}
	return key, data, name, nil
}

// keyJSON is key --json's line for a loaded call.
func (opts *Options) keyJSON(key []byte, lc derive.Loaded) []byte {
	o := &cli.JSONObject{}
	o.Str("key", string(key)).
		Str("format", opts.Key.Format.Name).
		Str("scheme", opts.Spec.Scheme.String()).
		Str("from", lc.From).
		Str("task", lc.Call.Task).
		Str("tool", lc.Call.Tool)
	o.Str("hash", opts.Key.Hash())
	if lc.Selected {
		// The selection applied: the tool's section's, if it has one.
		if len(lc.Only) > 0 {
			o.Raw("only", cli.StringsJSON(lc.Only))
		}
		if len(lc.Omit) > 0 {
			o.Raw("omit", cli.StringsJSON(lc.Omit))
		}
		o.Raw("selected", lc.Call.Args.Append(nil))
	}
	return o.Str("canonical", string(lc.Call.AppendText(nil))).Line()
}
