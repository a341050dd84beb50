// The right text, but the digest printed in base64.
const { serve, sortedReplacer, sha256 } = require("./_serve.js");
const { createHash } = require("node:crypto");
serve((task, tool, args) => JSON.stringify([task, tool, args], sortedReplacer((a, b) => (a < b ? -1 : 1))),
  (t) => createHash("sha256").update(t).digest("base64"));
