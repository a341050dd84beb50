// sdk.mjs: load the MCP TypeScript SDK and zod from testdata/npm/mcp, where
// scripts/services.sh installs them (npm ci), whatever directory a script
// runs from.
import { readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import v8 from "node:v8";

// The test servers and clients live for seconds: V8's optimizing compiler,
// which works on the SDK and zod as they load, took a quarter of each
// process's CPU (0.53 s a start, 0.38 s without it), and the suite starts
// over a hundred of them.
v8.setFlagsFromString("--no-opt");

const require = createRequire(new URL("../npm/mcp/package.json", import.meta.url));

// The modules testdata/npm/mcp/bundle.mjs bundled (scripts/services.sh
// builds them after npm ci): a start then reads a few files instead of
// resolving a few hundred. A module not in the bundle, no bundle, or one
// older than the packages installed (an npm install since) is loaded from
// the packages themselves.
const bundleDir = new URL("../npm/mcp/node_modules/.idemkey-bundle/", import.meta.url);
let bundled = {};
try {
  const manifest = new URL("manifest.json", bundleDir);
  if (statSync(manifest).mtimeMs >= statSync(new URL("../.package-lock.json", bundleDir)).mtimeMs) {
    bundled = JSON.parse(readFileSync(manifest, "utf8"));
  }
} catch (e) {
  if (e.code !== "ENOENT") throw e;
}

export async function load(spec) {
  if (Object.hasOwn(bundled, spec)) return import(new URL(bundled[spec], bundleDir).href);
  return import(pathToFileURL(require.resolve(spec)).href);
}

// The path of a package's bin script (for a server started as a child).
export function bin(pkg, file) {
  return require.resolve(`${pkg}/${file}`);
}

// serveStreamableHTTP serves newServer()'s over the SDK's Streamable HTTP
// transport on a free loopback port, /mcp: a session per initialize, 404
// for an unknown session, 400 for anything else without one; JSON answers
// with json. before(req, res, sessions), if given, may answer a request
// itself (it returns true then); onAnswer(res) sees every answer the
// transport writes. The URL goes to $URL_FILE and to stderr, after name.
export async function serveStreamableHTTP(newServer, name, { json = false, before, onAnswer } = {}) {
  const { createServer } = await import("node:http");
  const { randomUUID } = await import("node:crypto");
  const { writeFileSync } = await import("node:fs");
  const { StreamableHTTPServerTransport } = await load("@modelcontextprotocol/sdk/server/streamableHttp.js");
  const sessions = new Map();
  const http = createServer(async (req, res) => {
    if (before && (await before(req, res, sessions))) return;
    let body;
    if (req.method === "POST") {
      const chunks = [];
      for await (const c of req) chunks.push(c);
      try { body = JSON.parse(Buffer.concat(chunks).toString("utf8")); } catch { body = undefined; }
    }
    onAnswer?.(res);
    const sid = req.headers["mcp-session-id"];
    let transport = sid ? sessions.get(sid) : undefined;
    if (!transport) {
      if (sid || req.method !== "POST" || body?.method !== "initialize") {
        res.writeHead(sid ? 404 : 400, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32000, message: "no such session" } }));
        return;
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: json,
        onsessioninitialized: (id) => sessions.set(id, transport),
      });
      transport.onclose = () => { if (transport.sessionId) sessions.delete(transport.sessionId); };
      await newServer().connect(transport);
    }
    await transport.handleRequest(req, res, body);
  });
  http.listen(0, "127.0.0.1", () => {
    const url = `http://127.0.0.1:${http.address().port}/mcp`;
    if (process.env.URL_FILE) writeFileSync(process.env.URL_FILE, url);
    console.error(`${name}: ${url}`);
  });
}
