// sdk.mjs: load the MCP TypeScript SDK and zod from testdata/npm/mcp, where
// scripts/services.sh installs them (npm ci), whatever directory a script
// runs from.
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const require = createRequire(new URL("../npm/mcp/package.json", import.meta.url));

export async function load(spec) {
  return import(pathToFileURL(require.resolve(spec)).href);
}

// The path of a package's bin script (for a server started as a child).
export function bin(pkg, file) {
  return require.resolve(`${pkg}/${file}`);
}
