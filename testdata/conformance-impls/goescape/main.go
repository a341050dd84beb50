// Command goescape is Go's encoding/json (map[string]any) written through an
// Encoder with SetEscapeHTML(false), its trailing newline trimmed.
package main

import (
	"bytes"
	"encoding/json"

	"github.com/idemkey/idemkey/testdata/conformance-impls/goserve"
)

func main() {
	goserve.Serve(func(line []byte) ([]byte, error) {
		var call struct {
			Task, Tool string
			ArgsText   string `json:"args_text"`
		}
		var args any
		if err := json.Unmarshal(line, &call); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(call.ArgsText), &args); err != nil {
			return nil, err
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		err := enc.Encode([]any{call.Task, call.Tool, args})
		return bytes.TrimSuffix(b.Bytes(), []byte("\n")), err
	})
}
