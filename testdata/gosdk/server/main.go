// Command server is an MCP server on the official Go SDK, for idemkey's
// tests: the SDK's own 2026-07-28 server over stdio (default) or over
// stateless Streamable HTTP (-http: it listens on 127.0.0.1, and writes
// its URL to $URL_FILE; -http -stateful: with sessions, which the SDK
// serves at 2025-11-25 and earlier only).
//
// Every call of a write tool appends one JSON line to $COUNT_FILE, so a
// test counts the effects the server saw: {"tool","args","key","attempt",
// "headers"} (headers: the HTTP headers that mirror the call, over HTTP).
//
// Tools: append (a write; its "region" argument is marked x-mcp-header:
// Region, so a 2026-07-28 client over HTTP sends it as Mcp-Param-Region;
// its first call adds the tool "added", so the list changes), lookup
// (readOnlyHint: true).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	metaKey     = "com.github.idemkey/idempotency-key"
	metaAttempt = "com.github.idemkey/attempt"
)

var (
	mu        sync.Mutex
	calls     int
	addedOnce sync.Once
)

// count appends the call's line to $COUNT_FILE.
func count(req *mcp.CallToolRequest, args map[string]any) int {
	mu.Lock()
	defer mu.Unlock()
	calls++
	line := map[string]any{"tool": req.Params.Name, "args": args}
	meta := req.Params.GetMeta()
	line["key"], line["attempt"] = meta[metaKey], meta[metaAttempt]
	if req.Extra != nil && req.Extra.Header != nil {
		h := map[string]string{}
		for _, name := range []string{"Mcp-Protocol-Version", "Mcp-Method", "Mcp-Name", "Mcp-Param-Region", "Idempotency-Key", "Mcp-Session-Id"} {
			if v := req.Extra.Header.Get(name); v != "" {
				h[name] = v
			}
		}
		line["headers"] = h
	}
	b, _ := json.Marshal(line)
	f, err := os.OpenFile(os.Getenv("COUNT_FILE"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		log.Fatal(err)
	}
	return calls
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func newServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "idemkey-gosdk-server", Version: "1.0.0"}, nil)
	s.AddTool(&mcp.Tool{
		Name:        "append",
		Description: "append a line (a write)",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"line":{"type":"string"},"region":{"type":"string","x-mcp-header":"Region"}},"required":["line"]}`),
	}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args map[string]any
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			return nil, err
		}
		n := count(req, args)
		addedOnce.Do(func() {
			// A change of the list: listening clients are told.
			s.AddTool(&mcp.Tool{Name: "added", InputSchema: json.RawMessage(`{"type":"object"}`)},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("added"), nil })
		})
		return text(fmt.Sprintf("appended %v (call %d of process %d)", args["line"], n, os.Getpid())), nil
	})
	s.AddTool(&mcp.Tool{
		Name:        "lookup",
		Description: "look something up",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("found " + string(req.Params.Arguments)), nil
	})
	return s
}

func main() {
	overHTTP := flag.Bool("http", false, "serve stateless Streamable HTTP on 127.0.0.1 (its URL in $URL_FILE)")
	stateful := flag.Bool("stateful", false, "with -http: with sessions (2025-11-25 and earlier only)")
	flag.Parse()
	if os.Getenv("COUNT_FILE") == "" {
		log.Fatal("set COUNT_FILE")
	}
	s := newServer()
	if !*overHTTP {
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			log.Fatal(err)
		}
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: !*stateful})
	url := fmt.Sprintf("http://%s/mcp", ln.Addr())
	if err := os.WriteFile(os.Getenv("URL_FILE"), []byte(url), 0o644); err != nil {
		log.Fatal(err)
	}
	log.Fatal(http.Serve(ln, h))
}
