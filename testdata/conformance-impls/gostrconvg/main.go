// Command gostrconvg is an RFC 8785 implementation (jsontext's
// Canonicalize for everything else) that writes numbers with Go's
// strconv.FormatFloat(f, 'g', -1, 64) instead of ECMAScript's
// Number::toString: 1e+06, 1e-05, 1.5e+300.
package main

import (
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/idemkey/idemkey/testdata/conformance-impls/goserve"
)

func main() {
	goserve.Serve(func(line []byte) ([]byte, error) {
		var call struct {
			Task     string `json:"task"`
			Tool     string `json:"tool"`
			ArgsText string `json:"args_text"`
		}
		if err := json.Unmarshal(line, &call); err != nil {
			return nil, err
		}
		var args jsontext.Value
		if err := json.Unmarshal([]byte(call.ArgsText), &args); err != nil {
			return nil, err
		}
		text, err := json.Marshal([]any{call.Task, call.Tool, args})
		if err != nil {
			return nil, err
		}
		v := jsontext.Value(text)
		if err := v.Canonicalize(); err != nil {
			return nil, err
		}
		return rewriteNumbers(v)
	})
}

// rewriteNumbers writes every number token of the canonical text v with 'g'.
func rewriteNumbers(v []byte) ([]byte, error) {
	var out []byte
	for i := 0; i < len(v); {
		c := v[i]
		switch {
		case c == '"':
			j := i + 1
			for v[j] != '"' {
				if v[j] == '\\' {
					j++
				}
				j++
			}
			out, i = append(out, v[i:j+1]...), j+1
		case c == '-' || c >= '0' && c <= '9':
			j := i
			for j < len(v) && (v[j] == '-' || v[j] == '+' || v[j] == '.' || v[j] == 'e' || v[j] == 'E' || v[j] >= '0' && v[j] <= '9') {
				j++
			}
			f, err := strconv.ParseFloat(string(v[i:j]), 64)
			if err != nil {
				return nil, err
			}
			out, i = strconv.AppendFloat(out, f, 'g', -1, 64), j
		default:
			out, i = append(out, c), i+1
		}
	}
	return out, nil
}
