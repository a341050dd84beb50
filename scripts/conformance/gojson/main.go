// Command gojson is Go's encoding/json as an implementation under test for
// `idemkey conform`: the arguments decoded into map[string]any and written
// with json.Marshal, which sorts map keys.
//
//	go build -o gojson ./scripts/conformance/gojson
//	idemkey conform -- ./gojson
//	idemkey conform --output canonical -- ./gojson canonical
//
// One request a line on stdin, {"id","task","tool","args","args_text"},
// whose args_text (the arguments' exact text) it parses; one answer a line
// on stdout: the key (or the canonical text), or an empty line for a call
// it rejects.
package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
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
		Task, Tool string
		ArgsText   string `json:"args_text"`
	}
	var args any
	if err := json.Unmarshal(line, &call); err != nil {
		return "" // rejected
	}
	if err := json.Unmarshal([]byte(call.ArgsText), &args); err != nil {
		return "" // rejected
	}
	text, err := json.Marshal([]any{call.Task, call.Tool, args})
	if err != nil {
		return ""
	}
	if output == "canonical" {
		return string(text)
	}
	return fmt.Sprintf("%x", sha256.Sum256(text))
}
