// The reference harness as an implementation under test for `idemkey conform`:
//
//   idemkey conform -- node scripts/conformance/harness.js
//   idemkey conform --output canonical -- node scripts/conformance/harness.js canonical
//
// One request a line on stdin, {"id","task","tool","args_text"} (the
// arguments' exact text, parsed with JSON.parse); one answer a line
// on stdout: the key (or the canonical text), or an empty line for a call
// the harness rejects. canonical and idempotencyKey are the design's, verbatim.
"use strict";
const { createHash } = require("node:crypto");
const readline = require("node:readline");

const canonical = (v) =>
  JSON.stringify(v, (_, x) =>
    x && typeof x === "object" && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : 1)))
      : x,
  );
const idempotencyKey = (taskId, tool, args) =>
  createHash("sha256").update(canonical([taskId, tool, args])).digest("hex");

const output = process.argv[2] || "key";
readline.createInterface({ input: process.stdin, crlfDelay: Infinity }).on("line", (line) => {
  let answer = "";
  try {
    const { task, tool, args_text } = JSON.parse(line);
    const args = JSON.parse(args_text);
    answer = output === "canonical" ? canonical([task, tool, args]) : idempotencyKey(task, tool, args);
  } catch (e) {} // rejected: an empty line
  process.stdout.write(answer + "\n");
});
