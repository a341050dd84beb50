// client.mjs: drives `idemkey mcp` with the official TypeScript SDK's
// Client over stdio, as an MCP client application would, following a plan,
// and prints one JSON line per step: {"step","op","tag"?,"result"|"error"}.
//
//   node client.mjs PLAN.json
//
// The plan: {"command": "idemkey", "args": [...], "env": {...},
//            "sampling": true, "roots": true, "steps": [STEP...]}
// Steps:
//   {"op":"call","name":N,"args":{…},"meta":{…},"tag":T,"async":true,"progress":true}
//   {"op":"await","tag":T}            the result of an async call
//   {"op":"cancel","tag":T}           cancel an async call (notifications/cancelled)
//   {"op":"list"}                     tools/list: the tools' names
//   {"op":"resources"}                resources/list, and resources/read of the first
//   {"op":"ping"}
//   {"op":"sleep","ms":M}
//   {"op":"waitFile","path":P,"lines":K}  until the file has K lines (default 1)
//   {"op":"notifications"}            the notifications received so far
//   {"op":"reconnect"}                close the session (idemkey and its server end) and open a new one
//   {"op":"close"}
import { readFileSync, existsSync } from "node:fs";
import { load } from "./sdk.mjs";

const { Client } = await load("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = await load("@modelcontextprotocol/sdk/client/stdio.js");
const types = await load("@modelcontextprotocol/sdk/types.js");

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
const notes = [];
const pending = new Map();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");

async function connect() {
  const capabilities = {};
  if (plan.sampling) capabilities.sampling = {};
  if (plan.roots) capabilities.roots = { listChanged: true };
  const client = new Client({ name: "idemkey-test-client", version: "1.0.0" }, { capabilities });
  client.fallbackNotificationHandler = async (n) => { notes.push(n); };
  if (plan.sampling) {
    client.setRequestHandler(types.CreateMessageRequestSchema, async (req) => {
      notes.push({ method: "sampling/createMessage", params: req.params });
      return { model: "idemkey-test", role: "assistant", content: { type: "text", text: "sampled: " + req.params.messages[0].content.text } };
    });
  }
  if (plan.roots) {
    client.setRequestHandler(types.ListRootsRequestSchema, async () => ({ roots: [{ uri: "file:///tmp", name: "tmp" }] }));
  }
  const transport = new StdioClientTransport({
    command: plan.command, args: plan.args, env: { ...process.env, ...(plan.env || {}) }, stderr: "inherit",
  });
  await client.connect(transport);
  return client;
}

function callTool(client, s) {
  const controller = new AbortController();
  const opts = { signal: controller.signal, timeout: s.timeoutMs ?? 60000 };
  if (s.progress) opts.onprogress = (p) => notes.push({ method: "notifications/progress", params: p });
  const params = { name: s.name, arguments: s.args ?? {} };
  if (s.meta) params._meta = s.meta;
  const promise = client.callTool(params, undefined, opts);
  return { promise, controller };
}

let client = await connect();
for (const [i, s] of plan.steps.entries()) {
  const line = { step: i, op: s.op };
  if (s.tag) line.tag = s.tag;
  try {
    switch (s.op) {
      case "call": {
        const c = callTool(client, s);
        if (s.async) { pending.set(s.tag, c); c.promise.catch(() => {}); line.result = "started"; break; }
        line.result = await c.promise;
        break;
      }
      case "await": line.result = await pending.get(s.tag).promise; break;
      case "cancel": pending.get(s.tag).controller.abort("the test cancels it"); await sleep(s.ms ?? 200); line.result = "cancelled"; break;
      case "list": line.result = (await client.listTools()).tools.map((t) => t.name); break;
      case "resources": {
        const list = await client.listResources();
        line.result = { count: list.resources.length, read: await client.readResource({ uri: list.resources[0].uri }) };
        break;
      }
      case "ping": line.result = await client.ping(); break;
      case "sleep": await sleep(s.ms); line.result = "slept"; break;
      case "waitFile": {
        const want = s.lines ?? 1;
        const deadline = Date.now() + (s.timeoutMs ?? 20000);
        const lines = () => existsSync(s.path) ? readFileSync(s.path, "utf8").split("\n").filter(Boolean).length : 0;
        while (lines() < want && Date.now() < deadline) await sleep(10);
        line.result = lines();
        break;
      }
      case "notifications": line.result = notes.splice(0); break;
      case "reconnect": await client.close(); client = await connect(); line.result = "reconnected"; break;
      case "close": await client.close(); line.result = "closed"; break;
      default: throw new Error("unknown op " + s.op);
    }
  } catch (e) {
    line.error = String(e && e.message || e);
  }
  out(line);
}
if (plan.steps.at(-1)?.op !== "close") await client.close();
