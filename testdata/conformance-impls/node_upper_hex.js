// The reference canonicalization, with \u escapes in upper-case hex (\u001F).
const { serve, sortedReplacer, sha256 } = require("./_serve.js");
serve((task, tool, args) =>
  JSON.stringify([task, tool, args], sortedReplacer((a, b) => (a < b ? -1 : 1))).replace(/\\u[0-9a-f]{4}/g, (m) => "\\u" + m.slice(2).toUpperCase()));
