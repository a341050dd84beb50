// Command jsontext is jsontext.Value.Canonicalize (RFC 8785, from
// github.com/go-json-experiment/json) as an implementation under test for
// `idemkey conform --scheme jcs`.
//
//	go build -o jsontext ./scripts/conformance/jsontext
//	idemkey conform --scheme jcs -- ./jsontext
//	idemkey conform --scheme jcs --output canonical -- ./jsontext canonical
//
// One request a line on stdin, {"id","task","tool","args_text"} (the
// arguments' exact text); one answer a
// line on stdout: the key (or the canonical text), or an empty line for a
// call it rejects.
package main

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"os"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

func main() {
	output := "key"
	if len(os.Args) > 1 {
		output = os.Args[1]
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<30)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for in.Scan() {
		fmt.Fprintln(out, answer(in.Bytes(), output))
	}
}

func answer(line []byte, output string) string {
	var call struct {
		Task     string `json:"task"`
		Tool     string `json:"tool"`
		ArgsText string `json:"args_text"`
	}
	if err := json.Unmarshal(line, &call); err != nil {
		return "" // rejected
	}
	var args jsontext.Value
	if err := json.Unmarshal([]byte(call.ArgsText), &args); err != nil {
		return "" // rejected
	}
	text, err := json.Marshal([]any{call.Task, call.Tool, args})
	if err != nil {
		return ""
	}
	v := jsontext.Value(text)
	if err := v.Canonicalize(); err != nil {
		return ""
	}
	if output == "canonical" {
		return string(v)
	}
	return fmt.Sprintf("%x", sha256.Sum256(v))
}
