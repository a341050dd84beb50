// Command driftgen writes a generated log of tool calls for idemkey drift
// (see derive/drift/driftgen): JSON Lines of call records on standard
// output, and what was planted, as JSON, on standard error with -truth.
//
//	go run ./scripts/driftgen -calls 1000000 -seed 1 > calls.jsonl
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/idemkey/idemkey/derive/drift/driftgen"
)

func main() {
	calls := flag.Int("calls", 10000, "lines to write")
	seed := flag.Uint64("seed", 1, "random seed")
	truth := flag.Bool("truth", false, "write what was planted to standard error")
	client := flag.Bool("client", false, "add client metadata to every call (lines of about 400 bytes)")
	flag.Parse()
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	t, err := driftgen.Generate(driftgen.Config{Seed: *seed, Calls: *calls, Client: *client}, w)
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "driftgen:", err)
		os.Exit(1)
	}
	if *truth {
		json.NewEncoder(os.Stderr).Encode(t)
	}
}
