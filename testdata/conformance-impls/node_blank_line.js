// The right key, but each followed by an empty line (console.log of a string ending in a newline).
const { serve, sortedReplacer, sha256 } = require("./_serve.js");
serve((task, tool, args) => JSON.stringify([task, tool, args], sortedReplacer((a, b) => (a < b ? -1 : 1))), (t) => sha256(t) + "\n");
