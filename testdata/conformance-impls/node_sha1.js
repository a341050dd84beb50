// The right text, but hashed with SHA-1.
const { serve, sortedReplacer } = require("./_serve.js");
const { createHash } = require("node:crypto");
serve((task, tool, args) => JSON.stringify([task, tool, args], sortedReplacer((a, b) => (a < b ? -1 : 1))),
  (t) => createHash("sha1").update(t).digest("hex"));
