// The reference harness's key derivation, copied verbatim from the design
// this project implements (../shared/seed/000_17ffbec64777f396.txt), wrapped
// in a small command line for differential tests and benchmarks.
//
//   node scripts/refharness.js key TASK TOOL FILE   print the key of FILE's args
//   node scripts/refharness.js lines                stdin: {"task","tool","text"} per line,
//                                                   text = the raw args document;
//                                                   stdout: {"key","canonical":HEX} or {"error"}
//   node scripts/refharness.js batch                stdin: {"task","tool","args"} per line;
//                                                   stdout: the key per line
//   node scripts/refharness.js jcs                  stdin: {"task","tool","text"} per line;
//                                                   stdout: {"key","canonical":HEX,"args":HEX}
//                                                   or {"error"}, where canonical is the
//                                                   RFC 8785 form of [task,tool,args] and
//                                                   args that of the args alone
//
// The jcs mode is not part of the reference harness: it is an independent
// RFC 8785 serializer (the JavaScript algorithm of RFC 8785 §3.2: sort the
// names of each object by UTF-16 code units, write strings and numbers with
// JSON.stringify), used only to compute the pinned jcs vectors in
// testdata/vectors.jsonl. JSON.parse cannot see duplicate names, so the
// vectors given to it must have none.
"use strict";
const { createHash } = require("node:crypto");
const fs = require("node:fs");
const readline = require("node:readline");

// ---- verbatim from the reference harness ----
const canonical = (v) =>
  JSON.stringify(v, (_, x) =>
    x && typeof x === "object" && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : 1)))
      : x,
  );
const idempotencyKey = (taskId, tool, args) =>
  createHash("sha256").update(canonical([taskId, tool, args])).digest("hex");
// ---- end ----

// RFC 8785, independently of idemkey: values that RFC 8785 (I-JSON) rejects
// are errors rather than silently mapped.
const jcs = (v) => {
  if (typeof v === "number") {
    if (!Number.isFinite(v)) throw new Error("jcs: number outside the double range");
    return JSON.stringify(v);
  }
  if (typeof v === "string") {
    if (/\p{Surrogate}/u.test(v)) throw new Error("jcs: lone surrogate");
    return JSON.stringify(v);
  }
  if (v === null || typeof v === "boolean") return JSON.stringify(v);
  if (Array.isArray(v)) return "[" + v.map(jcs).join(",") + "]";
  return "{" + Object.keys(v).sort().map((k) => jcs(k) + ":" + jcs(v[k])).join(",") + "}";
};

const [mode, ...rest] = process.argv.slice(2);
if (mode === "key") {
  const [task, tool, file] = rest;
  const args = JSON.parse(fs.readFileSync(file, "utf8"));
  process.stdout.write(idempotencyKey(task, tool, args) + "\n");
} else if (mode === "lines" || mode === "batch" || mode === "jcs") {
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  const out = [];
  const flush = () => { if (out.length) { process.stdout.write(out.join("")); out.length = 0; } };
  rl.on("line", (line) => {
    if (line === "") return;
    const rec = JSON.parse(line);
    if (mode === "batch") {
      out.push(idempotencyKey(rec.task, rec.tool, rec.args) + "\n");
    } else if (mode === "jcs") {
      try {
        const args = JSON.parse(rec.text);
        const text = jcs([rec.task, rec.tool, args]);
        out.push(JSON.stringify({
          key: createHash("sha256").update(text).digest("hex"),
          canonical: Buffer.from(text, "utf8").toString("hex"),
          args: Buffer.from(jcs(args), "utf8").toString("hex"),
        }) + "\n");
      } catch (e) {
        out.push(JSON.stringify({ error: String(e && e.message) }) + "\n");
      }
    } else {
      try {
        const args = JSON.parse(rec.text);
        const text = canonical([rec.task, rec.tool, args]);
        out.push(JSON.stringify({
          key: idempotencyKey(rec.task, rec.tool, args),
          canonical: Buffer.from(text, "utf8").toString("hex"),
        }) + "\n");
      } catch (e) {
        out.push(JSON.stringify({ error: String(e && e.message) }) + "\n");
      }
    }
    if (out.length >= 1024) flush();
  });
  rl.on("close", flush);
} else {
  process.stderr.write("usage: refharness.js key TASK TOOL FILE | lines | batch | jcs\n");
  process.exit(2);
}
