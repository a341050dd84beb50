// bundle.mjs: bundles the modules of the TypeScript SDK and zod that the
// test servers and clients in testdata/mcp load (sdk.mjs's load) into
// node_modules/.idemkey-bundle/, one file per module and shared chunks,
// with manifest.json naming each module's file. scripts/services.sh runs
// it after `npm ci`. Node 20 resolves and loads an ES module graph of a
// few hundred files on every start: the bundle takes a third off a test
// server's start (0.42 to 0.28 CPU-s; bare Node takes 0.12), and the suite
// starts well over a hundred of them.
// The code is the packages' own, as the lock file pins them.
import { build } from "esbuild";
import { rmSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL(".", import.meta.url));
const out = fileURLToPath(new URL("./node_modules/.idemkey-bundle/", import.meta.url));

const modules = [
  "@modelcontextprotocol/sdk/client/index.js",
  "@modelcontextprotocol/sdk/client/stdio.js",
  "@modelcontextprotocol/sdk/server/mcp.js",
  "@modelcontextprotocol/sdk/server/sse.js",
  "@modelcontextprotocol/sdk/server/stdio.js",
  "@modelcontextprotocol/sdk/server/streamableHttp.js",
  "@modelcontextprotocol/sdk/types.js",
  "zod",
];

const file = (spec) => spec.replace(/^@/, "").replace(/\.js$/, "").replace(/[^A-Za-z0-9]+/g, "-");

rmSync(out, { recursive: true, force: true });
await build({
  entryPoints: modules.map((spec) => ({ in: "module:" + spec, out: file(spec) })),
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  outdir: out,
  outExtension: { ".js": ".mjs" },
  logLevel: "warning",
  // CommonJS dependencies (express, ajv) call require: give them Node's.
  banner: { js: 'import { createRequire as idemkeyCreateRequire } from "node:module"; const require = idemkeyCreateRequire(import.meta.url);' },
  plugins: [{
    name: "modules",
    setup(b) {
      b.onResolve({ filter: /^module:/ }, (a) => ({ path: a.path.slice("module:".length), namespace: "module" }));
      b.onLoad({ filter: /.*/, namespace: "module" }, (a) => ({
        contents: `export * from ${JSON.stringify(a.path)};`,
        resolveDir: here,
      }));
    },
  }],
});
writeFileSync(out + "manifest.json", JSON.stringify(Object.fromEntries(modules.map((s) => [s, file(s) + ".mjs"])), null, 2) + "\n");
