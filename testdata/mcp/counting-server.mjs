// counting-server.mjs: the idemkey tests' own MCP server, on the official
// TypeScript SDK, over stdio (default) or Streamable HTTP (--http). Every
// tool call it runs appends one JSON line to $COUNT_FILE, so a test counts
// the effects the server saw: {"tool","args","key","attempt","pid","ppid","phase"}.
//
//   COUNT_FILE=calls.jsonl node counting-server.mjs
//   COUNT_FILE=calls.jsonl URL_FILE=url.txt node counting-server.mjs --http [--json]
//   COUNT_FILE=calls.jsonl URL_FILE=url.txt node counting-server.mjs --sse   (MCP 2024-11-05 HTTP+SSE)
//
// Over HTTP each line also has the call's "session" (its Mcp-Session-Id),
// and a POST to /control/end-sessions ends every session as a server that
// restarted or expired them would: their streams close (an answer the
// SDK's transport leaves open, as a JSON one, has its connection cut),
// and requests with their ids get 404.
//
// Tools: charge (a write), lookup (readOnlyHint: true), slow (a write that
// runs until the file in "until" exists, or "ms" milliseconds), fail (a
// write whose result has isError: true), echo_meta (a write that answers
// the _meta and arguments it got), notify (a write that sends a logging
// notification and a progress notification before it answers).
import { appendFileSync, existsSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { load, serveStreamableHTTP } from "./sdk.mjs";

const { McpServer } = await load("@modelcontextprotocol/sdk/server/mcp.js");
const { StdioServerTransport } = await load("@modelcontextprotocol/sdk/server/stdio.js");
const { z } = await load("zod");

const countFile = process.env.COUNT_FILE;
if (!countFile) {
  console.error("counting-server: set COUNT_FILE");
  process.exit(2);
}
const KEY = "com.github.idemkey/idempotency-key";
const ATTEMPT = "com.github.idemkey/attempt";
let calls = 0;

function count(tool, args, extra, phase) {
  const meta = extra._meta || {};
  appendFileSync(countFile, JSON.stringify({
    tool, args, key: meta[KEY] ?? null, attempt: meta[ATTEMPT] ?? null,
    pid: process.pid, ppid: process.ppid, phase, session: extra.sessionId ?? null,
  }) + "\n");
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const text = (t) => ({ content: [{ type: "text", text: t }] });
const argShape = {
  amount: z.number().optional(), currency: z.string().optional(), note: z.string().optional(),
  trace_id: z.string().optional(), idempotency_key: z.string().optional(),
  ms: z.number().optional(), until: z.string().optional(), q: z.string().optional(),
};
const write = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false };

function newServer() {
  const server = new McpServer({ name: "idemkey-counting-server", version: "1.0.0" }, { capabilities: { logging: {} } });
  server.registerTool("charge", { description: "charge an amount (a write)", inputSchema: argShape, annotations: write },
    async (args, extra) => {
      calls++;
      count("charge", args, extra, "done");
      return { ...text(`charged ${args.amount} ${args.currency} (call ${calls} of process ${process.pid})`), structuredContent: { call: calls } };
    });
  server.registerTool("lookup", { description: "look something up", inputSchema: argShape,
    annotations: { readOnlyHint: true } }, async (args, extra) => {
    count("lookup", args, extra, "done");
    return text(`found ${args.q}`);
  });
  server.registerTool("slow", { description: "a write that takes its time", inputSchema: argShape, annotations: write },
    async (args, extra) => {
      count("slow", args, extra, "start");
      const deadline = Date.now() + (args.ms ?? 60000);
      while (Date.now() < deadline && !(args.until && existsSync(args.until))) {
        if (extra.signal?.aborted) break;
        await sleep(10);
      }
      count("slow", args, extra, "done");
      return text(`slow done (process ${process.pid})`);
    });
  server.registerTool("fail", { description: "a write that fails", inputSchema: argShape, annotations: write },
    async (args, extra) => {
      count("fail", args, extra, "done");
      return { ...text("it failed"), isError: true };
    });
  server.registerTool("echo_meta", { description: "answers its _meta and arguments", inputSchema: argShape, annotations: write },
    async (args, extra) => {
      count("echo_meta", args, extra, "done");
      return text(JSON.stringify({ meta: extra._meta ?? null, args }));
    });
  server.registerTool("notify", { description: "notifies, then answers", inputSchema: argShape, annotations: write },
    async (args, extra) => {
      count("notify", args, extra, "done");
      // On the request's own stream (over HTTP, its POST's): in order
      // with the answer.
      await extra.sendNotification({ method: "notifications/message", params: { level: "info", data: "notify ran" } });
      const token = extra._meta?.progressToken;
      if (token !== undefined) {
        await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress: 1, total: 2 } });
      }
      await sleep(50); // the SDK's client drops a progress that comes with its answer
      return text("notified");
    });
  return server;
}

if (process.argv.includes("--sse")) {
  // MCP 2024-11-05's HTTP+SSE transport, as an old server has it: GET /sse
  // is the event stream (its first event names the endpoint), messages are
  // POSTed to /messages?sessionId=…; a POST to /sse is not allowed (405).
  const { SSEServerTransport } = await load("@modelcontextprotocol/sdk/server/sse.js");
  const sessions = new Map();
  const http = createServer(async (req, res) => {
    const u = new URL(req.url, "http://127.0.0.1");
    if (req.method === "GET" && u.pathname === "/sse") {
      const transport = new SSEServerTransport("/messages", res);
      sessions.set(transport.sessionId, transport);
      res.on("close", () => sessions.delete(transport.sessionId));
      await newServer().connect(transport);
    } else if (req.method === "POST" && u.pathname === "/messages" && sessions.has(u.searchParams.get("sessionId"))) {
      await sessions.get(u.searchParams.get("sessionId")).handlePostMessage(req, res);
    } else {
      res.writeHead(req.method === "POST" && u.pathname === "/sse" ? 405 : 404, { "content-type": "text/plain" });
      res.end("not here\n");
    }
  });
  http.listen(0, "127.0.0.1", () => {
    const url = `http://127.0.0.1:${http.address().port}/sse`;
    if (process.env.URL_FILE) writeFileSync(process.env.URL_FILE, url);
    console.error(`counting-server: ${url}`);
  });
} else if (!process.argv.includes("--http")) {
  await newServer().connect(new StdioServerTransport());
} else {
  const open = new Set(); // the answers being written
  await serveStreamableHTTP(newServer, "counting-server", {
    json: process.argv.includes("--json"),
    before: async (req, res, sessions) => {
      if (req.url !== "/control/end-sessions") return false;
      const ended = [...sessions.values()];
      sessions.clear();
      for (const t of ended) await t.close();
      for (const r of open) if (!r.writableEnded) r.destroy();
      res.writeHead(200, { "content-type": "text/plain" });
      res.end(`ended ${ended.length}\n`);
      return true;
    },
    onAnswer: (res) => { open.add(res); res.on("close", () => open.delete(res)); },
  });
}
