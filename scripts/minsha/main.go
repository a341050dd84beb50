// Command minsha reads a file and prints its SHA-256 in hex: the least a
// program that keys a file must do, for scripts/bench.sh to time idemkey's
// start-up against. It imports only what that takes (os and crypto/sha256)
// and is built as idemkey is.
//
//	go run ./scripts/minsha FILE
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
)

func main() {
	if len(os.Args) != 2 {
		os.Stderr.WriteString("usage: minsha FILE\n")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		os.Stderr.WriteString("minsha: " + err.Error() + "\n")
		os.Exit(2)
	}
	sum := sha256.Sum256(data)
	var out [65]byte
	hex.Encode(out[:64], sum[:])
	out[64] = '\n'
	os.Stdout.Write(out[:])
}
