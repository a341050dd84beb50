// Command gonumber is Go's encoding/json (map[string]any) decoding numbers
// as json.Number (Decoder.UseNumber), so integers stay exact, written with
// json.Marshal.
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
			Args       any
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		if err := dec.Decode(&call); err != nil {
			return nil, err
		}
		return json.Marshal([]any{call.Task, call.Tool, call.Args})
	})
}
