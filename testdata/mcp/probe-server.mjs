// probe-server.mjs: the MCP server `idemkey probe --mcp` is tested on, on
// the official TypeScript SDK, over stdio (default) or Streamable HTTP
// (--http, its URL written to $URL_FILE; --json for JSON answers). Each
// write tool keeps (or fails to keep) one promise about retries; every
// effect is a JSON line {"tool","id","key","args"} appended to
// $EFFECTS_FILE, which outlives the process (a lost response is retried on
// a new connection, for stdio a new process). $PROBE_TOOLS=a,b registers
// only those tools; $PAGE_SIZE=N answers tools/list in pages of N.
//
// Tools (arguments: amount, currency, idempotency_key):
//   charge_meta    honours the key in _meta["com.github.idemkey/idempotency-key"]:
//                  the same key replays the first answer, other arguments are refused
//   charge_arg     honours only the idempotency_key argument (its description
//                  asks to keep the key across retries)
//   charge_nokey   ignores every key: one effect per call
//   charge_lax     honours the _meta key but answers other arguments with
//                  the first answer
//   charge_racy    honours the _meta key, but checks, waits, then inserts:
//                  concurrent calls with one key each make an effect
//   charge_session honours the _meta key within one connection only (memory)
//   charge_hint    says idempotentHint: true, ignores every key
//   charge_uuid    honours the idempotency_key argument, but its description
//                  tells the model to generate a new random UUID per request
//   charge_header  (over HTTP) honours only the Idempotency-Key header
//   peek           says readOnlyHint: true, yet makes an effect
//   count          readOnlyHint: true: {"count": N, "effects": [...]} of
//                  the tool in its "tool" argument (every tool without)
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { load, serveStreamableHTTP } from "./sdk.mjs";

const { McpServer } = await load("@modelcontextprotocol/sdk/server/mcp.js");
const { StdioServerTransport } = await load("@modelcontextprotocol/sdk/server/stdio.js");
const { z } = await load("zod");

const file = process.env.EFFECTS_FILE;
if (!file) {
  console.error("probe-server: set EFFECTS_FILE");
  process.exit(2);
}
const KEY = "com.github.idemkey/idempotency-key";
const only = process.env.PROBE_TOOLS ? new Set(process.env.PROBE_TOOLS.split(",")) : null;

function effects() {
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8").split("\n").filter((l) => l).map((l) => JSON.parse(l));
}
function effect(tool, key, args) {
  const e = { tool, id: randomUUID(), key: key ?? null, args };
  appendFileSync(file, JSON.stringify(e) + "\n");
  return e;
}
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const answer = (e) => ({ content: [{ type: "text", text: JSON.stringify({ id: e.id, amount: e.args.amount }) }],
  structuredContent: { id: e.id, amount: e.args.amount } });
const refuse = (t) => ({ content: [{ type: "text", text: t }], isError: true });
const metaKey = (extra) => (extra._meta || {})[KEY];
const withoutKey = ({ idempotency_key, ...rest }) => rest;

// once makes an effect for a key seen first, and answers a key seen before
// with its first answer (strict: a refusal for other arguments).
function once(tool, key, args, strict) {
  if (key) {
    const prev = effects().find((e) => e.tool === tool && e.key === key);
    if (prev) {
      if (strict && !same(prev.args, args)) return refuse(`idempotency key ${key} was already used with other arguments`);
      return answer(prev);
    }
  }
  return answer(effect(tool, key, args));
}

const keyArg = "An idempotency key for this charge: reuse the same key when you retry this call, so that it is charged once.";
// shape is the tools' arguments; a key argument only where one is read.
const shape = (keyText) => ({
  amount: z.number().optional(), currency: z.string().optional(),
  ...(keyText ? { idempotency_key: z.string().optional().describe(keyText) } : {}),
});
const write = (extra) => ({ readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false, ...extra });

