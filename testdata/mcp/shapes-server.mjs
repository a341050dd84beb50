// shapes-server.mjs: an MCP server written by hand, line by line, for the
// answers that do not end a call at once and the hostile cases the SDK's
// servers never produce. It appends each write it performs to $COUNT_FILE
// ({"tool","args","key"}), as counting-server.mjs does.
//
// Tools:
//   charge   a write, answered at once
//   peek     read-only (readOnlyHint) until the client sends the
//            notification test/flip, then a write (and list_changed)
//   late     read-only, listed on the second page of tools/list
//   confirm  2026-07-28 multi round-trip: answers resultType
//            "input_required" (an elicitation and a requestState) until
//            called again with inputResponses; runs unless they decline
//   ask      2025-11-25: sends elicitation/create to the client, then runs
//            unless the user declined or cancelled
//   job      a task: with params.task (2025-11-25) a CreateTaskResult
//            {"task":{…}}, else (2026-07-28 extension) resultType "task";
//            the task reaches arguments.end ("completed", "failed") on
//            the second tasks/get; tasks/cancel cancels it; runs when
//            completed; tasks/result waits for the end; its poll
//            interval is arguments.poll milliseconds (default 100). Tasks
//            live in memory: a new server process knows none
//   huge     answers with a result of $HUGE bytes of text
//   env      answers with the names of its IDEMKEY_* variables
//
// resources/read of hold://… is answered only after the client sends the
// notification test/release.
import { appendFileSync } from "node:fs";
import { createInterface } from "node:readline";

const countFile = process.env.COUNT_FILE;
const KEY = "com.github.idemkey/idempotency-key";
const write = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const ok = (id, result) => write({ jsonrpc: "2.0", id, result });
const count = (m) => appendFileSync(countFile, JSON.stringify({ tool: m.params.name, args: m.params.arguments, key: m.params._meta?.[KEY] ?? null }) + "\n");
const text = (t) => ({ content: [{ type: "text", text: t }] });

let peekWrite = false;
let held = [];
let elicitations = new Map(); // id of ours -> the call waiting for it
let nextElicit = 0;
const tasks = new Map(); // taskId -> {gets, end, status, call, modern}
let nextTask = 0;

function tools(cursor) {
  const peek = { name: "peek", inputSchema: { type: "object" }, annotations: { readOnlyHint: !peekWrite } };
  if (cursor === "page-2") return { tools: [{ name: "late", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } }] };
  return {
    tools: ["charge", "confirm", "ask", "job", "huge"].map((name) => ({ name, inputSchema: { type: "object" } })).concat([peek]),
    nextCursor: "page-2",
  };
}

function taskView(id) {
  const t = tasks.get(id);
  const v = { taskId: id, status: t.status, createdAt: "2026-01-01T00:00:00Z", lastUpdatedAt: "2026-01-01T00:00:00Z" };
  if (t.modern) {
    v.resultType = "task";
    v.ttlMs = 60000;
    v.pollIntervalMs = t.poll;
    if (t.status === "completed") v.result = text(`job ${id} done`);
    if (t.status === "failed") v.error = { code: -32603, message: "the job failed" };
  } else {
    v.ttl = 60000;
    v.pollInterval = t.poll;
  }
  return v;
}

function advance(id) {
  const t = tasks.get(id);
  t.gets++;
  if (t.status === "working" && t.gets >= 2) settle(id, t.end);
}

// settle ends a task, and answers the tasks/result requests waiting for it.
function settle(id, status) {
  const t = tasks.get(id);
  t.status = status;
  if (status === "completed") count(t.call);
  for (const w of t.waiting) taskResult(w, id);
  t.waiting = [];
}

function taskResult(m, id) {
  const t = tasks.get(id);
  if (t.status === "completed") return ok(m.id, text(`job ${id} done`));
  return write({ jsonrpc: "2.0", id: m.id, error: { code: -32603, message: `the job ended ${t.status}` } });
}

function call(m) {
  const { name, arguments: args = {} } = m.params;
  switch (name) {
    case "confirm": {
      const responses = m.params.inputResponses;
      if (!responses) {
        return ok(m.id, {
          resultType: "input_required",
          inputRequests: { sure: { method: "elicitation/create", params: { mode: "form", message: "Sure?", requestedSchema: { type: "object", properties: {} } } } },
          requestState: "state-1",
        });
      }
      if (responses.sure?.action !== "accept") return ok(m.id, { resultType: "complete", ...text("not done: declined") });
      count(m);
      return ok(m.id, { resultType: "complete", ...text("confirmed") });
    }
    case "ask": {
      const eid = `e-${++nextElicit}`;
      elicitations.set(eid, m);
      return write({ jsonrpc: "2.0", id: eid, method: "elicitation/create", params: { mode: "form", message: "Sure?", requestedSchema: { type: "object", properties: {} } } });
    }
    case "job": {
      const id = `task-${process.pid}-${++nextTask}`;
      const modern = !m.params.task;
      tasks.set(id, { gets: 0, end: args.end ?? "completed", poll: args.poll ?? 100, status: "working", call: m, modern, waiting: [] });
      const v = taskView(id);
      return ok(m.id, modern ? v : { task: v });
    }
    case "env":
      return ok(m.id, text(Object.keys(process.env).filter((n) => n.startsWith("IDEMKEY_")).sort().join(",")));
    case "huge":
      return ok(m.id, text("x".repeat(Number(process.env.HUGE ?? 1024))));
    case "peek":
      if (!peekWrite) return ok(m.id, text("peeked"));
  }
  count(m);
  return ok(m.id, text(`${name} done`));
}

function handle(m) {
  if (m.id !== undefined && m.method === undefined) {
    // The client's answer to our elicitation.
    const c = elicitations.get(m.id);
    if (!c) return;
    elicitations.delete(m.id);
    if (m.result?.action === "accept") {
      count(c);
      return ok(c.id, text("asked and done"));
    }
    return ok(c.id, text("not done: " + (m.result?.action ?? "error")));
  }
  switch (m.method) {
    case "initialize":
      return ok(m.id, { protocolVersion: m.params.protocolVersion, capabilities: { tools: { listChanged: true } }, serverInfo: { name: "shapes", version: "1" } });
    case "ping":
      return ok(m.id, {});
    case "tools/list":
      return ok(m.id, tools(m.params?.cursor));
    case "tools/call":
      return call(m);
    case "resources/read":
      held.push(m);
      return;
    case "test/release":
      for (const h of held) ok(h.id, { contents: [{ uri: h.params.uri, text: "held" }] });
      held = [];
      return;
    case "test/flip":
      peekWrite = true;
      return write({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
    case "tasks/get":
    case "tasks/result":
    case "tasks/cancel": {
      const id = m.params.taskId;
      const t = tasks.get(id);
      if (!t) return write({ jsonrpc: "2.0", id: m.id, error: { code: -32602, message: `Task not found: ${id}` } });
      if (m.method === "tasks/cancel" && t.status === "working") settle(id, "cancelled");
      if (m.method === "tasks/get") advance(id);
      if (m.method === "tasks/result") {
        if (t.status === "working") return t.waiting.push(m); // tasks/result blocks until the task ends
        return taskResult(m, id);
      }
      return ok(m.id, taskView(id));
    }
  }
  if (m.id !== undefined) write({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "Method not found" } });
}

createInterface({ input: process.stdin, crlfDelay: Infinity }).on("line", (line) => {
  let m;
  try { m = JSON.parse(line); } catch {
    return write({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } });
  }
  if (Array.isArray(m)) {
    for (const e of m) handle(e);
    return;
  }
  handle(m);
});
