// Command idemkey derives idempotency keys for AI-agent tool calls.
package main

import (
	"os"

	"github.com/idemkey/idemkey/cmd"
)

func main() { os.Exit(cmd.Run()) }
