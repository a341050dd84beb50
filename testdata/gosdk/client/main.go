// Command client is an MCP client on the official Go SDK, for idemkey's
// tests: it starts the command line it is given (idemkey mcp …) as a
// stdio server, connects (the SDK's newest revision first: 2026-07-28,
// server/discover), lists the tools (unless $GOSDK_NO_LIST is set), calls
// append twice with the same arguments, then lookup, waits for the
// server's tools/list_changed, and prints one JSON line per step:
// {"op":"connect","version"}, {"op":"call","result"|"error"},
// {"op":"list_changed","got"}.
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
	changed := make(chan struct{}, 1)
	c := mcp.NewClient(&mcp.Implementation{Name: "idemkey-gosdk-client", Version: "1.0.0"}, &mcp.ClientOptions{
		// A handler makes the client listen (2026-07-28:
		// subscriptions/listen, a stream of its own).
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(os.Args[1], os.Args[2:]...)}, nil)
	if err != nil {
		log.Fatal(err)
	}
	say(map[string]any{"op": "connect", "version": cs.InitializeResult().ProtocolVersion})
	if os.Getenv("GOSDK_NO_LIST") == "" {
		if _, err := cs.ListTools(ctx, nil); err != nil {
			log.Fatal(err)
		}
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
	// The server adds a tool at its first write: the listen stream says so.
	select {
	case <-changed:
		say(map[string]any{"op": "list_changed", "got": true})
	case <-time.After(10 * time.Second):
		say(map[string]any{"op": "list_changed", "got": false})
	}
	if err := cs.Close(); err != nil {
		log.Fatal(err)
	}
}
