// client.mjs: drives `idemkey mcp` with the official TypeScript SDK's
// Client over stdio, as an MCP client application would, following a plan,
// and prints one JSON line per step: {"step","op","tag"?,"result"|"error"}.
//
//   node client.mjs PLAN.json
//   node client.mjs --serve
//
// With --serve, one process runs many plans at once, each a client of its
// own (its own idemkey process, environment and directory), so that a test
// package pays the SDK's load once: it reads requests, one JSON line each,
// {"id":N,"plan":PLAN,"env":{...},"cwd":DIR}, and writes JSON lines
// {"id":N,"line":STEPLINE} per step, then {"id":N,"stderr":TEXT} (what
// idemkey and its server wrote on their standard error) and
// {"id":N,"exit":0} (or {"id":N,"exit":1,"error":E} when the plan could
// not run). {"id":N,"abort":true} closes plan N's client.
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
import { createInterface } from "node:readline";
import { load } from "./sdk.mjs";

const { Client } = await load("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = await load("@modelcontextprotocol/sdk/client/stdio.js");
const types = await load("@modelcontextprotocol/sdk/types.js");

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function connect(plan, notes, ctx) {
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
    command: plan.command, args: plan.args, env: { ...ctx.env, ...(plan.env || {}) }, cwd: ctx.cwd,
    stderr: ctx.stderr ? "pipe" : "inherit",
  });
  const stream = ctx.stderr && transport.stderr;
  const ended = stream && new Promise((r) => stream.on("end", r).on("close", r));
  if (stream) stream.on("data", (b) => ctx.stderr.push(b));
  ctx.client = client;
  await client.connect(transport);
  // Started: its standard error ends when idemkey and its server are gone.
  if (stream) ctx.ended.push(ended);
  return client;
}

function callTool(client, s, notes) {
  const controller = new AbortController();
  const opts = { signal: controller.signal, timeout: s.timeoutMs ?? 60000 };
  if (s.progress) opts.onprogress = (p) => notes.push({ method: "notifications/progress", params: p });
  const params = { name: s.name, arguments: s.args ?? {} };
  if (s.meta) params._meta = s.meta;
  const promise = client.callTool(params, undefined, opts);
  return { promise, controller };
}

// run follows plan, passing each step's line to out; ctx is where its
// idemkey runs: env, cwd, and stderr (an array for its standard error's
// chunks, else it is inherited).
async function run(plan, out, ctx) {
  const notes = [];
  const pending = new Map();
  let client = await connect(plan, notes, ctx);
  for (const [i, s] of plan.steps.entries()) {
    const line = { step: i, op: s.op };
    if (s.tag) line.tag = s.tag;
    try {
      switch (s.op) {
        case "call": {
          const c = callTool(client, s, notes);
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
        case "reconnect": await client.close(); client = await connect(plan, notes, ctx); line.result = "reconnected"; break;
        case "close": await client.close(); line.result = "closed"; break;
        default: throw new Error("unknown op " + s.op);
      }
    } catch (e) {
      line.error = String(e && e.message || e);
    }
    out(line);
  }
  if (plan.steps.at(-1)?.op !== "close") await client.close();
}

// serve runs the plans that come on standard input, each as it comes.
function serve() {
  const write = (o) => process.stdout.write(JSON.stringify(o) + "\n");
  const running = new Map();
  const input = createInterface({ input: process.stdin, crlfDelay: Infinity });
  input.on("line", (text) => {
    const req = JSON.parse(text);
    if (req.abort) { running.get(req.id)?.client?.close().catch(() => {}); return; }
    const ctx = { env: req.env, cwd: req.cwd, stderr: [], ended: [] };
    running.set(req.id, ctx);
    run(req.plan, (line) => write({ id: req.id, line }), ctx).then(() => ({ exit: 0 }), (e) => ({ exit: 1, error: String(e && e.stack || e) }))
      .then(async (end) => {
        await Promise.all(ctx.ended);
        running.delete(req.id);
        write({ id: req.id, stderr: Buffer.concat(ctx.stderr).toString("utf8") });
        write({ id: req.id, ...end });
      });
  });
  input.on("close", async () => {
    await Promise.allSettled([...running.values()].map((ctx) => ctx.client?.close()));
    process.exit(0);
  });
}

if (process.argv[2] === "--serve") {
  serve();
} else {
  const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
  await run(plan, (o) => process.stdout.write(JSON.stringify(o) + "\n"), { env: process.env, ended: [] });
}
