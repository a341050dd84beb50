// Command gonumber is Go's encoding/json (map[string]any) decoding numbers
// as json.Number (Decoder.UseNumber), so integers stay exact, written with
// json.Marshal.
package main

import (
	"bytes"
	"encoding/json"
	"errors"

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
		dec := json.NewDecoder(bytes.NewReader([]byte(call.ArgsText)))
		dec.UseNumber()
		if err := dec.Decode(&args); err != nil {
			return nil, err
		}
		if dec.More() {
			return nil, errors.New("data after the arguments")
		}
		return json.Marshal([]any{call.Task, call.Tool, args})
	})
}
