// The key of the canonical text followed by a newline (as echo "$text" | sha256sum).
const { serve, sortedReplacer, sha256 } = require("./_serve.js");
serve((task, tool, args) => JSON.stringify([task, tool, args], sortedReplacer((a, b) => (a < b ? -1 : 1))), (t) => sha256(t + "\n"));
