// Command gendoc writes deterministic benchmark inputs for scripts/bench.sh:
// the same flags always give the same bytes.
//
//	go run ./scripts/gendoc -kind mixed -size 64MiB -o big.json
//	go run ./scripts/gendoc -kind call -o call.json
//	go run ./scripts/gendoc -kind calls -n 100000 -o calls.jsonl
//
// Kinds: mixed (tool-call-like records), strings, numbers (documents of
// -size bytes), call (one ~400-byte tool call's arguments), calls (-n JSON
// Lines records {"task","tool","args"}).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/idemkey/idemkey/scripts/gendoc/gen"
)

func main() {
	kind := flag.String("kind", "mixed", "mixed, strings, numbers, call or calls")
	size := flag.String("size", "64MiB", "document size for mixed, strings and numbers (suffix KiB, MiB, GiB)")
	n := flag.Int("n", 100000, "number of records for calls")
	seed := flag.Uint64("seed", 1, "random seed")
	out := flag.String("o", "-", "output file, - for standard output")
	flag.Parse()
	if err := run(*kind, *size, *n, *seed, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gendoc: error:", err)
		os.Exit(2)
	}
}

func run(kind, size string, n int, seed uint64, out string) error {
	sz, err := parseSize(size)
	if err != nil {
		return err
	}
	var data []byte
	switch kind {
	case "mixed":
		data = gen.Mixed(sz, seed)
	case "strings":
		data = gen.Strings(sz, seed)
	case "numbers":
		data = gen.Numbers(sz, seed)
	case "call":
		data = append(gen.ToolCall(seed), '\n')
	case "calls":
		data = gen.Calls(n, seed)
	default:
		return fmt.Errorf("unknown kind %q", kind)
	}
	if out == "-" {
		_, err = os.Stdout.Write(data)
		return err
	}
	return os.WriteFile(out, data, 0o644)
}

func parseSize(s string) (int, error) {
	mult := 1
	for suffix, m := range map[string]int{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30} {
		if t, ok := strings.CutSuffix(s, suffix); ok {
			s, mult = t, m
			break
		}
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		return 0, errors.New("invalid size " + strconv.Quote(s))
	}
	return v * mult, nil
}