function newServer() {
  const server = new McpServer({ name: "idemkey-probe-server", version: "1.0.0" });
  const tool = (name, config, fn) => { if (!only || only.has(name)) server.registerTool(name, config, fn); };
  tool("charge_meta", { description: "Charge an amount. Send an idempotency key in _meta and keep the same key when you retry.",
    inputSchema: shape(), annotations: write() },
  async (args, extra) => once("charge_meta", metaKey(extra), withoutKey(args), true));
  tool("charge_arg", { description: "Charge an amount, once per idempotency_key.", inputSchema: shape(keyArg), annotations: write() },
    async (args) => once("charge_arg", args.idempotency_key, withoutKey(args), true));
  tool("charge_nokey", { description: "Charge an amount.", inputSchema: shape(), annotations: write() },
    async (args) => answer(effect("charge_nokey", null, withoutKey(args))));
  tool("charge_lax", { description: "Charge an amount.", inputSchema: shape(), annotations: write() },
    async (args, extra) => once("charge_lax", metaKey(extra), withoutKey(args), false));
  tool("charge_racy", { description: "Charge an amount.", inputSchema: shape(), annotations: write() },
    async (args, extra) => {
      const key = metaKey(extra);
      const prev = key && effects().find((e) => e.tool === "charge_racy" && e.key === key);
      await sleep(300); // the check and the insert are apart
      if (prev) return answer(prev);
      return answer(effect("charge_racy", key, withoutKey(args)));
    });
  const seen = new Map(); // this connection's keys only
  tool("charge_session", { description: "Charge an amount.", inputSchema: shape(), annotations: write() },
    async (args, extra) => {
      const key = metaKey(extra);
      if (key && seen.has(key)) return answer(seen.get(key));
      const e = effect("charge_session", key, withoutKey(args));
      if (key) seen.set(key, e);
      return answer(e);
    });
  tool("charge_hint", { description: "Charge an amount.", inputSchema: shape(), annotations: write({ idempotentHint: true }) },
    async (args) => answer(effect("charge_hint", null, withoutKey(args))));
  tool("charge_uuid", { description: "Charge an amount. Generate a new random UUID for each request and pass it as idempotency_key.",
    inputSchema: shape("A random UUID for each request."), annotations: write() },
  async (args) => once("charge_uuid", args.idempotency_key, withoutKey(args), true));
  tool("charge_header", { description: "Charge an amount, once per Idempotency-Key HTTP header.", inputSchema: shape(), annotations: write() },
    async (args, extra) => once("charge_header", extra.requestInfo?.headers?.["idempotency-key"], withoutKey(args), true));
  tool("peek", { description: "Look at a charge.", inputSchema: shape(), annotations: { readOnlyHint: true } },
    async (args) => answer(effect("peek", null, withoutKey(args))));
  tool("count", { description: "Count the effects so far.", inputSchema: { tool: z.string().optional() },
    annotations: { readOnlyHint: true } },
  async (args) => {
    const es = effects().filter((e) => !args.tool || e.tool === args.tool);
    const r = { count: es.length, effects: es.map((e) => e.id) };
    return { content: [{ type: "text", text: JSON.stringify(r) }], structuredContent: r };
  });
  if (process.env.PAGE_SIZE) {
    // tools/list in pages of $PAGE_SIZE tools (the cursor is the next index).
    const size = Number(process.env.PAGE_SIZE);
    const inner = server.server._requestHandlers.get("tools/list");
    server.server._requestHandlers.set("tools/list", async (req, extra) => {
      const all = (await inner({ ...req, params: {} }, extra)).tools;
      const start = Number(req.params?.cursor ?? 0);
      const next = start + size;
      return { tools: all.slice(start, next), ...(next < all.length ? { nextCursor: String(next) } : {}) };
    });
  }
  return server;
}

if (!process.argv.includes("--http")) {
  await newServer().connect(new StdioServerTransport());
} else {
  await serveStreamableHTTP(newServer, "probe-server", { json: process.argv.includes("--json") });
}
