// npm's canonicalize (RFC 8785) as an implementation under test for
// `idemkey conform --scheme jcs`:
//
//   npm install --prefix scripts/conformance
//   idemkey conform --scheme jcs -- node scripts/conformance/canonicalize.mjs
//   idemkey conform --scheme jcs --output canonical -- node scripts/conformance/canonicalize.mjs canonical
//
// One request a line on stdin, {"id","task","tool","args_text"} (the
// arguments' exact text, parsed with JSON.parse); one answer a line
// on stdout: the key (or the canonical text), or an empty line for a call it
// rejects.
import canonicalize from "canonicalize";
import { createHash } from "node:crypto";
import { createInterface } from "node:readline";

const output = process.argv[2] || "key";
createInterface({ input: process.stdin, crlfDelay: Infinity }).on("line", (line) => {
  let answer = "";
  try {
    const { task, tool, args_text } = JSON.parse(line);
    const args = JSON.parse(args_text);
    const text = canonicalize([task, tool, args]);
    answer = output === "canonical" ? text : createHash("sha256").update(text).digest("hex");
  } catch (e) {} // rejected: an empty line
  process.stdout.write(answer + "\n");
});
