// The protocol of `idemkey conform` for the Node implementations here: one
// request a line on stdin ({"id","task","tool","args_text"}: the arguments'
// exact text, parsed here with JSON.parse), one answer a line on stdout (the key, or with the
// argument "canonical" the text; an empty line for a rejection).
// serve(text, hash) takes a function of (task, tool, args) returning the
// canonical text, and optionally the function from that text to the key.
"use strict";
const { createHash } = require("node:crypto");
const readline = require("node:readline");

const sha256 = (s) => createHash("sha256").update(s).digest("hex");

exports.sortedReplacer = (cmp) => (_, x) =>
  x && typeof x === "object" && !Array.isArray(x)
    ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => cmp(a, b)))
    : x;

exports.serve = (text, hash = sha256) => {
  const output = process.argv[2] || "key";
  readline.createInterface({ input: process.stdin, crlfDelay: Infinity }).on("line", (line) => {
    let answer = "";
    try {
      const { task, tool, args_text } = JSON.parse(line);
      const args = JSON.parse(args_text);
      const t = text(task, tool, args);
      answer = output === "canonical" ? t : hash(t);
    } catch (e) {}
    process.stdout.write(answer + "\n");
  });
};
exports.sha256 = sha256;
