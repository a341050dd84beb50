// Command client is an MCP client on the official Go SDK, for idemkey's
// tests: it starts the command line it is given (idemkey mcp …) as a
// stdio server, connects (the SDK's newest revision first: 2026-07-28,
// server/discover), lists the tools, calls append twice with the same
// arguments, then lookup, and prints one JSON line per step:
// {"op":"connect","version"}, {"op":"call","result"|"error"}.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func say(v map[string]any) {
	b, err := json.Marshal(v)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(b))
}

func main() {
	if len(os.Args) < 2 {
		log.Fatal("usage: client COMMAND [ARG...]")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "idemkey-gosdk-client", Version: "1.0.0"}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(os.Args[1], os.Args[2:]...)}, nil)
	if err != nil {
		log.Fatal(err)
	}
	say(map[string]any{"op": "connect", "version": cs.InitializeResult().ProtocolVersion})
	if _, err := cs.ListTools(ctx, nil); err != nil {
		log.Fatal(err)
	}
	for _, p := range []*mcp.CallToolParams{
		{Name: "append", Arguments: map[string]any{"line": "one", "region": "eu-west"}},
		{Name: "append", Arguments: map[string]any{"line": "one", "region": "eu-west"}},
		{Name: "lookup", Arguments: map[string]any{"q": "x"}},
	} {
		res, err := cs.CallTool(ctx, p)
		if err != nil {
			say(map[string]any{"op": "call", "error": err.Error()})
			continue
		}
		say(map[string]any{"op": "call", "result": res})
	}
	if err := cs.Close(); err != nil {
		log.Fatal(err)
	}
}
