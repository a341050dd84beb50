// raw-server.mjs: a minimal MCP server written by hand, line by line,
// without the SDK, for what the SDK's servers do not do: JSON-RPC batches
// (MCP 2025-03-26) and broken output. It appends each tools/call it runs to
// $COUNT_FILE, as counting-server.mjs does.
//
// Tools: charge (a write); garbage (writes a line that is not JSON, then
// answers); cut (writes half a message and exits).
import { appendFileSync } from "node:fs";
import { createInterface } from "node:readline";

const countFile = process.env.COUNT_FILE;
const KEY = "com.github.idemkey/idempotency-key";
const write = (o) => process.stdout.write(JSON.stringify(o) + "\n");
let calls = 0;

function answer(m) {
  if (m.id === undefined) return undefined; // a notification
  switch (m.method) {
    case "initialize":
      return { jsonrpc: "2.0", id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "raw", version: "1" } } };
    case "ping":
      return { jsonrpc: "2.0", id: m.id, result: {} };
    case "tools/list":
      return { jsonrpc: "2.0", id: m.id, result: { tools: [{ name: "charge", inputSchema: { type: "object" } }] } };
    case "tools/call": {
      const name = m.params.name;
      appendFileSync(countFile, JSON.stringify({ tool: name, args: m.params.arguments, key: m.params._meta?.[KEY] ?? null }) + "\n");
      if (name === "garbage") process.stdout.write("this is not json {\n");
      if (name === "cut") { process.stdout.write('{"jsonrpc":"2.0","id":' + JSON.stringify(m.id) + ',"result":{"con'); process.exit(3); }
      calls++;
      return { jsonrpc: "2.0", id: m.id, result: { content: [{ type: "text", text: `${name} call ${calls}` }] } };
    }
  }
  return { jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "Method not found" } };
}

createInterface({ input: process.stdin }).on("line", (line) => {
  let m;
  try { m = JSON.parse(line); } catch {
    write({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } });
    return;
  }
  if (Array.isArray(m)) {
    const out = m.map(answer).filter(Boolean);
    if (out.length) write(out);
    return;
  }
  const a = answer(m);
  if (a) write(a);
});
